#include "lib/util/tsc.hpp"

#include <ctime>

#include "lib/util/clock.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace pollfab::util {

bool tsc_invariant() noexcept {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return false;
  if (!__get_cpuid(0x80000007u, &a, &b, &c, &d)) return false;
  return (d >> 8) & 1u;
#else
  return false;
#endif
}

namespace {

struct Sample {
  uint64_t tsc;  // midpoint of the two counter reads around the clock read
  uint64_t ns;
  uint64_t spread;  // ticks between the two counter reads: the sample's uncertainty
};

// The best of a few tries: the one whose clock read was bracketed most tightly.
Sample sample() noexcept {
  Sample best{0, 0, UINT64_MAX};
  for (int i = 0; i < 5; ++i) {
    const uint64_t t0 = tsc_read();
    const uint64_t ns = monotonic_ns();
    const uint64_t t1 = tsc_read();
    if (t1 - t0 < best.spread) best = {t0 + (t1 - t0) / 2, ns, t1 - t0};
  }
  return best;
}

TscCalibration* calibrate() noexcept {
#if defined(__x86_64__)
  static TscCalibration cal;
  const Sample a = sample();
  timespec pause{0, 10 * 1000 * 1000};
  while (nanosleep(&pause, &pause) != 0) {
  }
  const Sample b = sample();
  if (b.tsc <= a.tsc || b.ns <= a.ns) return nullptr;
  const uint64_t ticks = b.tsc - a.tsc, ns = b.ns - a.ns;
  cal.base_tsc = b.tsc;
  cal.base_ns = b.ns;
  cal.mult = static_cast<uint64_t>((static_cast<unsigned __int128>(ns) << 32) / ticks);
  cal.ghz = static_cast<double>(ticks) / static_cast<double>(ns);
  return cal.mult ? &cal : nullptr;
#else
  return nullptr;
#endif
}

}  // namespace

const TscCalibration* tsc_calibration() noexcept {
  static const TscCalibration* cal = calibrate();
  return cal;
}

}  // namespace pollfab::util
