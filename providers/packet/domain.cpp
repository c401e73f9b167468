#include "providers/packet/domain.hpp"

#include "lib/core/fabric.hpp"
#include "lib/core/ops_domain.hpp"
#include "lib/core/provider.hpp"
#include "lib/util/log.hpp"
#include "providers/packet/endpoint.hpp"
#include "transport/wire.hpp"

namespace pollfab::providers::packet {

TransportDomain::TransportDomain(core::Fabric* fabric, const fi_info* info, void* context,
                                 NameKind kind, const config::Config& cfg)
    : core::Domain(fabric, info, context),
      cfg_(cfg),
      kind_(kind),
      fmt_(kind, info ? info->addr_format : FI_FORMAT_UNSPEC),
      mr_lookup_(mrs_, info && info->domain_attr && core::mr_mode_virt_addr(info->domain_attr->mr_mode)) {
  core::install_domain_ops<TransportDomain>(box_.fid);
  fmt_.set_resolver(this);
  eps_.resize(1, nullptr);  // id 0 is never used
  lock_.enable(true);       // the assist thread may run progress concurrently
}

TransportDomain::~TransportDomain() { release_io(); }  // normally done by teardown()

void TransportDomain::teardown() noexcept { release_io(); }

void TransportDomain::attach_io(std::unique_ptr<transport::PacketIo> io) {
  io_inner_ = std::move(io);
  io_ = io_inner_.get();
  const config::FaultConfig& f = cfg_.fault;
  transport::FaultIoConfig fc;
  fc.faults = {f.drop, f.dup, f.reorder, f.corrupt, f.seed};
  if (fc.faults.any()) {
    io_fault_ = std::make_unique<transport::FaultIo>(*io_inner_, clock_, fc);
    io_ = io_fault_.get();
    const char* prov = fabric()->provider()->name();
    PF_LOG(prov, Warn, Domain, "fault injection on {}: drop {} dup {} reorder {} corrupt {} seed {}",
           name(),
           f.drop, f.dup, f.reorder, f.corrupt, f.seed);
  }
  // FI_LOCAL_COMM: packets to this domain's own address loop back above the wire.
  io_loopback_ = std::make_unique<transport::LoopbackIo>(*io_, local_name(0).host());
  io_ = io_loopback_.get();
  if (cfg_.transport.assist_interval_us)
    assist_.start_assist("pollfab-assist", std::chrono::microseconds(cfg_.transport.assist_interval_us),
                         [this] {
                           if (!lock_.try_lock()) return false;
                           progress_locked();
                           lock_.unlock();
                           return true;
                         });
}

void TransportDomain::release_io() noexcept {
  stats::domain_closing(this);  // before anything of the domain is destroyed
  assist_.stop();
  if (!io_) return;
  const char* prov = fabric()->provider()->name();
  if (util::log_enabled(prov, util::LogLevel::Info, util::LogSubsys::Domain)) {
    try {
      stats::Counter c[stats::kMaxIoCounters];
      PF_LOG(prov, Info, Domain, "{}: {} dropped_unknown_ep={} assist_runs={}",
             name(),
             stats::format_counters(c, io_->counters(c, stats::kMaxIoCounters)),
             drop_unknown_ep_, assist_runs());
    } catch (...) {
    }
  }
  io_ = nullptr;
  io_loopback_.reset();
  io_fault_.reset();  // frees the packets it holds through the provider's layer
  io_inner_.reset();
}

int TransportDomain::open_endpoint(fi_info* info, fid_ep** ep, uint64_t flags, void* context) {
  if (!info->ep_attr) return -FI_EINVAL;
  if (info->ep_attr->type != FI_EP_RDM && info->ep_attr->type != FI_EP_DGRAM)
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

void TransportDomain::progress() noexcept {
  util::Guard<util::MaybeLock> g(lock_);
  assist_.note_progress();
  progress_locked();
}

void TransportDomain::progress_locked() noexcept {
  transport::PacketBuf bufs[32];
  uint16_t n = io_->rx_burst(bufs, 32);
  const uint64_t rx_ns = n ? clock_.now_ns() : 0;  // one clock read per burst, not per packet
  for (uint16_t i = 0; i < n; ++i) {
    uint16_t ep = 0;
    transport::Engine* e = nullptr;
    if (transport::wire::peek_dst_ep(bufs[i].data, bufs[i].len, ep) && ep < eps_.size() && eps_[ep])
      e = eps_[ep]->engine_ptr();
    if (!e) {
      ++drop_unknown_ep_;
      io_->free(&bufs[i], 1);
      continue;
    }
    e->on_packet(bufs[i], rx_ns);
  }
  io_->service();
  for (size_t i = 1; i < eps_.size(); ++i)
    if (eps_[i])
      if (transport::Engine* e = eps_[i]->engine_ptr()) e->progress();
}

uint16_t TransportDomain::attach(TransportEndpoint* ep, uint16_t wanted) {
  util::Guard<util::MaybeLock> g(lock_);
  if (wanted && (wanted >= eps_.size() || !eps_[wanted])) {
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
  util::Guard<util::MaybeLock> g(lock_);
  if (!to || (to < eps_.size() && eps_[to]) || from >= eps_.size()) return false;
  if (to >= eps_.size()) eps_.resize(size_t(to) + 1, nullptr);
  eps_[to] = eps_[from];
  eps_[from] = nullptr;
  return true;
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
  out.assist_runs = assist_runs();
  size_t n_eps;
  {
    util::Guard<util::MaybeLock> g(lock_);
    out.io_count = io_counters(out.io, stats::kMaxIoCounters);
    out.dropped_unknown_ep = drop_unknown_ep_;
    n_eps = eps_.size();
  }
  out.endpoints.reserve(n_eps);
  // One endpoint per lock hold, and memory reserved outside the lock (the application's
  // progress waits on it): copy the peers only if the reservation still covers them.
  uint32_t want = 0;
  int retries = 0;
  for (size_t id = 1;;) {
    stats::EndpointSnapshot e;
    e.peers.reserve(want);
    util::Guard<util::MaybeLock> g(lock_);
    if (id >= eps_.size()) break;
    transport::Engine* en = eps_[id] ? eps_[id]->engine_ptr() : nullptr;
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
