// Spinlock's contended path and MaybeLock's remote side (lib/util/spinlock.hpp).
#include "lib/util/spinlock.hpp"

#include "lib/util/heavy_barrier.hpp"

namespace pollfab::util {

void Spinlock::lock_contended() noexcept {
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

void MaybeLock::enable_remote() noexcept {
  if (remote_) return;
  remote_ = true;
  asym_ = heavy_barrier_available();
  if (!asym_) threads_.store(true, std::memory_order_release);  // the remote side takes lock_
}

namespace {

// Spins while flag is set, kSpins pauses and then yielding the CPU between looks.
void spin_while(const std::atomic<bool>& flag) noexcept {
  for (int i = 0; flag.load(std::memory_order_acquire); ++i) {
    if (i < Spinlock::kSpins) __builtin_ia32_pause(); else sched_yield();
  }
}

}  // namespace

void MaybeLock::wait_remote() noexcept { spin_while(wants_); }

void MaybeLock::enable_biased() noexcept {
  if (!asym_) {
    enable(true);
    return;
  }
  if (threads_.load(std::memory_order_relaxed)) return;
  bias_.store(__builtin_thread_pointer(), std::memory_order_release);
}

void MaybeLock::lock_asym() noexcept {
  for (;;) {
    const bool t = threads_.load(std::memory_order_acquire);
    if (!t && !mine()) {
      lock_foreign();
      return;
    }
    if (t) lock_.lock();
    if (announce(t)) return;
    if (t) lock_.unlock();
    wait_remote();
  }
}

void MaybeLock::lock_foreign() noexcept {
  lock_remote();
  // Held: the switch cannot happen under us (it takes the remote side too). Recheck it.
  if (threads_.load(std::memory_order_acquire)) {
    unlock_remote();
    lock();
    return;
  }
  count_foreign();
}

bool MaybeLock::try_lock_foreign() noexcept {
  if (!try_lock_remote()) return false;
  if (threads_.load(std::memory_order_acquire)) {
    unlock_remote();
    return try_lock();
  }
  count_foreign();
  return true;
}

void MaybeLock::lock_remote() noexcept {
  if (!asym_) {
    if (threads_.load(std::memory_order_relaxed)) lock_.lock();
    return;
  }
  remote_mu_.lock();
  wants_.store(true, std::memory_order_seq_cst);
  // New application-side holders now see wants_ and wait; the one inside (if any) finishes.
  // A refused barrier (not expected once registered) is retried: without it a holder's
  // announcement may still sit in its CPU's store buffer.
  while (!heavy_barrier()) sched_yield();
  spin_while(busy_);
  remote_held_ = true;
}

bool MaybeLock::try_lock_remote() noexcept {
  if (!asym_) return !threads_.load(std::memory_order_relaxed) || lock_.try_lock();
  if (!remote_mu_.try_lock()) return false;
  wants_.store(true, std::memory_order_seq_cst);
  if (!heavy_barrier() || busy_.load(std::memory_order_acquire)) {
    wants_.store(false, std::memory_order_release);
    remote_mu_.unlock();
    return false;
  }
  remote_held_ = true;
  return true;
}

void MaybeLock::unlock_remote() noexcept {
  if (!asym_) {
    if (threads_.load(std::memory_order_relaxed)) lock_.unlock();
    return;
  }
  remote_held_ = false;
  if (flip_pending_) {  // many calls from threads the lock is not biased to: the Spinlock
    flip_pending_ = false;
    threads_.store(true, std::memory_order_release);
  }
  wants_.store(false, std::memory_order_release);
  remote_mu_.unlock();
}

}  // namespace pollfab::util
