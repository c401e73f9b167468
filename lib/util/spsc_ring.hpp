// SpscRing: a bounded single-producer single-consumer queue without locks (a Lamport ring with
// acquire/release indices and each side's cached copy of the other's index, so that a push or
// a pop touches the other side's cache line only when its copy says full or empty).
// Capacity is a power of two >= the requested size; push fails (false) when full.
//
// Thread-safety: one producer thread at a time (push) and one consumer thread at a time
// (front/pop) may run concurrently; "one at a time" means callers of a side serialize among
// themselves (a lock, or the application's threading level). size()/empty() may be called
// from any thread and see a recent value.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

#include "lib/util/bits.hpp"

namespace pollfab::util {

template <class T>
class SpscRing {
 public:
  SpscRing() = default;
  explicit SpscRing(uint32_t min_capacity) { reset(min_capacity); }

  // Not concurrent with anything.
  void reset(uint32_t min_capacity) {
    cap_ = next_pow2(min_capacity ? min_capacity : 1);
    mask_ = cap_ - 1;
    slots_ = std::make_unique<T[]>(cap_);
    prod_.tail.store(0, std::memory_order_relaxed);
    prod_.head_seen = 0;
    cons_.head.store(0, std::memory_order_relaxed);
    cons_.tail_seen = 0;
  }
  uint32_t capacity() const noexcept { return cap_; }
  uint32_t size() const noexcept {
    // head first: a tail read before it could be passed by the consumer meanwhile (the
    // difference then wraps to a huge size).
    const uint32_t h = cons_.head.load(std::memory_order_acquire);
    return prod_.tail.load(std::memory_order_acquire) - h;
  }
  bool empty() const noexcept { return size() == 0; }

  // Producer. False (nothing changed) when full.
  bool push(const T& v) noexcept {
    const uint32_t t = prod_.tail.load(std::memory_order_relaxed);
    if (t - prod_.head_seen == cap_) {
      prod_.head_seen = cons_.head.load(std::memory_order_acquire);
      if (t - prod_.head_seen == cap_) return false;
    }
    slots_[t & mask_] = v;
    prod_.tail.store(t + 1, std::memory_order_release);
    return true;
  }
  // Producer, in place: the slot the next push would fill (null when full), written by the
  // caller field by field and published by commit() (no copy of an element built on the
  // caller's stack: see transport/ops.hpp copy_op on store-to-load forwarding).
  T* claim() noexcept {
    const uint32_t t = prod_.tail.load(std::memory_order_relaxed);
    if (t - prod_.head_seen == cap_) {
      prod_.head_seen = cons_.head.load(std::memory_order_acquire);
      if (t - prod_.head_seen == cap_) return nullptr;
    }
    return &slots_[t & mask_];
  }
  // Producer: publishes the slot claim() returned (requires one).
  void commit() noexcept {
    prod_.tail.store(prod_.tail.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  // Producer, in place, a burst: true if n more fit (then slot(0..n-1) are the next n slots,
  // written by the caller, and commit_n(k <= n) publishes the first k at once).
  bool room(uint32_t n) noexcept {
    const uint32_t t = prod_.tail.load(std::memory_order_relaxed);
    if (cap_ - (t - prod_.head_seen) >= n) return true;
    prod_.head_seen = cons_.head.load(std::memory_order_acquire);
    return cap_ - (t - prod_.head_seen) >= n;
  }
  T* slot(uint32_t i) noexcept {
    return &slots_[(prod_.tail.load(std::memory_order_relaxed) + i) & mask_];
  }
  void commit_n(uint32_t k) noexcept {
    prod_.tail.store(prod_.tail.load(std::memory_order_relaxed) + k, std::memory_order_release);
  }

  // Consumer: the oldest element, or null when empty. Valid until pop().
  T* front() noexcept {
    const uint32_t h = cons_.head.load(std::memory_order_relaxed);
    if (h == cons_.tail_seen) {
      cons_.tail_seen = prod_.tail.load(std::memory_order_acquire);
      if (h == cons_.tail_seen) return nullptr;
    }
    return &slots_[h & mask_];
  }
  // Consumer, a batch: how many elements are queued (the producer's index is read again only
  // when the cached copy says none); peek(i < that) is the i-th oldest; pop_n(k) drops the k
  // oldest at once.
  uint32_t available() noexcept {
    const uint32_t h = cons_.head.load(std::memory_order_relaxed);
    if (h == cons_.tail_seen) cons_.tail_seen = prod_.tail.load(std::memory_order_acquire);
    return cons_.tail_seen - h;
  }
  T* peek(uint32_t i) noexcept {
    return &slots_[(cons_.head.load(std::memory_order_relaxed) + i) & mask_];
  }
  void pop_n(uint32_t k) noexcept {
    cons_.head.store(cons_.head.load(std::memory_order_relaxed) + k, std::memory_order_release);
  }
  // Consumer: drops the element front() returned (requires one).
  void pop() noexcept {
    cons_.head.store(cons_.head.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

 private:
  static constexpr size_t kLine = 64;
  std::unique_ptr<T[]> slots_;
  uint32_t cap_ = 0, mask_ = 0;
  struct alignas(kLine) Producer {
    std::atomic<uint32_t> tail{0};
    uint32_t head_seen = 0;  // the consumer's head as last read
  } prod_;
  struct alignas(kLine) Consumer {
    std::atomic<uint32_t> head{0};
    uint32_t tail_seen = 0;  // the producer's tail as last read
  } cons_;
};

}  // namespace pollfab::util
