// A calibrated time-stamp counter: nanoseconds from RDTSC, without a system call.
//
// Why: CLOCK_MONOTONIC is a vDSO read (20-60 ns) on most hosts, but wherever the vDSO cannot
// serve it (a User-Mode Linux guest, some VMs with a clocksource the vDSO lacks) it is a real
// system call: 45 us in the soft-RoCE guest, where the transport's 2-3 reads per packet capped
// verbs at about 6,000 packets/s. RDTSC is an unprivileged instruction everywhere on x86-64.
//
// How: tsc_calibration() measures the counter's rate against CLOCK_MONOTONIC once per process
// (two reads 10 ms apart, each bracketed by RDTSC: a rate error of 0.01% where the clock is a
// vDSO read, under 0.5% where each read is a 45 us system call), then
// ns = base_ns + (tsc - base_tsc) * mult >> 32. The result tracks CLOCK_MONOTONIC closely but is
// its own time base: compare TSC nanoseconds only with TSC nanoseconds.
//
// Invariance: the counter must tick at a constant rate through P-states and C-states (CPUID
// 0x80000007 EDX bit 8, "invariant TSC"; Linux's constant_tsc + nonstop_tsc). tsc_invariant()
// reports it. Counters of different CPUs may differ by a little (under a microsecond on hosts
// and hypervisors that synchronise them); callers that subtract times taken on different threads
// clamp (transport::SystemClock keeps its readings monotonic).
//
// Thread-safety: all functions are safe from any thread; the calibration runs once (a
// function-local static) on the first call of tsc_calibration(), which takes about 10 ms.
// Non-x86-64 builds: tsc_invariant() is false and tsc_calibration() returns nullptr.
#pragma once
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace pollfab::util {

struct TscCalibration {
  uint64_t base_tsc = 0;  // counter value at base_ns
  uint64_t base_ns = 0;   // CLOCK_MONOTONIC at calibration, ns
  uint64_t mult = 0;      // ns per tick in 32.32 fixed point
  double ghz = 0;         // ticks per ns, for logs
};

// True when the CPU reports an invariant TSC (CPUID 0x80000007 EDX bit 8).
bool tsc_invariant() noexcept;

// The process's calibration, or nullptr where there is no usable counter (not x86-64, or the
// counter did not advance during calibration). Never fails otherwise.
const TscCalibration* tsc_calibration() noexcept;

inline uint64_t tsc_read() noexcept {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return 0;
#endif
}

// Nanoseconds on c's time base at this instant. A counter behind base_tsc (read on a CPU whose
// counter lags the calibrating CPU's, just after calibration) gives base_ns, never a wrap.
inline uint64_t tsc_ns(const TscCalibration& c) noexcept {
  const int64_t d = static_cast<int64_t>(tsc_read() - c.base_tsc);
  if (d <= 0) return c.base_ns;
  return c.base_ns + static_cast<uint64_t>((static_cast<unsigned __int128>(d) * c.mult) >> 32);
}

}  // namespace pollfab::util
