// SystemClock over a calibrated TSC (lib/util/tsc.hpp): what the transport relies on is a
// monotonic nanosecond time base whose rate matches CLOCK_MONOTONIC. These are correctness
// checks of the calibration (a rate off by a factor would break every RTT and timer), with a
// 10% tolerance; they measure nothing about speed.
#include <gtest/gtest.h>

#include <ctime>
#include <thread>

#include "lib/util/tsc.hpp"
#include "transport/clock.hpp"

namespace {

using pollfab::transport::SystemClock;

TEST(TscClock, CalibrationGivesAPlausibleRate) {
  const auto* cal = pollfab::util::tsc_calibration();
  if (!cal) GTEST_SKIP() << "no usable TSC on this machine (not x86-64?)";
  EXPECT_GT(cal->ghz, 0.1);
  EXPECT_LT(cal->ghz, 10.0);
}

TEST(TscClock, ReadingsNeverGoBackwards) {
  const auto* cal = pollfab::util::tsc_calibration();
  if (!cal) GTEST_SKIP() << "no usable TSC on this machine";
  SystemClock clk;
  clk.use_tsc(cal);
  ASSERT_TRUE(clk.uses_tsc());
  uint64_t prev = clk.now_ns();
  for (int i = 0; i < 200000; ++i) {
    const uint64_t t = clk.now_ns();
    ASSERT_GE(t, prev) << "read " << i;
    prev = t;
    if (i % 20000 == 0) std::this_thread::yield();  // a chance to move to the other CPU
  }
}

TEST(TscClock, ElapsedTimeMatchesClockMonotonic) {
  const auto* cal = pollfab::util::tsc_calibration();
  if (!cal) GTEST_SKIP() << "no usable TSC on this machine";
  SystemClock tsc, mono;
  tsc.use_tsc(cal);
  ASSERT_FALSE(mono.uses_tsc());
  const uint64_t t0 = tsc.now_ns(), m0 = mono.now_ns();
  timespec pause{0, 50 * 1000 * 1000};
  while (nanosleep(&pause, &pause) != 0) {
  }
  const uint64_t t1 = tsc.now_ns(), m1 = mono.now_ns();
  const double ratio = double(t1 - t0) / double(m1 - m0);
  EXPECT_GT(ratio, 0.9);
  EXPECT_LT(ratio, 1.1);
  // The same time base as CLOCK_MONOTONIC (anchored at calibration), not merely the same rate.
  const double off_ms = (double(t1) - double(m1)) / 1e6;
  EXPECT_LT(off_ms < 0 ? -off_ms : off_ms, 100.0);
}

}  // namespace
