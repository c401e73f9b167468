// Link: one port's packet I/O shared by every object of the process that sends and receives
// on it: the domains opened on the port (a second fi_domain on the same port, the domain of an
// endpoint accepted on a passive endpoint) and the passive endpoints listening there. It owns
// the provider's PacketIo (with the fault layer when the config asks for faults and the
// loopback layer for FI_LOCAL_COMM), the table of receivers by endpoint id (endpoints and
// listeners; the header's dst_ep selects one), the lock that serialises them (data calls,
// progress, the liveness assist thread), the clock, and the liveness assist thread.
//
// A port is identified by a key the provider chooses ("dpdk:<device>", "udp:<ip>:<port>");
// Link::find returns the open Link of a key while anything holds it (the registry keeps weak
// references). A DPDK port can be opened once per process, so its key names the device alone.
//
// Progress (FI_PROGRESS_MANUAL): progress() sends what posts queued, receives one burst,
// hands each packet to the receiver of its dst_ep (unknown ids are dropped and counted; a
// connection packet for one is answered with RESET, so a connect to a closed listener fails at
// once), runs the I/O layer's service, then every receiver's timers and transmit queues (ACKs
// before loss timers).
// Thread-safety: find/create/~Link are MT-safe (the registry's mutex); everything else runs
// under lock() (progress takes it; callers of the *_locked members and of io() hold it).
// The liveness assist and the stats socket take the lock's remote side (util::MaybeLock: an
// asymmetric handshake that costs the application's calls no atomic instruction); its Spinlock
// is on (docs/threading.md) unless one FI_THREAD_DOMAIN domain under manual progress is the
// port's only user: add_user, enable_auto. A progress round lets waiting threads in
// between packets (util::Spinlock::pass), so a post waits for one packet, not a burst.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "lib/config/config.hpp"
#include "lib/core/progress_thread.hpp"
#include "lib/util/spinlock.hpp"
#include "lib/util/status.hpp"
#include "providers/packet/name.hpp"
#include "transport/clock.hpp"
#include "transport/fault_io.hpp"
#include "transport/loopback_io.hpp"
#include "transport/packet_io.hpp"

namespace pollfab::providers::packet {

class TransportEndpoint;

// What the link hands packets to: an endpoint's engine, a passive endpoint's listener.
class Receiver {
 public:
  virtual ~Receiver() = default;
  // A packet whose header names this receiver's endpoint id; ownership passes (free or keep).
  virtual void on_packet(transport::PacketBuf& pkt, uint64_t rx_ns) noexcept = 0;
  // Timers and transmit queues (called from every progress, after its receive burst); now_ns:
  // the round's clock reading.
  virtual void progress(uint64_t now_ns) noexcept = 0;
  // Sends what posts queued since the last round (called from every progress, before its
  // receive burst): an ACK in the burst then never finds its successors unsent, which loss
  // detection would take for packets sent at post time and long overdue.
  virtual void flush_posted() noexcept {}
  // The endpoint behind this receiver, if it is one (stats snapshots).
  virtual TransportEndpoint* endpoint() noexcept { return nullptr; }
  // Connection packets it dropped (malformed, stale, another connection's; under the lock).
  virtual uint64_t cm_drops() const noexcept { return 0; }
  // When its progress() has timer work (monotonic ns; UINT64_MAX: none; under the lock).
  virtual uint64_t next_deadline_ns() const noexcept { return UINT64_MAX; }
  // True while it has work in flight (sends queued or unacknowledged; under the lock): an
  // automatic-progress thread keeps polling.
  virtual bool busy() const noexcept { return false; }
};

class Link final : public core::Progressable {
 public:
  // The open link of key, or null.
  static std::shared_ptr<Link> find(const std::string& key);
  // Opens a link over the provider's io (taken over): wraps it in the fault layer when
  // cfg.fault asks for faults and the loopback layer (local = the port's name, endpoint id 0),
  // registers it under key and starts the liveness assist (transport.assist_interval_us).
  // label: the provider and domain names for logs. Throws std::bad_alloc.
  static std::shared_ptr<Link> create(const std::string& key, std::unique_ptr<transport::PacketIo> io,
                                      const config::Config& cfg, const Name& local,
                                      const std::string& prov, const std::string& label);
  ~Link() override;
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // The I/O the engines use (the loopback layer); the provider's own layer under it.
  transport::PacketIo& io() noexcept { return *io_; }
  transport::PacketIo& provider_io() noexcept { return *io_inner_; }
  transport::Clock& clock() noexcept { return clock_; }
  util::MaybeLock& lock() noexcept PF_RETURN_CAPABILITY(lock_) { return lock_; }
  // How a new user of the port lets threads reach it (add_user).
  enum class Sharing {
    One,      // FI_THREAD_DOMAIN under manual progress: the application's one thread
    Threads,  // a level that lets threads race, most likely used from the thread opening it:
              // the lock is biased to that thread (util::MaybeLock::enable_biased)
    Shared,   // automatic progress, a passive endpoint (any thread reads its EQ): the Spinlock
  };
  // A domain or passive endpoint starts using the port (at setup, on the thread that opens
  // it). A port with more than one user is Shared.
  void add_user(Sharing s) noexcept;
  const std::string& key() const noexcept { return key_; }
  // This port's name for an endpoint id.
  Name local_name(uint16_t ep_id) const noexcept {
    Name n = local_;
    n.ep_id = ep_id;
    return n;
  }

  // Endpoint ids 1..65535: attach() gives `wanted` if it is free, else the lowest free id; 0 if
  // none is. Take the lock themselves.
  uint16_t attach(Receiver* r, uint16_t wanted = 0);
  void detach(uint16_t ep_id) noexcept;
  // Moves a receiver to another id (fi_setname before enable). False if taken.
  bool move(uint16_t from, uint16_t to);
  // The receiver at an id (under the lock); null if none. ids < receiver_slots().
  Receiver* receiver(uint16_t id) const noexcept PF_REQUIRES(lock_) {
    return id < rx_.size() ? rx_[id] : nullptr;
  }
  size_t receiver_slots() const noexcept PF_REQUIRES(lock_) { return rx_.size(); }

  // The wait source of the domains on this port (core::Progressable): the port's descriptor,
  // prepare_wait() (false while the I/O layers hold packets the descriptor cannot show; on a
  // port without a descriptor, true while the assist or automatic thread runs, which will
  // progress within its interval) and the earliest timer of the receivers and I/O layers.
  // Take the lock themselves.
  int wait_fd() noexcept override { return io_->wait_fd(); }
  bool prepare_wait() noexcept override;
  uint64_t next_deadline_ns() noexcept override;

  // One round of progress (takes the lock; the assist thread's clock restarts).
  void progress() noexcept override;
  // The same under the lock; true if it moved packets or a receiver is busy.
  bool progress_locked() noexcept PF_REQUIRES(lock_);

  // FI_PROGRESS_AUTO (docs/progress.md): from now on a thread drives this port's progress
  // (the liveness assist stops: the thread does its job). Pinned to the next CPU of
  // progress.cores (round robin over the process's ports), else to the CPUs near the port
  // (set_near_cpus), polling progress.idle_us after the last work before it sleeps. No-op if
  // already automatic. Throws std::system_error.
  void enable_auto(const config::Config& cfg);
  // The CPUs near the port (list form, "0-3"; the provider's hwloc placement; "" = unknown),
  // where an automatic-progress thread runs when progress.cores is empty. Before enable_auto.
  void set_near_cpus(std::string cpus) { near_cpus_ = std::move(cpus); }
  bool auto_progress() const noexcept { return assist_.auto_mode(); }
  // The application posted work (a send, an RMA): an automatic-progress thread asleep wakes,
  // since its timers did not know about it. One fence and a load when it is awake.
  void kick() noexcept {
    if (assist_.auto_mode()) assist_.wake();
  }
  // After a post, with the port's lock held by the caller (the endpoint's domain lock, which
  // the analysis cannot see through): kick(), and when the post was refused for lack of room
  // (NoResource, -FI_EAGAIN) one progress round on the poster's thread first. Under automatic
  // progress the thread only try-locks, and posters spinning on -FI_EAGAIN can keep it out
  // for a long time (the 4-thread stress test once made no progress for minutes); a refused
  // poster now frees room itself, which fi_domain(3) allows under FI_PROGRESS_AUTO.
  void posted(util::Status st) noexcept PF_NO_THREAD_SAFETY_ANALYSIS {
    if (st == util::Status::NoResource) progress_locked();
    kick();
  }
  // I/O counters (under the lock). Returns how many it wrote.
  size_t io_counters(util::Counter* out, size_t max) const noexcept PF_REQUIRES(lock_) {
    return io_->counters(out, max);
  }
  uint64_t dropped_unknown_ep() const noexcept PF_REQUIRES(lock_) { return drop_unknown_ep_; }
  // Connection packets dropped by the port's endpoints and listeners, those closed included
  // (under the lock); RESETs the port sent for unknown endpoint ids.
  uint64_t cm_dropped() const noexcept PF_REQUIRES(lock_);
  uint64_t cm_resets_tx() const noexcept PF_REQUIRES(lock_) { return resets_tx_; }
  uint64_t assist_runs() const noexcept { return assist_.runs(); }  // assist or auto runs

 private:
  Link(std::string key, const Name& local, std::string prov, std::string label);
  // The transport's clock from transport.clock: "tsc", "monotonic" or "auto" (tsc when the CPU
  // reports an invariant TSC). Before the first packet.
  void select_clock(const std::string& source);
  // Answers a CM packet (not a RESET) for an unknown endpoint id with RESET.
  void reset_unknown(transport::PacketBuf& pkt) noexcept PF_REQUIRES(lock_);

  std::string key_;
  Name local_;
  std::string prov_, label_;
  transport::SystemClock clock_;
  util::MaybeLock lock_;
  std::unique_ptr<transport::PacketIo> io_inner_;       // the provider's
  std::unique_ptr<transport::FaultIo> io_fault_;        // over io_inner_, when configured
  std::unique_ptr<transport::LoopbackIo> io_loopback_;  // over those: local traffic
  transport::PacketIo* io_ = nullptr;                   // what the engines use
  std::vector<Receiver*> rx_ PF_GUARDED_BY(lock_);      // index = endpoint id; 0 unused
  uint64_t drop_unknown_ep_ PF_GUARDED_BY(lock_) = 0;
  uint64_t resets_tx_ PF_GUARDED_BY(lock_) = 0;
  uint64_t cm_drops_closed_ PF_GUARDED_BY(lock_) = 0;  // cm_drops() of receivers that detached
  uint32_t users_ = 0;                                  // add_user calls (setup only)
  // The last RESET's route (a fault layer holding that packet late keeps pointing here; a later
  // RESET may redirect it, and its receiver drops it by conn_id: harmless).
  transport::Route reset_route_ PF_GUARDED_BY(lock_);
  std::string near_cpus_;         // set_near_cpus
  core::ProgressThread assist_;  // the liveness assist, or the automatic-progress thread
};

}  // namespace pollfab::providers::packet
