#include "providers/packet/pep.hpp"

#include <cstdlib>
#include <cstring>
#include <random>

#include "lib/core/ep_options.hpp"
#include "lib/core/errors.hpp"
#include "lib/core/info_alloc.hpp"
#include "lib/core/ops_ep.hpp"
#include "lib/core/ops_fid.hpp"
#include "lib/core/provider.hpp"
#include "lib/util/log.hpp"
#include "providers/packet/attr.hpp"

namespace pollfab::providers::packet {

transport::CmConfig cm_config(const config::Config& cfg) noexcept {
  transport::CmConfig c;
  c.timeout_ns = uint64_t(cfg.transport.connect_timeout_ms) * 1'000'000;
  c.checksum = cfg.transport.checksum != "off";  // connection packets: rare, always sealed unless off
  return c;
}

ConnReq::ConnReq(TransportPep* pep, uint64_t request, const transport::PeerAddr& client,
                 uint32_t conn_id)
    : pep_(pep), request_(request), client_(client), conn_id_(conn_id) {
  init_fid(box_, FI_CLASS_CONNREQ, nullptr, &core::ops_fid<ConnReq>);
}

int open_pep(core::Fabric* fabric, fi_info* info, fid_pep** pep, void* context, NameKind kind,
             const config::Config& cfg, LinkOpener open_link) {
  if (!info->ep_attr || info->ep_attr->type != FI_EP_MSG) return -FI_EINVAL;
  if (!NameFormat::supported(info->addr_format)) return -FI_EINVAL;
  *pep = (new TransportPep(fabric, info, context, kind, cfg, std::move(open_link)))->fid();
  return 0;
}

TransportPep::TransportPep(core::Fabric* fabric, const fi_info* info, void* context,
                           NameKind kind, const config::Config& cfg, LinkOpener open_link)
    : fabric_(fabric),
      kind_(kind),
      fmt_(kind, info ? info->addr_format : uint32_t{FI_FORMAT_UNSPEC}),
      cfg_(cfg),
      open_link_(std::move(open_link)) {
  init_fid(box_, FI_CLASS_PEP, context, &core::ops_fid<TransportPep>);
  box_.fid.cm = &core::ops_cm<TransportPep>;
  box_.fid.ops = &core::ops_ep<TransportPep>;
  info_ = core::dupinfo(info);
  if (!info_) throw std::bad_alloc();
  fabric_->ref();
}

TransportPep::~TransportPep() {
  if (info_) core::freeinfo(info_);
}

int TransportPep::close() {
  if (refs()) return -FI_EBUSY;
  if (link_) {
    link_->detach(ep_id_);
    util::Guard<util::MaybeLock> g(link_->lock());
    listener_.reset();
  }
  link_.reset();
  if (eq_) eq_->unref();
  fabric_->unref();
  delete this;
  return 0;
}

int TransportPep::bind(struct fid* bfid, uint64_t flags) {
  if (bfid->fclass != FI_CLASS_EQ || flags) return -FI_EINVAL;
  if (eq_) return -FI_EINVAL;
  eq_ = core::Object::as<core::Eq>(bfid);
  eq_->ref();
  return 0;
}

int TransportPep::listen() {
  if (!eq_) return -FI_ENOEQ;
  if (link_) return -FI_EOPBADSTATE;
  int err = 0;
  std::shared_ptr<Link> link = open_link_(info_, err);
  if (!link) return err ? err : -FI_EIO;
  std::random_device rd;
  const uint32_t epoch = rd() | 1u;
  // Set before attach: a packet may reach on_packet (which frees it through link_) at once.
  link_ = std::move(link);
  link_->add_user(Link::Sharing::Shared);  // the listener progresses from EQ reads, on any thread
  // The id node:service names (kServiceEpId) when free: clients name the pep by address alone.
  const uint16_t id = link_->attach(this, kServiceEpId);
  if (!id) {
    link_.reset();
    return -FI_ENOSPC;
  }
  util::Guard<util::MaybeLock> g(link_->lock());
  listener_ = std::make_unique<transport::CmListener>(link_->io(), link_->clock(), *this,
                                                      cm_config(cfg_), id, epoch);
  ep_id_ = id;
  return 0;
}

int TransportPep::getname(void* addr, size_t* addrlen) {
  Name n;
  if (link_) {
    n = link_->local_name(ep_id_);
  } else if (!info_src_name(info_, kind_, n)) {
    return -FI_EADDRNOTAVAIL;
  } else {
    n.ep_id = kServiceEpId;
  }
  uint8_t bin[kNameBytes];
  n.encode(bin);
  return fmt_.export_to(bin, addr, addrlen);
}

int TransportPep::setname(const void* addr, size_t addrlen) {
  if (link_) return -FI_EOPBADSTATE;  // already listening
  Name n;
  if (!fmt_.decode_app(addr, addrlen, n)) return -FI_EINVAL;
  Name mine;
  if (info_src_name(info_, kind_, mine) && mine.ipv4 && n.ipv4 != mine.ipv4) return -FI_EADDRNOTAVAIL;
  return set_info_names(info_, info_->addr_format, n, nullptr) ? 0 : -FI_ENOMEM;
}

int TransportPep::getopt(int level, int name, void* val, size_t* len) {
  if (level != FI_OPT_ENDPOINT || name != FI_OPT_CM_DATA_SIZE) return -FI_ENOPROTOOPT;
  return core::get_size_option(transport::wire::kMaxCmData, val, len);
}

void TransportPep::on_packet(transport::PacketBuf& pkt, uint64_t) noexcept {
  transport::wire::Header h;
  if (listener_ && transport::wire::verify(pkt.data, pkt.len) &&
      transport::wire::decode(pkt.data, pkt.len, h) == transport::wire::DecodeError::None &&
      transport::wire::is_cm(h.type))
    listener_->on_packet(pkt, h, pkt.data + transport::wire::kHeaderBytes);
  link_io_free(pkt);
}

void TransportPep::link_io_free(transport::PacketBuf& pkt) noexcept {
  // Called from the link's progress: the link is alive (it is calling us).
  Link* l = link_.get();
  if (l) l->io().free(&pkt, 1);
}

void TransportPep::progress(uint64_t /*now_ns*/) noexcept {
  if (listener_) listener_->progress();
}

void TransportPep::on_request(uint64_t request, const transport::PeerAddr& client,
                              uint32_t conn_id, const uint8_t* data, uint16_t len) noexcept {
  try {
    reqs_.push_back(std::make_unique<ConnReq>(this, request, client, conn_id));
    fi_info* info = core::dupinfo(info_);
    if (!info) throw std::bad_alloc();
    info->handle = reqs_.back()->handle();
    const Name src = link_->local_name(ep_id_);
    const Name dest = Name::from_host(kind_, client.host, client.ep_id);
    if (!set_info_names(info, info_->addr_format, src, &dest)) {
      core::freeinfo(info);
      throw std::bad_alloc();
    }
    std::vector<uint8_t> ev(sizeof(fi_eq_cm_entry) + len);
    auto* e = reinterpret_cast<fi_eq_cm_entry*>(ev.data());
    e->fid = &box_.fid.fid;
    e->info = info;
    if (len) std::memcpy(ev.data() + sizeof(fi_eq_cm_entry), data, len);
    eq_->write(FI_CONNREQ, ev.data(), ev.size(), 0);
  } catch (...) {
    // No memory for the event: refuse, so the client learns it at once.
    listener_->reject(request, nullptr, 0);
  }
}

int TransportPep::reject(fid_t handle, const void* param, size_t paramlen) {
  if (!handle || handle->fclass != FI_CLASS_CONNREQ) return -FI_EINVAL;
  if (paramlen > transport::wire::kMaxCmData || (paramlen && !param)) return -FI_EINVAL;
  auto* req = dynamic_cast<ConnReq*>(core::Object::from(handle));  // verbs RC has its own kind
  if (!req || req->pep() != this || !link_) return -FI_EINVAL;
  util::Guard<util::MaybeLock> g(link_->lock());
  const util::Status st = listener_->reject(req->request(), static_cast<const uint8_t*>(param),
                                            static_cast<uint16_t>(paramlen));
  return st == util::Status::Ok ? 0 : (st == util::Status::Invalid ? -FI_EINVAL : -core::fi_errno_of(st));
}

int TransportPep::accepted(const ConnReq& req) noexcept {
  if (!listener_) return -FI_EINVAL;
  return listener_->accepted(req.request()) == util::Status::Ok ? 0 : -FI_EINVAL;
}

}  // namespace pollfab::providers::packet
