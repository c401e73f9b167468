#include "providers/verbs/rc_domain.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "lib/core/ops_domain.hpp"
#include "lib/util/log.hpp"
#include "lib/util/spinlock.hpp"
#include "providers/verbs/rc_endpoint.hpp"
#include "providers/verbs/rc_mr.hpp"
#include "providers/verbs/rc_srx.hpp"
#include "providers/verbs/rc_wire.hpp"

namespace pollfab::providers::verbs {
namespace {

constexpr const char* kProv = "verbs";

// FI_SOCKADDR_IN names (16 bytes).
class SockaddrInFormat final : public core::AddressFormat {
 public:
  size_t len() const noexcept override { return sizeof(sockaddr_in); }
  bool valid(const void* addr, size_t len) const noexcept override {
    return addr && len >= sizeof(sockaddr_in) &&
           static_cast<const sockaddr_in*>(addr)->sin_family == AF_INET;
  }
  std::string str(const void* addr, size_t len) const override {
    if (!valid(addr, len)) return "fi_sockaddr_in://invalid";
    const auto* a = static_cast<const sockaddr_in*>(addr);
    char ip[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
    return fmt::format("fi_sockaddr_in://{}:{}", ip, ntohs(a->sin_port));
  }
  uint32_t app_format() const noexcept override { return FI_SOCKADDR_IN; }
};

const char* status_text(int prov_errno) noexcept { return wc_status_text(prov_errno); }

}  // namespace

RcDomain::RcDomain(core::Fabric* fabric, const fi_info* info, void* context,
                   std::shared_ptr<CmThread> cm, const PortInfo& port, const config::Config& cfg)
    : core::Domain(fabric, info, context), cm_(std::move(cm)), port_(port), cfg_(cfg.verbs),
      progress_cfg_(cfg.progress) {
  // Progress writes every endpoint's CQ: serialised unless one thread does everything.
  lock_.enable(threading() != FI_THREAD_DOMAIN || auto_progress());
  core::install_domain_ops<RcDomain>(box_.fid);
}

int RcDomain::query_atomic(fi_datatype dt, fi_op op, fi_atomic_attr* attr, uint64_t flags) noexcept {
  if (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC | FI_TAGGED)) return -FI_EBADFLAGS;
  const int kind = (flags & FI_COMPARE_ATOMIC) ? 2 : (flags & FI_FETCH_ATOMIC) ? 1 : 0;
  if (!port_.atomics || device_atomic(kind, dt, op) == DeviceAtomic::None) return -FI_EOPNOTSUPP;
  attr->size = sizeof(uint64_t);
  attr->count = 1;
  return 0;
}

int RcDomain::open(core::Fabric* fabric, fi_info* info, void* context, std::shared_ptr<CmThread> cm,
                   const PortInfo& port, const config::Config& cfg, fid_domain** out) {
  auto* d = new RcDomain(fabric, info, context, std::move(cm), port, cfg);
  if (int r = d->init()) {
    d->close();
    return r;
  }
  *out = d->fid();
  return 0;
}

int RcDomain::init() {
  int n = 0;
  ibv_context** list = rdma_get_devices(&n);
  if (list) {
    for (int i = 0; i < n && !ctx_; ++i)
      if (port_.device == ibv_get_device_name(list[i]->device)) ctx_ = list[i];
    // rdma_free_devices frees the array only: librdmacm keeps each device context open for
    // the life of the process (its ids use them), so ctx_ stays valid.
    rdma_free_devices(list);
  }
  if (!ctx_) {
    PF_LOG(kProv, Warn, Domain, "fi_domain {}: rdma_cm does not list the device", port_.device);
    return -FI_ENODEV;
  }
  ibv_device_attr da{};
  if (ibv_query_device(ctx_, &da) == 0) {
    rd_atomic_ = static_cast<uint8_t>(std::clamp(std::min(da.max_qp_rd_atom, da.max_qp_init_rd_atom), 1, 16));
    max_cqe_ = static_cast<size_t>(std::max(da.max_cqe, 16));
  }
  if (!(pd_ = ibv_alloc_pd(ctx_))) {
    PF_LOG(kProv, Warn, Domain, "fi_domain {}: ibv_alloc_pd: {}", port_.device, strerror(errno));
    return -FI_EIO;
  }
  mr_cache_ = std::make_unique<RcMrCache>(pd_);
  if (!(channel_ = ibv_create_comp_channel(ctx_))) {
    PF_LOG(kProv, Warn, Domain, "fi_domain {}: ibv_create_comp_channel: {}", port_.device,
           strerror(errno));
    return -FI_EIO;
  }
  fcntl(channel_->fd, F_SETFL, fcntl(channel_->fd, F_GETFL) | O_NONBLOCK);
  PF_LOG(kProv, Info, Domain, "fi_domain {}: FI_EP_MSG over RC queue pairs (rdma_cm)", port_.device);
  return 0;
}

void RcDomain::teardown() noexcept {
  auto_.stop();
  if (mr_cache_) {
    const RcMrCache::Stats s = mr_cache_->stats();
    PF_LOG(kProv, Info, Mr, "fi_domain {} closing: registration cache {} hits, {} misses",
           port_.device, s.hits, s.misses);
  }
  mr_cache_.reset();
  if (channel_) ibv_destroy_comp_channel(channel_);
  if (pd_) ibv_dealloc_pd(pd_);
  channel_ = nullptr, pd_ = nullptr;
}

const core::AddressFormat& RcDomain::address_format() const noexcept {
  static const SockaddrInFormat f;
  return f;
}

core::ProvErrnoText RcDomain::prov_errno_text() const noexcept { return &status_text; }

int RcDomain::srx_ctx(fi_rx_attr* attr, fid_ep** rx, void* context) {
  fi_rx_attr a{};
  if (attr) a = *attr;
  else if (info_->rx_attr) a = *info_->rx_attr;
  return RcSrx::open(this, a, context, rx);
}

int RcDomain::open_endpoint(fi_info* info, fid_ep** ep, uint64_t flags, void* context) {
  if (flags) return -FI_EBADFLAGS;
  return RcEndpoint::open(this, info, context, ep);
}

void RcDomain::attach(RcEndpoint* ep) {
  util::Guard<util::MaybeLock> g(lock());
  eps_.push_back(ep);
}

void RcDomain::ensure_auto_progress() {
  if (!auto_progress()) return;
  std::lock_guard<std::mutex> g(auto_mu_);
  if (auto_.running()) return;
  std::vector<int> cpus;
  const std::vector<int> cores = config::parse_cpu_list(progress_cfg_.cores);
  if (!cores.empty()) cpus.push_back(cores.front());
  RcDomain* self = this;
  auto_.start_auto("pollfab-rc", *this, uint64_t(progress_cfg_.idle_us) * 1000, cpus,
                   [self]() PF_NO_THREAD_SAFETY_ANALYSIS {
    // The application's calls go first: a held lock means it is posting.
    if (!self->lock().try_lock()) return true;
    int n = 0;
    for (RcEndpoint* ep : self->eps_) n += ep->poll();
    self->lock().unlock();
    return n > 0;
  });
  PF_LOG(kProv, Info, Domain, "fi_domain {}: automatic progress (idle {} us)", port_.device,
         progress_cfg_.idle_us);
}

void RcDomain::detach(RcEndpoint* ep) noexcept {
  util::Guard<util::MaybeLock> g(lock());
  eps_.erase(std::remove(eps_.begin(), eps_.end(), ep), eps_.end());
}

void RcDomain::progress() noexcept {
  util::Guard<util::MaybeLock> g(lock());
  for (RcEndpoint* ep : eps_) ep->poll();
}

int RcDomain::wait_fd() noexcept { return channel_ ? channel_->fd : -1; }

bool RcDomain::prepare_wait() noexcept {
  util::Guard<util::MaybeLock> g(lock());
  // Acknowledge what woke us (by CQ only: the endpoint may be closing), re-arm, look again.
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  while (ibv_get_cq_event(channel_, &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
  bool idle = true;
  for (RcEndpoint* ep : eps_) {
    if (!ep->arm()) return false;
    if (ep->poll()) idle = false;
  }
  return idle;
}

int RcDomain::mr_reg(const iovec* iov, size_t count, uint64_t access, uint64_t offset,
                     uint64_t key, uint64_t flags, fid_mr** mr, void* context) {
  (void)offset, (void)key;  // FI_MR_VIRT_ADDR and FI_MR_PROV_KEY
  if (count != 1 || !iov) return -FI_EINVAL;
  if (flags) return -FI_EBADFLAGS;
  const uint64_t kAccess = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
                           FI_REMOTE_WRITE;
  if (access & ~kAccess) return -FI_EINVAL;
  RcMrCache::Entry* m = mr_cache_->acquire(iov->iov_base, iov->iov_len, ibv_access_of(access));
  if (!m) {
    const int e = errno;
    PF_LOG(kProv, Warn, Mr, "fi_mr_reg {} bytes at {}: ibv_reg_mr: {}", iov->iov_len,
           iov->iov_base, strerror(e));
    return e == ENOMEM ? -FI_ENOMEM : (e == EFAULT || e == EINVAL || e == EACCES) ? -FI_EFAULT : -FI_EIO;
  }
  try {
    *mr = (new RcMr(this, *iov, access, *mr_cache_, m, context))->fid();
  } catch (...) {
    mr_cache_->release(m);
    throw;
  }
  return 0;
}

}  // namespace pollfab::providers::verbs
