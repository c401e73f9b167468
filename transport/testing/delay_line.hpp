// DelayLine: frames a fault injector's Reorder action holds back, each sent once its time has
// come (providers' tx fault injection: FI_DPDK_FAULT_REORDER, FI_UDP_FAULT_REORDER). A frame
// is late by reorder_distance() (1..4) units of kUnitNs, so later frames overtake it.
// Fixed capacity N (push fails when full: the caller sends the frame in order instead), no
// allocation, order kept among held frames. Thread-safety: none (the owning I/O serialises).
#pragma once
#include <cstdint>

namespace pollfab::transport::testing {

template <typename T, uint32_t N>
class DelayLine {
 public:
  static constexpr uint64_t kUnitNs = 20'000;  // 20 us per unit of reorder distance

  bool empty() const noexcept { return n_ == 0; }
  // Holds v until now_ns + distance * kUnitNs. False (nothing held) when full.
  bool push(const T& v, uint64_t now_ns, uint32_t distance) noexcept {
    if (n_ == N) return false;
    items_[n_++] = {v, now_ns + kUnitNs * distance};
    return true;
  }
  // Calls f(v) for every held item due at now_ns (in the order they were pushed) and drops it.
  template <typename F>
  void release_due(uint64_t now_ns, F&& f) {
    uint32_t j = 0;
    for (uint32_t i = 0; i < n_; ++i) {
      if (items_[i].due_ns <= now_ns) f(items_[i].v);
      else items_[j++] = items_[i];
    }
    n_ = j;
  }
  // Calls f(v) for every held item and drops them all (shutdown).
  template <typename F>
  void drain(F&& f) {
    for (uint32_t i = 0; i < n_; ++i) f(items_[i].v);
    n_ = 0;
  }

 private:
  struct Item {
    T v;
    uint64_t due_ns;
  };
  Item items_[N];
  uint32_t n_ = 0;
};

}  // namespace pollfab::transport::testing
