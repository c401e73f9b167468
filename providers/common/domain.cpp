#include "providers/common/domain.hpp"

#include "providers/common/endpoint.hpp"
#include "transport/wire.hpp"

namespace pollfab::providers {

TransportDomain::TransportDomain(core::Fabric* fabric, const fi_info* info, void* context,
                                 NameKind kind, const config::Config& cfg)
    : core::Domain(fabric, info, context), cfg_(cfg), kind_(kind), fmt_(kind) {
  eps_.resize(1, nullptr);  // id 0 is never used
}

TransportDomain::~TransportDomain() = default;

int TransportDomain::open_endpoint(fi_info* info, fid_ep** ep, uint64_t flags, void* context) {
  if (!info->ep_attr) return -FI_EINVAL;
  if (info->ep_attr->type != FI_EP_RDM && info->ep_attr->type != FI_EP_DGRAM)
    return -FI_ENOPROTOOPT;
  if (info->tx_attr && info->tx_attr->iov_limit > transport::kMaxIov) return -FI_EINVAL;
  auto* e = new TransportEndpoint(this, info, context);
  if (!e->ep_id()) {
    e->close();
    return -FI_ENOSPC;
  }
  *ep = e->fid();
  return 0;
}

void TransportDomain::progress() noexcept {
  util::Guard<util::MaybeLock> g(lock_);
  transport::PacketBuf bufs[32];
  uint16_t n = rx_burst(bufs, 32);
  for (uint16_t i = 0; i < n; ++i) {
    uint16_t ep = 0;
    if (!transport::wire::peek_dst_ep(bufs[i].data, bufs[i].len, ep) || ep >= eps_.size() ||
        !eps_[ep]) {
      ++drop_unknown_ep_;
      io().free(&bufs[i], 1);
      continue;
    }
    eps_[ep]->engine().on_packet(bufs[i]);
  }
  service();
  for (size_t i = 1; i < eps_.size(); ++i)
    if (eps_[i]) eps_[i]->engine().progress();
}

uint16_t TransportDomain::attach(TransportEndpoint* ep, uint16_t wanted) {
  util::Guard<util::MaybeLock> g(lock_);
  if (wanted) {
    if (wanted < eps_.size() && eps_[wanted]) return 0;
    if (wanted >= eps_.size()) eps_.resize(size_t(wanted) + 1, nullptr);
    eps_[wanted] = ep;
    return wanted;
  }
  for (size_t i = 1; i < eps_.size(); ++i)
    if (!eps_[i]) {
      eps_[i] = ep;
      return static_cast<uint16_t>(i);
    }
  if (eps_.size() > 0xffff) return 0;
  eps_.push_back(ep);
  return static_cast<uint16_t>(eps_.size() - 1);
}

void TransportDomain::detach(uint16_t ep_id) noexcept {
  util::Guard<util::MaybeLock> g(lock_);
  if (ep_id < eps_.size()) eps_[ep_id] = nullptr;
}

bool TransportDomain::ep_id_free(uint16_t ep_id) const noexcept {
  return ep_id && (ep_id >= eps_.size() || !eps_[ep_id]);
}

bool TransportDomain::move(uint16_t from, uint16_t to) {
  if (from == to) return true;
  if (!ep_id_free(to)) return false;
  TransportEndpoint* ep = eps_[from];
  if (attach(ep, to) != to) return false;
  detach(from);
  return true;
}

}  // namespace pollfab::providers
