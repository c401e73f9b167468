// Spinlock and MaybeLock: the lock policy picked at setup from the OFI threading level
// (docs/threading.md).
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
    if (!flag_.exchange(true, std::memory_order_acquire)) return;
    spinners_.fetch_add(1, std::memory_order_relaxed);
    bool spinning = true;
    for (int i = 0;;) {
      while (flag_.load(std::memory_order_relaxed)) {
        if (++i < kSpins) {
          __builtin_ia32_pause();
          continue;
        }
        if (spinning) {  // from now on a holder's pass() does not wait for us
          spinners_.fetch_sub(1, std::memory_order_relaxed);
          spinning = false;
        }
        sched_yield();
      }
      if (!flag_.exchange(true, std::memory_order_acquire)) break;
    }
    if (spinning) spinners_.fetch_sub(1, std::memory_order_relaxed);
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
  std::atomic<bool> flag_{false};
  std::atomic<uint32_t> spinners_{0};  // threads in lock()'s spinning phase
};

class PF_CAPABILITY("lock") MaybeLock {
 public:
  void enable(bool on) noexcept { enabled_.store(on, std::memory_order_relaxed); }
  bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed); }
  void lock() noexcept PF_ACQUIRE() PF_NO_THREAD_SAFETY_ANALYSIS {
    if (enabled()) lock_.lock();
  }
  bool try_lock() noexcept PF_TRY_ACQUIRE(true) PF_NO_THREAD_SAFETY_ANALYSIS {
    return enabled() ? lock_.try_lock() : true;
  }
  void unlock() noexcept PF_RELEASE() PF_NO_THREAD_SAFETY_ANALYSIS {
    if (enabled()) lock_.unlock();
  }
  bool has_waiters() const noexcept { return enabled() && lock_.has_waiters(); }
  void pass() noexcept PF_REQUIRES(this) PF_NO_THREAD_SAFETY_ANALYSIS {
    if (enabled()) lock_.pass();
  }

 private:
  Spinlock lock_;
  std::atomic<bool> enabled_{false};
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

}  // namespace pollfab::util
