// Clock: the transport's only source of time (ns). Tests drive a ManualClock
// (transport/testing/manual_clock.hpp); providers use SystemClock.
#pragma once
#include <atomic>
#include <cstdint>

#include "lib/util/clock.hpp"
#include "lib/util/tsc.hpp"

namespace pollfab::transport {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t now_ns() const noexcept = 0;
};

// CLOCK_MONOTONIC (a vDSO read on most hosts), or after use_tsc() a calibrated TSC
// (lib/util/tsc.hpp: no system call where the vDSO cannot serve the clock). TSC readings are
// kept monotonic: the counters of two CPUs may differ a little, and the transport subtracts
// times taken by different threads (under its port lock). Thread-safety: now_ns() from any
// thread; use_tsc() before the first now_ns().
class SystemClock final : public Clock {
 public:
  void use_tsc(const util::TscCalibration* cal) noexcept { tsc_ = cal; }
  bool uses_tsc() const noexcept { return tsc_ != nullptr; }
  uint64_t now_ns() const noexcept override {
    if (!tsc_) return util::monotonic_ns();
    const uint64_t t = util::tsc_ns(*tsc_);
    const uint64_t last = last_.load(std::memory_order_relaxed);
    if (t <= last) return last;
    last_.store(t, std::memory_order_relaxed);
    return t;
  }

 private:
  const util::TscCalibration* tsc_ = nullptr;
  mutable std::atomic<uint64_t> last_{0};
};

}  // namespace pollfab::transport
