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

TEST(MessagesByPeriod, CountsWholePeriodsPastTheGuard) {
  // Period 100 ms, guard 10 ms: a counted span of 90 ms a period.
  MessagesByPeriod m(100 * kMs, 10 * kMs);
  m.add(1050 * kMs, 7);   // period 10: the stream began inside it, never reported
  m.add(1105 * kMs, 100); // period 11, 5 ms in: inside the guard
  m.add(1110 * kMs, 30);  // period 11: counted
  m.add(1199 * kMs, 60);  // period 11: counted
  // period 12: nothing completed in it (reported as 0)
  m.add(1320 * kMs, 45);  // period 13: counted
  m.add(1410 * kMs, 5);   // period 14: the stream ends inside it, never reported
  const auto r = m.rates();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].index, 11u);
  EXPECT_EQ(r[0].msgs, 90u);
  EXPECT_DOUBLE_EQ(r[0].per_s, 1000.0);  // 90 messages in 90 ms
  EXPECT_EQ(r[1].index, 12u);
  EXPECT_EQ(r[1].msgs, 0u);
  EXPECT_EQ(r[2].index, 13u);
  EXPECT_EQ(r[2].msgs, 45u);
  EXPECT_DOUBLE_EQ(r[2].per_s, 500.0);
}

TEST(MessagesByPeriod, AStreamInsideOnePeriodReportsNothing) {
  MessagesByPeriod m(100 * kMs, 0);
  EXPECT_TRUE(m.rates().empty());
  m.add(1010 * kMs, 5);
  m.add(1090 * kMs, 5);
  EXPECT_TRUE(m.rates().empty()) << "neither period whole: the stream began and ended in it";
  m.add(1250 * kMs, 5);  // now period 11 lies wholly inside the stream
  ASSERT_EQ(m.rates().size(), 1u);
  EXPECT_EQ(m.rates()[0].msgs, 0u);
}

}  // namespace
}  // namespace pollfab::apps
