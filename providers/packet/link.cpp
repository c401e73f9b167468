#include "providers/packet/link.hpp"

#include <sched.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "lib/util/log.hpp"
#include "providers/packet/stats.hpp"
#include "transport/connection.hpp"
#include "transport/wire.hpp"

namespace pollfab::providers::packet {
namespace {

std::mutex& registry_mu() {
  static std::mutex m;
  return m;
}
std::map<std::string, std::weak_ptr<Link>>& registry() {
  static std::map<std::string, std::weak_ptr<Link>> r;
  return r;
}

}  // namespace

std::shared_ptr<Link> Link::find(const std::string& key) {
  std::lock_guard<std::mutex> g(registry_mu());
  auto it = registry().find(key);
  return it == registry().end() ? nullptr : it->second.lock();
}

Link::Link(std::string key, const Name& local, std::string prov, std::string label)
    : key_(std::move(key)), local_(local), prov_(std::move(prov)), label_(std::move(label)) {
  rx_.resize(1, nullptr);  // id 0 is never used
}

void Link::select_clock(const std::string& source) {
  const bool want = source == "tsc" || (source == "auto" && util::tsc_invariant());
  const util::TscCalibration* cal = want ? util::tsc_calibration() : nullptr;
  clock_.use_tsc(cal);
  if (cal)
    PF_LOG(prov_.c_str(), Info, Domain, "{}: clock tsc ({:.3f} GHz, calibrated)", label_, cal->ghz);
  else if (source == "tsc")
    PF_LOG(prov_.c_str(), Warn, Domain, "{}: clock tsc unavailable (the counter did not advance); using CLOCK_MONOTONIC", label_);
  else
    PF_LOG(prov_.c_str(), Info, Domain, "{}: clock CLOCK_MONOTONIC ({})", label_,
           source == "auto" ? "no invariant TSC" : "configured");
}

std::shared_ptr<Link> Link::create(const std::string& key, std::unique_ptr<transport::PacketIo> io,
                                   const config::Config& cfg, const Name& local,
                                   const std::string& prov, const std::string& label) {
  std::shared_ptr<Link> l(new Link(key, local, prov, label));
  l->io_inner_ = std::move(io);
  l->io_ = l->io_inner_.get();
  // A library thread that reaches the port (the liveness assist runs progress; the stats
  // socket's thread reads counters) needs the lock whatever the threading level: its remote
  // side, which costs the application's calls no atomic instruction (util::MaybeLock).
  if (cfg.transport.assist_interval_us || cfg.stats.socket) l->lock_.enable_remote();
  l->select_clock(cfg.transport.clock);
  const config::FaultConfig& f = cfg.fault;
  transport::FaultIoConfig fc;
  fc.faults = {f.drop, f.dup, f.reorder, f.corrupt, f.seed};
  fc.period_ns = uint64_t(f.period_ms) * 1'000'000;
  if (fc.faults.any()) {
    l->io_fault_ = std::make_unique<transport::FaultIo>(*l->io_inner_, l->clock_, fc);
    l->io_ = l->io_fault_.get();
    PF_LOG(prov.c_str(), Warn, Domain,
           "fault injection on {}: drop {} dup {} reorder {} corrupt {} seed {}{}", label, f.drop,
           f.dup, f.reorder, f.corrupt, f.seed,
           f.period_ms ? fmt::format(", only in every other period of {} ms", f.period_ms) : "");
  }
  // FI_LOCAL_COMM: packets to this port's own address loop back above the wire.
  l->io_loopback_ = std::make_unique<transport::LoopbackIo>(*l->io_, local.host());
  l->io_ = l->io_loopback_.get();
  {
    std::lock_guard<std::mutex> g(registry_mu());
    registry()[key] = l;
  }
  if (cfg.transport.assist_interval_us) {
    Link* self = l.get();
    l->assist_.start_assist("pollfab-assist",
                            std::chrono::microseconds(cfg.transport.assist_interval_us),
                            [self]() PF_NO_THREAD_SAFETY_ANALYSIS {  // a try-lock in a lambda
                              if (!self->lock_.try_lock_remote()) return false;
                              self->progress_locked();
                              self->lock_.unlock_remote();
                              return true;
                            });
  }
  return l;
}

Link::~Link() {
  {
    std::lock_guard<std::mutex> g(registry_mu());
    auto it = registry().find(key_);
    if (it != registry().end() && it->second.expired()) registry().erase(it);
  }
  assist_.stop();
  if (util::log_enabled(prov_.c_str(), util::LogLevel::Info, util::LogSubsys::Domain)) {
    try {
      stats::Counter c[stats::kMaxIoCounters];
      PF_LOG(prov_.c_str(), Info, Domain, "{}: {} dropped_unknown_ep={} cm_dropped={} cm_resets_tx={} assist_runs={}",
             label_, stats::format_counters(c, io_->counters(c, stats::kMaxIoCounters)),
             drop_unknown_ep_, cm_dropped(), resets_tx_, assist_runs());
    } catch (...) {
    }
  }
  io_ = nullptr;
  io_loopback_.reset();
  io_fault_.reset();  // frees the packets it holds through the provider's layer
  io_inner_.reset();
}

void Link::progress() noexcept {
  util::Guard<util::MaybeLock> g(lock_);
  assist_.note_progress();
  progress_locked();
}

bool Link::progress_locked() noexcept {
  // On the stack (lock_.pass() below lets another thread run a round of its own meanwhile),
  // left uninitialised: rx_burst writes every field of what it returns, and a value-initialised
  // array was 2 KiB of stores on every poll.
  union Burst {
    Burst() noexcept {}
    transport::PacketBuf b[32];
  } burst;
  transport::PacketBuf* bufs = burst.b;
  // What posts queued leaves first; then the receive burst, then the timers: ACKs that are
  // already here must be seen before loss detection decides on their packets (with the timers
  // first, a slow round declared acknowledged packets lost: 5% spurious retransmissions of a
  // 4 KiB stream over udp), and an ACK must not find the packets after it still queued (their
  // send time would be the post's, long past under manual progress: resent before they left).
  for (size_t i = 1; i < rx_.size(); ++i)
    if (rx_[i]) rx_[i]->flush_posted();
  const uint16_t n = io_->rx_burst(bufs, 32);
  // One clock reading per round: the burst's arrival and the receivers' timers (a TSC read is
  // about 13 ns here; the engines no longer read their own).
  const uint64_t rx_ns = clock_.now_ns();
  for (uint16_t i = 0; i < n; ++i) {
    uint16_t ep = 0;
    Receiver* r = nullptr;
    if (transport::wire::peek_dst_ep(bufs[i].data, bufs[i].len, ep) && ep < rx_.size())
      r = rx_[ep];
    if (!r) {
      ++drop_unknown_ep_;
      reset_unknown(bufs[i]);
      io_->free(&bufs[i], 1);
      continue;
    }
    r->on_packet(bufs[i], rx_ns);
    lock_.pass();  // a thread posting work waits one packet, not the whole burst
  }
  io_->service();
  bool busy = n > 0;
  for (size_t i = 1; i < rx_.size(); ++i) {
    if (!rx_[i]) continue;
    rx_[i]->progress(rx_ns);
    busy = busy || rx_[i]->busy();
    lock_.pass();
  }
  return busy;
}

void Link::add_user(Sharing s) noexcept {
  // Setup (fi_domain, fi_listen): no other thread is inside this port's calls yet, or the
  // lock is on already (docs/threading.md).
  if (s == Sharing::Shared || ++users_ > 1) {
    lock_.enable(true);
  } else if (s == Sharing::Threads) {
    lock_.enable_biased();
  }
}

void Link::enable_auto(const config::Config& cfg) {
  lock_.enable(true);  // the thread runs progress beside the application's calls
  util::Guard<util::MaybeLock> g(lock_);  // no progress round runs while the threads change
  if (assist_.auto_mode()) return;
  assist_.stop();
  // progress.cores: one CPU each, round robin over the process's ports; else the CPUs near the
  // port (its NUMA node's, from hwloc: set_near_cpus), else the scheduler's choice.
  static std::atomic<uint32_t> next_cpu{0};
  const std::vector<int> cores = config::parse_cpu_list(cfg.progress.cores);
  std::vector<int> cpus;
  if (!cores.empty()) {
    cpus.push_back(cores[next_cpu.fetch_add(1) % cores.size()]);
  } else {
    // Near the port, within the CPUs this process may use (taskset, a cgroup): never wider.
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    sched_getaffinity(0, sizeof allowed, &allowed);
    for (int c : config::parse_cpu_list(near_cpus_))
      if (c < CPU_SETSIZE && CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  Link* self = this;
  assist_.start_auto("pollfab-progress", *this, uint64_t(cfg.progress.idle_us) * 1000, cpus,
                     [self]() PF_NO_THREAD_SAFETY_ANALYSIS {
    // The application's calls go first: a held lock means it is posting or reading, which
    // counts as activity (poll again soon rather than sleep).
    if (!self->lock_.try_lock()) return true;
    const bool busy = self->progress_locked();
    self->lock_.unlock();
    return busy;
  });
  std::string where = cpus.empty() ? "not pinned" : "";
  for (int c : cpus) where += (where.empty() ? "" : ",") + std::to_string(c);
  PF_LOG(prov_.c_str(), Info, Domain, "{}: automatic progress (cpus {}, idle {} us)", label_,
         where, cfg.progress.idle_us);
}

bool Link::prepare_wait() noexcept {
  util::Guard<util::MaybeLock> g(lock_);
  // Work due now (packets posts queued for the next progress, an ACK owed at once): not safe
  // to sleep. fi_trywait answers -FI_EAGAIN, and the application's next read sends them.
  for (const Receiver* r : rx_)
    if (r && r->next_deadline_ns() == 0) return false;
  if (io_->prepare_wait()) return true;
  // No descriptor to sleep on (dpdk until Rx interrupts): a sleeper on an object's eventfd is
  // still woken by the completions the liveness assist's (or the automatic thread's) progress
  // writes; armed, the assist polls every ProgressThread::kSleeperInterval until the
  // application calls in again. (Blocking calls nap on such a port regardless.)
  // (Nobody else watches for the automatic thread itself: it naps.)
  if (io_->wait_fd() >= 0 || !assist_.running() || assist_.on_this_thread()) return false;
  if (!assist_.auto_mode()) assist_.sleeper_armed();  // poll often until the sleeper wakes
  return true;
}

uint64_t Link::next_deadline_ns() noexcept {
  util::Guard<util::MaybeLock> g(lock_);
  uint64_t d = io_->next_wait_ns();
  for (const Receiver* r : rx_)
    if (r) d = std::min(d, r->next_deadline_ns());
  return d;
}

void Link::reset_unknown(transport::PacketBuf& pkt) noexcept {
  namespace wire = transport::wire;
  wire::Header h;
  if (pkt.len < wire::kHeaderBytes || !wire::is_cm(static_cast<wire::Type>(pkt.data[3])) ||
      !wire::verify(pkt.data, pkt.len) || wire::decode(pkt.data, pkt.len, h) != wire::DecodeError::None ||
      h.type == wire::Type::Reset)
    return;
  // A connection packet for an endpoint id nobody has here: tell the sender at once.
  io_->resolve(pkt.src, reset_route_);
  const transport::CmExt e = transport::decode_cm(pkt.data + wire::kHeaderBytes);
  if (transport::send_cm(*io_, reset_route_, h.dst_ep, 0, transport::PeerAddr{pkt.src, h.src_ep},
                         h.src_epoch, wire::Type::Reset, e.conn_id, 0, nullptr, 0, true))
    ++resets_tx_;
}

uint16_t Link::attach(Receiver* r, uint16_t wanted) {
  util::Guard<util::MaybeLock> g(lock_);
  if (wanted && (wanted >= rx_.size() || !rx_[wanted])) {
    if (wanted >= rx_.size()) rx_.resize(size_t(wanted) + 1, nullptr);
    rx_[wanted] = r;
    return wanted;
  }
  for (size_t i = 1; i < rx_.size(); ++i)
    if (!rx_[i]) {
      rx_[i] = r;
      return static_cast<uint16_t>(i);
    }
  if (rx_.size() > 0xffff) return 0;
  rx_.push_back(r);
  return static_cast<uint16_t>(rx_.size() - 1);
}

void Link::detach(uint16_t ep_id) noexcept {
  util::Guard<util::MaybeLock> g(lock_);
  if (ep_id >= rx_.size() || !rx_[ep_id]) return;
  cm_drops_closed_ += rx_[ep_id]->cm_drops();
  rx_[ep_id] = nullptr;
}

uint64_t Link::cm_dropped() const noexcept {
  uint64_t n = cm_drops_closed_;
  for (const Receiver* r : rx_)
    if (r) n += r->cm_drops();
  return n;
}

bool Link::move(uint16_t from, uint16_t to) {
  if (from == to) return true;
  util::Guard<util::MaybeLock> g(lock_);
  if (!to || (to < rx_.size() && rx_[to]) || from >= rx_.size()) return false;
  if (to >= rx_.size()) rx_.resize(size_t(to) + 1, nullptr);
  rx_[to] = rx_[from];
  rx_[from] = nullptr;
  return true;
}

}  // namespace pollfab::providers::packet
