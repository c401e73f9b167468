// Spinlock and MaybeLock: the lock policy picked at setup from the OFI threading level.
// Spinlock: test-and-test-and-set with a bounded spin, then sched_yield (a syscall only when
// contended past the spin).
//
// MaybeLock is a no-op unless enabled (FI_THREAD_SAFE); the branch is perfectly predicted, so
// single-threaded levels (FI_THREAD_DOMAIN and friends) pay one test per operation, no atomics.
#pragma once
#include <sched.h>

#include <atomic>

namespace pollfab::util {

class Spinlock {
 public:
  // Spins kSpins pauses, then yields the CPU between tries: a holder preempted on a busy
  // machine (more threads than CPUs) gets to run instead of waiting out our timeslice.
  static constexpr int kSpins = 128;
  void lock() noexcept {
    for (;;) {
      if (!flag_.exchange(true, std::memory_order_acquire)) return;
      for (int i = 0; flag_.load(std::memory_order_relaxed); ++i) {
        if (i < kSpins) __builtin_ia32_pause();
        else sched_yield();
      }
    }
  }
  bool try_lock() noexcept { return !flag_.exchange(true, std::memory_order_acquire); }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

class MaybeLock {
 public:
  void enable(bool on) noexcept { enabled_ = on; }
  bool enabled() const noexcept { return enabled_; }
  void lock() noexcept { if (enabled_) lock_.lock(); }
  bool try_lock() noexcept { return enabled_ ? lock_.try_lock() : true; }
  void unlock() noexcept { if (enabled_) lock_.unlock(); }

 private:
  Spinlock lock_;
  bool enabled_ = false;
};

template <class L>
class Guard {
 public:
  explicit Guard(L& l) noexcept : l_(l) { l_.lock(); }
  ~Guard() { l_.unlock(); }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

 private:
  L& l_;
};

}  // namespace pollfab::util
