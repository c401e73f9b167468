// Clock: the transport's only source of time (ns). Tests drive a ManualClock
// (transport/testing/manual_clock.hpp); providers use SystemClock (CLOCK_MONOTONIC via vDSO).
#pragma once
#include <cstdint>

#include "lib/util/clock.hpp"

namespace pollfab::transport {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t now_ns() const noexcept = 0;
};

class SystemClock final : public Clock {
 public:
  uint64_t now_ns() const noexcept override { return util::monotonic_ns(); }
};

}  // namespace pollfab::transport
