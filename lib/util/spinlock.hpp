// Spinlock and MaybeLock: the lock policy picked at setup from the OFI threading level
// (docs/threading.md), with an asymmetric side for rare library threads.
// Spinlock: test-and-test-and-set with a bounded spin, then sched_yield (a syscall only when
// contended past the spin). Threads spinning in lock() are counted, so that a holder doing a
// long run of work (a progress round over a burst of packets) can let them in between two
// pieces of it: pass().
//
// MaybeLock is a no-op unless enabled; the branch is perfectly predicted, so levels where the
// application promises single-threaded access pay one test per operation, no atomics.
// enable(true) happens at setup, before a second thread can reach the lock.
#pragma once
#include <sched.h>

#include <atomic>
#include <cstdint>

#include "lib/util/thread_annotations.hpp"

namespace pollfab::util {

class PF_CAPABILITY("spinlock") Spinlock {
 public:
  // Spins kSpins pauses, then yields the CPU between tries: a holder preempted on a busy
  // machine (more threads than CPUs) gets to run instead of waiting out our timeslice.
  static constexpr int kSpins = 128;
  void lock() noexcept PF_ACQUIRE() {
    if (!flag_.exchange(true, std::memory_order_acquire)) [[likely]] return;
    lock_contended();
  }
  bool try_lock() noexcept PF_TRY_ACQUIRE(true) {
    return !flag_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept PF_RELEASE() { flag_.store(false, std::memory_order_release); }
  // True while a thread spins in lock() (a relaxed load: a hint). A waiter that has spun
  // kSpins times and yields its CPU no longer counts: it is not running to take the lock.
  bool has_waiters() const noexcept { return spinners_.load(std::memory_order_relaxed) != 0; }
  // The holder, at a point where the state it guards is consistent: if a thread spins in
  // lock(), unlocks, lets it take the lock (waiting at most kPassSpins pauses for it to) and
  // locks again behind it. One relaxed load when nobody spins.
  static constexpr int kPassSpins = 16;
  void pass() noexcept PF_REQUIRES(this) PF_NO_THREAD_SAFETY_ANALYSIS {  // unlocks and relocks
    if (!has_waiters()) return;
    unlock();
    for (int i = 0; i < kPassSpins && has_waiters() && !flag_.load(std::memory_order_relaxed); ++i)
      __builtin_ia32_pause();
    // Back in without yielding the CPU: the holder's own work (the rest of a progress round)
    // is what the waiters' posts wait for.
    while (flag_.load(std::memory_order_relaxed) || flag_.exchange(true, std::memory_order_acquire))
      __builtin_ia32_pause();
  }

 private:
  void lock_contended() noexcept;  // lock() after a failed first try (spinlock.cpp)

  std::atomic<bool> flag_{false};
  std::atomic<uint32_t> spinners_{0};  // threads in lock()'s spinning phase
};

// MaybeLock: the lock of a domain or port, picked at setup from the threading level.
// Application side (lock, try_lock, unlock, pass): the application's threads, and the
// automatic-progress thread, which polls as often as they do.
//   - enable(false) (the default): a no-op; the branch is perfectly predicted, so levels where
//     the application promises single-threaded access pay one test per operation.
//   - enable(true): a Spinlock serialises the application-side threads.
// Remote side (lock_remote, try_lock_remote, unlock_remote): library threads that lock rarely,
// and only when the application is idle or asks (the liveness assist, the stats socket).
// enable_remote() at setup, before such a thread starts, turns on an asymmetric handshake
// (Dekker's, with the fence of the application side moved to the remote side by
// util::heavy_barrier, Linux membarrier(2)): the application side announces itself with a
// plain store (busy_) and checks a flag (wants_) behind a compiler barrier; the remote side
// raises wants_, runs the heavy barrier and waits until busy_ is down. So a single
// application thread under FI_THREAD_DOMAIN pays two stores and a load per call, no atomic
// read-modify-write, even with the liveness assist running; the remote side pays a system
// call per acquisition. Where the kernel lacks membarrier (or in a ThreadSanitizer build,
// which cannot see its ordering) enable_remote() turns the Spinlock on instead and the remote
// side takes it.
// enable(true) after enable_remote() is safe while remote threads run: it takes the remote
// side to switch. It is also safe while one application-side thread is inside a call (a second
// domain opened on a port another thread is using): lock() rechecks the switch after
// announcing itself.
// Thread-safety: as above; enable/enable_remote at setup. A remote holder must not call into
// the application side (it would wait for itself), nor the reverse.
class PF_CAPABILITY("lock") MaybeLock {
 public:
  void enable(bool on) noexcept PF_NO_THREAD_SAFETY_ANALYSIS {
    if (!on || !asym_ || threads_.load(std::memory_order_relaxed)) {
      threads_.store(on, std::memory_order_release);
      return;
    }
    lock_remote();  // no application-side holder now; new ones wait and then recheck
    threads_.store(true, std::memory_order_release);
    unlock_remote();
  }
  bool enabled() const noexcept { return threads_.load(std::memory_order_relaxed) || remote_; }
  // Library threads will take the remote side (before they start). Idempotent.
  void enable_remote() noexcept;
  // Application-side threads may race, but the calling thread is expected to make nearly all
  // the calls (FI_THREAD_SAFE asked by a single-threaded application: fi_pingpong, most MPI
  // programs): with the handshake available (enable_remote first), the lock is biased to this
  // thread, which keeps the handshake's cost; any other thread takes the remote side (a
  // membarrier per acquisition), and after kForeignFlip such acquisitions the Spinlock goes on
  // for everyone (enable(true)). Without the handshake: enable(true). Setup only.
  void enable_biased() noexcept;
  static constexpr uint32_t kForeignFlip = 64;

  [[gnu::always_inline]] void lock() noexcept PF_ACQUIRE() PF_NO_THREAD_SAFETY_ANALYSIS {
    if (!asym_) {
      if (threads_.load(std::memory_order_relaxed)) lock_.lock();
      return;
    }
    if (!threads_.load(std::memory_order_acquire) && mine() && announce(false)) [[likely]]
      return;
    lock_asym();
  }
  bool try_lock() noexcept PF_TRY_ACQUIRE(true) PF_NO_THREAD_SAFETY_ANALYSIS {
    if (!asym_) [[unlikely]]
      return !threads_.load(std::memory_order_relaxed) || lock_.try_lock();
    const bool t = threads_.load(std::memory_order_acquire);
    if (!t && !mine()) return try_lock_foreign();
    if (t && !lock_.try_lock()) return false;
    if (announce(t)) return true;
    if (t) lock_.unlock();
    return false;
  }
  [[gnu::always_inline]] void unlock() noexcept PF_RELEASE() PF_NO_THREAD_SAFETY_ANALYSIS {
    if (remote_held_) [[unlikely]] {  // a thread the lock is not biased to (lock_foreign)
      unlock_remote();
      return;
    }
    if (asym_) busy_.store(false, std::memory_order_release);
    if (threads_.load(std::memory_order_relaxed)) lock_.unlock();
  }
  // True while another thread waits for the lock (a relaxed load: a hint).
  bool has_waiters() const noexcept {
    return (threads_.load(std::memory_order_relaxed) && lock_.has_waiters()) ||
           (asym_ && wants_.load(std::memory_order_relaxed));
  }
  // The holder, at a point where the guarded state is consistent, lets a waiting thread in
  // (util::Spinlock::pass; a remote waiter gets the lock until it lets go). A remote holder
  // lets nobody in.
  void pass() noexcept PF_REQUIRES(this) PF_NO_THREAD_SAFETY_ANALYSIS {
    if (remote_held_) return;
    if (asym_ && wants_.load(std::memory_order_relaxed)) {
      unlock();
      lock();
      return;
    }
    if (threads_.load(std::memory_order_relaxed)) lock_.pass();
  }

  // The remote side. Without enable_remote() it is the application side's Spinlock (a no-op
  // while that is off, as before: such a lock has no library threads).
  void lock_remote() noexcept PF_ACQUIRE() PF_NO_THREAD_SAFETY_ANALYSIS;
  // Never waits for an application-side holder: false if one is inside (the assist backs off:
  // the application is making progress).
  bool try_lock_remote() noexcept PF_TRY_ACQUIRE(true) PF_NO_THREAD_SAFETY_ANALYSIS;
  void unlock_remote() noexcept PF_RELEASE() PF_NO_THREAD_SAFETY_ANALYSIS;

 private:
  // The application side's handshake: announce, then look for a remote holder or waiter (and
  // for a switch to the Spinlock made since t was read). True: held.
  bool announce(bool t) noexcept {
    busy_.store(true, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the remote side's heavy barrier pairs
    if (!wants_.load(std::memory_order_acquire) &&
        threads_.load(std::memory_order_relaxed) == t) [[likely]]
      return true;
    busy_.store(false, std::memory_order_release);
    return false;
  }
  void wait_remote() noexcept;  // until no remote thread holds or wants the lock
  // lock() with the Spinlock on, or after meeting a remote thread (acquires this lock: the
  // callers are annotated; the conditional Spinlock inside is beyond the analysis).
  void lock_asym() noexcept PF_NO_THREAD_SAFETY_ANALYSIS;
  // True unless the lock is biased to another thread. The thread pointer identifies a thread.
  bool mine() const noexcept {
    const void* b = bias_.load(std::memory_order_relaxed);
    return !b || b == __builtin_thread_pointer();
  }
  // An application-side call from a thread the lock is not biased to: the remote side.
  void lock_foreign() noexcept PF_NO_THREAD_SAFETY_ANALYSIS;
  bool try_lock_foreign() noexcept PF_NO_THREAD_SAFETY_ANALYSIS;
  // Under the remote side, after a foreign acquisition: the switch to the Spinlock is due at
  // unlock_remote once there were kForeignFlip of them.
  void count_foreign() noexcept {
    if (++foreign_ >= kForeignFlip) flip_pending_ = true;
  }

  Spinlock lock_;                     // the application side's, when threads_
  std::atomic<bool> threads_{false};  // application-side threads may race
  bool remote_ = false;               // enable_remote() was called
  bool asym_ = false;                 // ... and the handshake runs (membarrier available)
  bool remote_held_ = false;          // a remote thread holds it (read by the holder only)
  std::atomic<bool> busy_{false};     // an application-side thread holds it (asym_)
  std::atomic<bool> wants_{false};    // a remote thread holds or wants it (asym_)
  Spinlock remote_mu_;                // serialises the remote threads (asym_)
  std::atomic<const void*> bias_{nullptr};  // enable_biased(): the thread the lock favours
  uint32_t foreign_ = 0;              // lock_foreign acquisitions (under the remote side)
  bool flip_pending_ = false;         // unlock_remote turns the Spinlock on (kForeignFlip)
};

template <class L>
class PF_SCOPED_CAPABILITY Guard {
 public:
  explicit Guard(L& l) noexcept PF_ACQUIRE(l) : l_(l) { l_.lock(); }
  ~Guard() PF_RELEASE() { l_.unlock(); }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

 private:
  L& l_;
};

// Holds a MaybeLock's remote side for a scope (a library thread).
class PF_SCOPED_CAPABILITY RemoteGuard {
 public:
  explicit RemoteGuard(MaybeLock& l) noexcept PF_ACQUIRE(l) : l_(l) { l_.lock_remote(); }
  ~RemoteGuard() PF_RELEASE() { l_.unlock_remote(); }
  RemoteGuard(const RemoteGuard&) = delete;
  RemoteGuard& operator=(const RemoteGuard&) = delete;

 private:
  MaybeLock& l_;
};

}  // namespace pollfab::util
