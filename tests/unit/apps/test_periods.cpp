// apps/common/periods.hpp: the windows of a stream summed into the clean and faulty periods of
// fault.period_ms (what scripts/bench-loss.sh compares).
#include <gtest/gtest.h>

#include "apps/common/periods.hpp"

namespace pollfab::apps {
namespace {

constexpr uint64_t kMs = 1'000'000;

TEST(GoodputByPeriod, CountsWindowsInsideAPeriodPastTheGuard) {
  // Period 100 ms, guard 10 ms; windows of 1000 bytes.
  const std::vector<WindowSpan> w = {
      {1005 * kMs, 1020 * kMs},  // period 10, starts 5 ms in: inside the guard, left out
      {1020 * kMs, 1050 * kMs},  // period 10: counted (30 ms)
      {1050 * kMs, 1060 * kMs},  // period 10: counted (10 ms)
      {1060 * kMs, 1110 * kMs},  // across the boundary into 11: left out
      {1110 * kMs, 1130 * kMs},  // period 11, 10 ms in: counted (20 ms)
      {1290 * kMs, 1299 * kMs},  // period 12: counted (9 ms)
  };
  const auto p = goodput_by_period(w, 1000, 100 * kMs, 10 * kMs);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].index, 10u);
  EXPECT_FALSE(p[0].faulty);
  EXPECT_EQ(p[0].windows, 2u);
  EXPECT_EQ(p[0].bytes, 2000u);
  EXPECT_DOUBLE_EQ(p[0].us, 40'000.0);
  EXPECT_EQ(p[1].index, 11u);
  EXPECT_TRUE(p[1].faulty) << "odd periods are the faulty ones (transport/fault_io.hpp)";
  EXPECT_EQ(p[1].windows, 1u);
  EXPECT_DOUBLE_EQ(p[1].us, 20'000.0);
  EXPECT_EQ(p[2].index, 12u);
  EXPECT_FALSE(p[2].faulty);
  EXPECT_DOUBLE_EQ(p[2].us, 9'000.0);
}

TEST(GoodputByPeriod, NoWindowCountedGivesNoPeriods) {
  EXPECT_TRUE(goodput_by_period({}, 1000, 100 * kMs, 0).empty());
  // Every window crosses a boundary.
  const std::vector<WindowSpan> w = {{90 * kMs, 110 * kMs}, {110 * kMs, 210 * kMs}};
  EXPECT_TRUE(goodput_by_period(w, 1000, 100 * kMs, 0).empty());
}

}  // namespace
}  // namespace pollfab::apps
