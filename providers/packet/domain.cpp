#include "providers/packet/domain.hpp"

#include "lib/core/fabric.hpp"
#include "lib/core/ops_domain.hpp"
#include "lib/core/provider.hpp"
#include "lib/util/log.hpp"
#include "providers/packet/endpoint.hpp"
#include "providers/packet/srx.hpp"
#include "transport/wire.hpp"

namespace pollfab::providers::packet {

TransportDomain::TransportDomain(core::Fabric* fabric, const fi_info* info, void* context,
                                 NameKind kind, const config::Config& cfg,
                                 std::shared_ptr<Link> link)
    : core::Domain(fabric, info, context),
      cfg_(cfg),
      kind_(kind),
      fmt_(kind, info ? info->addr_format : uint32_t{FI_FORMAT_UNSPEC}),
      link_(std::move(link)),
      mr_lookup_(mrs_, info && info->domain_attr && core::mr_mode_virt_addr(info->domain_attr->mr_mode)) {
  core::install_domain_ops<TransportDomain>(box_.fid);
  fmt_.set_resolver(this);
  share_lock(link_->lock());  // the port's endpoints (of every domain) progress together
  // Threads other than the application's one (docs/threading.md): other threads of it at
  // every level but FI_THREAD_DOMAIN; the progress thread under FI_PROGRESS_AUTO.
  link_->add_user(auto_progress()                       ? Link::Sharing::Shared
                  : threading() != FI_THREAD_DOMAIN     ? Link::Sharing::Threads
                                                        : Link::Sharing::One);
  if (auto_progress()) link_->enable_auto(cfg_);  // FI_PROGRESS_AUTO: the port's thread
}

TransportDomain::~TransportDomain() { teardown(); }  // normally done by close()

void TransportDomain::teardown() noexcept {
  stats::domain_closing(this);  // before anything of the domain is destroyed
  if (link_) {
    share_lock(lock_);
    link_.reset();  // the last holder closes the port
  }
}

int TransportDomain::open_endpoint(fi_info* info, fid_ep** ep, uint64_t flags, void* context) {
  if (!info->ep_attr) return -FI_EINVAL;
  if (info->ep_attr->type != FI_EP_RDM && info->ep_attr->type != FI_EP_DGRAM &&
      info->ep_attr->type != FI_EP_MSG)
    return -FI_ENOPROTOOPT;
  // Attributes the endpoint preallocates from: bounded, so a bad fi_info cannot ask for
  // gigabytes (tx/rx queue entries, bytes per inject slot).
  if (info->tx_attr && (info->tx_attr->iov_limit > transport::kMaxIov ||
                        info->tx_attr->size > kMaxQueueEntries ||
                        info->tx_attr->inject_size > kMaxInjectBytes))
    return -FI_EINVAL;
  if (info->rx_attr && (info->rx_attr->iov_limit > transport::kMaxIov ||
                        info->rx_attr->size > kMaxQueueEntries))
    return -FI_EINVAL;
  auto* e = new TransportEndpoint(this, info, context);
  if (!e->ep_id()) {
    e->close();
    return -FI_ENOSPC;
  }
  *ep = e->fid();
  return 0;
}

int TransportDomain::srx_ctx(fi_rx_attr* attr, fid_ep** rx, void* context) {
  if (!rx) return -FI_EINVAL;
  fi_rx_attr a{};
  if (attr) a = *attr;
  else if (info_->rx_attr) a = *info_->rx_attr;
  if (a.iov_limit > transport::kMaxIov || a.size > kMaxQueueEntries) return -FI_EINVAL;
  if (!a.size) a.size = info_->rx_attr && info_->rx_attr->size ? info_->rx_attr->size : 1024;
  if (!a.iov_limit) a.iov_limit = transport::kMaxIov;
  auto* srx = new TransportSrx(this, a, context);
  *rx = srx->fid();
  return 0;
}

void TransportDomain::render_json(std::string& out) {
  stats::DomainSnapshot d;
  snapshot(d);
  stats::render_json(d, out);
}

void TransportDomain::snapshot(stats::DomainSnapshot& out) {
  out.provider = fabric()->provider()->name();
  out.domain = name();
  out.kind = kind_;
  out.assist_runs = link_->assist_runs();
  size_t n_eps;
  {
    util::RemoteGuard g(link_->lock());  // the stats socket's thread
    out.io_count = link_->io_counters(out.io, stats::kMaxIoCounters);
    out.dropped_unknown_ep = link_->dropped_unknown_ep();
    out.cm_dropped = link_->cm_dropped();
    out.cm_resets_tx = link_->cm_resets_tx();
    n_eps = link_->receiver_slots();
  }
  out.endpoints.reserve(n_eps);
  // One endpoint per lock hold, and memory reserved outside the lock (the application's
  // progress waits on it): copy the peers only if the reservation still covers them.
  uint32_t want = 0;
  int retries = 0;
  for (size_t id = 1;;) {
    stats::EndpointSnapshot e;
    e.peers.reserve(want);
    util::RemoteGuard g(link_->lock());  // the stats socket's thread
    if (id >= link_->receiver_slots()) break;
    Receiver* r = link_->receiver(static_cast<uint16_t>(id));
    TransportEndpoint* ep = r ? r->endpoint() : nullptr;
    transport::Engine* en = ep && ep->domain() == this ? ep->engine_ptr() : nullptr;
    if (!en) {
      ++id;
      continue;
    }
    const uint32_t np = en->peer_count();
    if (np > e.peers.capacity() && retries++ < 2) {
      want = np + 16;  // retry with room for them (and a few more)
      continue;
    }
    e.id = static_cast<uint16_t>(id);
    e.reliable = en->config().reliable;
    e.name = local_name(e.id);
    e.engine = en->stats();
    for (uint32_t i = 0; i < np; ++i) e.peers.push_back(en->peer_stats(i));
    out.endpoints.push_back(std::move(e));
    ++id;
    retries = 0;  // want stays: the next endpoint likely has as many peers
  }
}

}  // namespace pollfab::providers::packet
