// Monotonic time in nanoseconds. clock_gettime(CLOCK_MONOTONIC) is served by the vDSO: no syscall.
#pragma once
#include <cstdint>
#include <ctime>

namespace pollfab::util {

inline uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace pollfab::util
