// ManualClock: time that moves only when a test says so (ns).
#pragma once
#include <cstdint>

#include "transport/clock.hpp"

namespace pollfab::transport::testing {

class ManualClock final : public Clock {
 public:
  uint64_t now_ns() const noexcept override { return now_; }
  void advance(uint64_t ns) noexcept { now_ += ns; }
  void set(uint64_t t) noexcept { if (t > now_) now_ = t; }

 private:
  uint64_t now_ = 1'000'000;  // start away from 0 (0 means "timer not armed")
};

}  // namespace pollfab::transport::testing
