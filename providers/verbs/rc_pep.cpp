#include "providers/verbs/rc_pep.hpp"

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "lib/core/ep_options.hpp"
#include "lib/core/info_alloc.hpp"
#include "lib/core/ops_ep.hpp"
#include "lib/core/ops_fid.hpp"
#include "lib/util/log.hpp"
#include "providers/verbs/rc_wire.hpp"

namespace pollfab::providers::verbs {
namespace {

constexpr const char* kProv = "verbs";
constexpr int kBacklog = 64;

}  // namespace

RcConnReq::RcConnReq(RcPep* pep, rdma_cm_id* id, uint8_t initiator_depth,
                     uint8_t responder_resources)
    : pep_(pep), id_(id), initiator_depth_(initiator_depth),
      responder_resources_(responder_resources) {
  init_fid(box_, FI_CLASS_CONNREQ, nullptr, &core::ops_fid<RcConnReq>);
}

RcPep::RcPep(core::Fabric* fabric, const fi_info* info, void* context, std::shared_ptr<CmThread> cm)
    : fabric_(fabric), cm_(std::move(cm)) {
  init_fid(box_, FI_CLASS_PEP, context, &core::ops_fid<RcPep>);
  box_.fid.cm = &core::ops_cm<RcPep>;
  box_.fid.ops = &core::ops_ep<RcPep>;
  info_ = core::dupinfo(info);
  if (!info_) throw std::bad_alloc();
  fabric_->ref();
}

RcPep::~RcPep() {
  if (info_) core::freeinfo(info_);
  fabric_->unref();
}

int RcPep::open(core::Fabric* fabric, fi_info* info, void* context, std::shared_ptr<CmThread> cm,
                fid_pep** pep) {
  if (!info->ep_attr || info->ep_attr->type != FI_EP_MSG) return -FI_EINVAL;
  if (info->addr_format != FI_SOCKADDR_IN) return -FI_EINVAL;
  auto* p = new RcPep(fabric, info, context, std::move(cm));
  sockaddr_in any{};
  any.sin_family = AF_INET;
  if (int r = p->bind_id(info->src_addr ? info->src_addr : &any)) {
    p->close();
    return r;
  }
  *pep = p->fid();
  return 0;
}

int RcPep::bind_id(const void* addr) {
  sockaddr_in a{};
  std::memcpy(&a, addr, sizeof a);
  if (a.sin_family != AF_INET) return -FI_EINVAL;
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(cm_->channel(), &id, static_cast<CmHandler*>(this), RDMA_PS_TCP) != 0) {
    PF_LOG(kProv, Warn, EpCtrl, "fi_passive_ep: rdma_create_id: {}", strerror(errno));
    return -FI_EIO;
  }
  if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&a)) != 0) {
    const int e = errno;
    PF_LOG(kProv, Warn, EpCtrl, "fi_passive_ep: rdma_bind_addr {}:{}: {}", inet_ntoa(a.sin_addr),
           ntohs(a.sin_port), strerror(e));
    rdma_destroy_id(id);
    return e == EADDRINUSE ? -FI_EADDRINUSE : e == EADDRNOTAVAIL || e == ENODEV ? -FI_EADDRNOTAVAIL : -FI_EIO;
  }
  if (id_) rdma_destroy_id(id_);
  id_ = id;
  return 0;
}

int RcPep::close() {
  if (refs()) return -FI_EBUSY;
  // After rdma_destroy_id no event of the listener is being handled or will come.
  if (id_) rdma_destroy_id(id_);
  id_ = nullptr;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& r : reqs_)
      if (rdma_cm_id* id = r->take()) {
        rdma_reject(id, nullptr, 0);
        rdma_destroy_id(id);
      }
    reqs_.clear();
  }
  if (eq_) eq_->unref();
  delete this;
  return 0;
}

int RcPep::bind(struct fid* bfid, uint64_t flags) {
  if (!bfid || bfid->fclass != FI_CLASS_EQ || flags) return -FI_EINVAL;
  if (eq_) return -FI_EINVAL;
  eq_ = core::Object::as<core::Eq>(bfid);
  eq_->ref();
  return 0;
}

int RcPep::listen() {
  if (!eq_) return -FI_ENOEQ;
  if (listening_) return -FI_EOPBADSTATE;
  if (rdma_listen(id_, kBacklog) != 0) {
    const int e = errno;
    PF_LOG(kProv, Warn, EpCtrl, "fi_listen: rdma_listen: {}", strerror(e));
    return e == EADDRINUSE ? -FI_EADDRINUSE : -FI_EIO;
  }
  listening_ = true;
  return 0;
}

int RcPep::getname(void* addr, size_t* addrlen) {
  const size_t need = sizeof(sockaddr_in);
  const bool fits = addr && *addrlen >= need;
  if (fits) std::memcpy(addr, rdma_get_local_addr(id_), need);
  *addrlen = need;
  return fits ? 0 : -FI_ETOOSMALL;
}

int RcPep::setname(const void* addr, size_t addrlen) {
  if (listening_) return -FI_EOPBADSTATE;
  if (addrlen < sizeof(sockaddr_in)) return -FI_EINVAL;
  return bind_id(addr);
}

int RcPep::getopt(int level, int name, void* val, size_t* len) {
  if (level != FI_OPT_ENDPOINT || name != FI_OPT_CM_DATA_SIZE) return -FI_ENOPROTOOPT;
  return core::get_size_option(kRcMaxCmData, val, len);
}

int RcPep::reject(fid_t handle, const void* param, size_t paramlen) {
  if (!handle || handle->fclass != FI_CLASS_CONNREQ) return -FI_EINVAL;
  if (paramlen > kRcMaxCmData || (paramlen && !param)) return -FI_EINVAL;
  auto* req = dynamic_cast<RcConnReq*>(core::Object::from(handle));
  if (!req || req->pep() != this) return -FI_EINVAL;
  rdma_cm_id* id = req->take();
  if (!id) return -FI_EINVAL;  // answered already
  taken(req);
  uint8_t priv[kCmPrivateBytes];
  const size_t n = cm_data_frame(param, paramlen, priv);
  const int r = rdma_reject(id, priv, static_cast<uint8_t>(n));
  if (r != 0) PF_LOG(kProv, Warn, EpCtrl, "fi_reject: rdma_reject: {}", strerror(errno));
  rdma_destroy_id(id);
  return r == 0 ? 0 : -FI_EIO;
}

void RcPep::taken(RcConnReq*) noexcept {
  std::lock_guard<std::mutex> g(mu_);
  trim_answered();
}

void RcPep::trim_answered() noexcept {
  size_t answered = 0;
  for (const auto& r : reqs_) answered += r->id() == nullptr;
  for (auto it = reqs_.begin(); answered > kAnsweredKept && it != reqs_.end();) {
    if ((*it)->id() == nullptr) {
      it = reqs_.erase(it);
      --answered;
    } else {
      ++it;
    }
  }
}

// On the CM thread: a connection request (or an event of a request nobody took yet).
void RcPep::on_cm_event(rdma_cm_event& ev) noexcept {
  if (ev.event != RDMA_CM_EVENT_CONNECT_REQUEST) return;
  rdma_cm_id* id = ev.id;
  const uint8_t* data = nullptr;
  const size_t len = cm_data_parse(ev.param.conn.private_data, ev.param.conn.private_data_len, &data);
  fi_info* info = nullptr;
  try {
    RcConnReq* req;
    {
      std::lock_guard<std::mutex> g(mu_);
      trim_answered();
      reqs_.push_back(std::make_unique<RcConnReq>(this, id, ev.param.conn.initiator_depth,
                                                  ev.param.conn.responder_resources));
      req = reqs_.back().get();
    }
    id->context = nullptr;  // until an endpoint takes it, its events go nowhere
    info = core::dupinfo(info_);
    if (!info) throw std::bad_alloc();
    info->handle = req->handle();
    std::free(info->src_addr);
    std::free(info->dest_addr);
    info->src_addr = info->dest_addr = nullptr;
    info->src_addrlen = info->dest_addrlen = 0;
    info->src_addr = std::malloc(sizeof(sockaddr_in));
    info->dest_addr = std::malloc(sizeof(sockaddr_in));
    if (!info->src_addr || !info->dest_addr) throw std::bad_alloc();
    std::memcpy(info->src_addr, rdma_get_local_addr(id), sizeof(sockaddr_in));
    std::memcpy(info->dest_addr, rdma_get_peer_addr(id), sizeof(sockaddr_in));
    info->src_addrlen = info->dest_addrlen = sizeof(sockaddr_in);
    // The device the request came in on (a pep bound to INADDR_ANY listens on every one).
    if (id->verbs && info->domain_attr) {
      char* name = strdup(ibv_get_device_name(id->verbs->device));
      if (!name) throw std::bad_alloc();
      std::free(info->domain_attr->name);
      info->domain_attr->name = name;
    }
    std::vector<uint8_t> buf(sizeof(fi_eq_cm_entry) + len);
    auto* e = reinterpret_cast<fi_eq_cm_entry*>(buf.data());
    e->fid = &box_.fid.fid;
    e->info = info;
    if (len) std::memcpy(buf.data() + sizeof(fi_eq_cm_entry), data, len);
    eq_->write(FI_CONNREQ, buf.data(), buf.size(), 0);
  } catch (...) {
    // No memory for the event: refuse, so the client learns it at once. The request stays in
    // the list (if it got there) with its id taken.
    if (info) core::freeinfo(info);
    std::lock_guard<std::mutex> g(mu_);
    for (auto& r : reqs_)
      if (r->id() == id) r->take();
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
  }
}

}  // namespace pollfab::providers::verbs
