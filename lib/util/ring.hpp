// Ring<T>: a single-threaded FIFO of fixed power-of-two capacity (no allocation after construction).
//
// Thread-safety: none; the owner serialises access (the domain's lock policy does when needed).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "lib/util/bits.hpp"

namespace pollfab::util {

template <class T>
class Ring {
 public:
  Ring() = default;
  explicit Ring(uint32_t min_capacity) { reset(min_capacity); }

  void reset(uint32_t min_capacity) {
    cap_ = next_pow2(min_capacity ? min_capacity : 1);
    mask_ = cap_ - 1;
    slots_ = std::make_unique<T[]>(cap_);
    head_ = tail_ = 0;
  }
  uint32_t capacity() const noexcept { return cap_; }
  uint32_t size() const noexcept { return tail_ - head_; }
  bool empty() const noexcept { return head_ == tail_; }
  bool full() const noexcept { return size() == cap_; }

  // Returns false (and changes nothing) when full.
  bool push(const T& v) noexcept {
    if (full()) return false;
    slots_[tail_++ & mask_] = v;
    return true;
  }
  bool push(T&& v) noexcept {
    if (full()) return false;
    slots_[tail_++ & mask_] = std::move(v);
    return true;
  }
  T& front() noexcept { return slots_[head_ & mask_]; }
  const T& front() const noexcept { return slots_[head_ & mask_]; }
  // i-th element from the head (0 = front); requires i < size().
  T& at(uint32_t i) noexcept { return slots_[(head_ + i) & mask_]; }
  void pop() noexcept { ++head_; }
  bool pop(T& out) noexcept {
    if (empty()) return false;
    out = std::move(slots_[head_++ & mask_]);
    return true;
  }
  void clear() noexcept { head_ = tail_ = 0; }

 private:
  std::unique_ptr<T[]> slots_;
  uint32_t cap_ = 0, mask_ = 0;
  uint32_t head_ = 0, tail_ = 0;
};

}  // namespace pollfab::util
