// The transport's pure per-peer controllers, alone: the RTT estimator and RTO (rtt.hpp,
// RFC 6298), congestion control (congestion.hpp, Swift-like AIMD) and flow control
// (flow_control.hpp, receiver credits). No engine, no link: state in, state out.
#include <gtest/gtest.h>

#include "transport/congestion.hpp"
#include "transport/flow_control.hpp"
#include "transport/rtt.hpp"

namespace pollfab::transport {
namespace {

constexpr uint64_t kUs = 1000;

TEST(Rtt, FirstSampleThenSmoothingAndRtoClamp) {
  RttState r;
  rtt_restart(r, 1000 * kUs);
  EXPECT_EQ(r.rto_ns, 1000 * kUs);
  rtt_on_ack(r, 50 * kUs, 100'000 * kUs);
  EXPECT_EQ(r.rto_ns, 1000 * kUs);  // no sample yet: the initial RTO stays
  EXPECT_EQ(rtt_sample(r, 100 * kUs, 0), 100 * kUs);
  EXPECT_TRUE(r.valid);
  EXPECT_EQ(r.srtt_ns, 100 * kUs);  // RFC 6298 2.2: srtt = R, rttvar = R/2
  EXPECT_EQ(r.rttvar_ns, 50 * kUs);
  rtt_sample(r, 200 * kUs, 0);  // 2.3: rttvar = 3/4 rttvar + 1/4 |srtt - R|, srtt = 7/8 + 1/8
  EXPECT_EQ(r.rttvar_ns, (3 * 50 * kUs + 100 * kUs) / 4);
  EXPECT_EQ(r.srtt_ns, (7 * 100 * kUs + 200 * kUs) / 8);
  EXPECT_EQ(r.min_rtt_ns, 100 * kUs);
  rtt_on_ack(r, 50 * kUs, 100'000 * kUs);
  EXPECT_EQ(r.rto_ns, r.srtt_ns + 4 * r.rttvar_ns);
  rtt_on_ack(r, 5000 * kUs, 100'000 * kUs);
  EXPECT_EQ(r.rto_ns, 5000 * kUs);  // clamped to rto_min
}

TEST(Rtt, AckDelayIsRemovedButNeverBelowTheLowestRtt) {
  RttState r;
  rtt_restart(r, 1000 * kUs);
  rtt_sample(r, 50 * kUs, 0);                           // min_rtt 50 us
  EXPECT_EQ(rtt_sample(r, 80 * kUs, 20 * kUs), 60 * kUs);   // 80 >= 50 + 20: corrected
  EXPECT_EQ(rtt_sample(r, 60 * kUs, 20 * kUs), 60 * kUs);   // 60 < 50 + 20: kept as is
}

TEST(Rtt, TimeoutsBackOffToTheMaximumAndAnAckEndsTheBackoff) {
  RttState r;
  rtt_restart(r, 1000 * kUs);
  for (int i = 0; i < 20; ++i) rtt_on_timeout(r, 100'000 * kUs);
  EXPECT_EQ(r.rto_ns, 100'000 * kUs);
  EXPECT_EQ(r.backoff, 16u);
  rtt_sample(r, 100 * kUs, 0);
  rtt_on_ack(r, 1000 * kUs, 100'000 * kUs);
  EXPECT_EQ(r.backoff, 0u);
  EXPECT_EQ(r.rto_ns, 1000 * kUs);
}

CcParams params() {
  CcParams p;
  p.target_ns = 100 * kUs;
  p.max_cwnd = 256;
  p.min_cwnd = 2;
  return p;
}

TEST(Congestion, StartsAtTheFullWindowAndGrowsFasterWithEveryGoodRound) {
  CcParams p = params();
  CcState s;
  cc_restart(s, p);
  EXPECT_EQ(s.cwnd, 256.0);
  EXPECT_EQ(cc_window(s, p), 256u);
  s.cwnd = 10;  // as after a decrease
  uint64_t now = 1'000'000;
  double before = s.cwnd;
  // One round (srtt 10 us) of samples at the base delay: additive increase, then more per round.
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(cc_on_ack(s, p, 1, 10 * kUs, true, 10 * kUs, 10 * kUs, now + i));
  const double first_round = s.cwnd - before;
  EXPECT_GT(first_round, 0.9);
  now += 11 * kUs;
  EXPECT_FALSE(cc_on_ack(s, p, 1, 10 * kUs, true, 10 * kUs, 10 * kUs, now));  // closes the round
  EXPECT_GE(s.good_rounds, 2u);
  before = s.cwnd;
  for (int i = 0; i < 10; ++i) cc_on_ack(s, p, 1, 10 * kUs, true, 10 * kUs, 10 * kUs, now + 1 + i);
  EXPECT_GT(s.cwnd - before, first_round);  // hyperactive increase
}

TEST(Congestion, StandingDelayAboveTargetDecreasesInProportionOncePerRound) {
  CcParams p = params();
  CcState s;
  cc_restart(s, p);
  s.cwnd = 100;
  uint64_t now = 1'000'000;
  const uint64_t base = 10 * kUs, srtt = 50 * kUs;
  cc_on_ack(s, p, 1, base + 150 * kUs, true, base, srtt, now);  // opens a round
  EXPECT_TRUE(cc_on_ack(s, p, 1, base + 150 * kUs, true, base, srtt, now + srtt));
  // 50 us above the target in a 160 us sample: factor 1 - 0.8 * 50/160 (above 1 - max_mdf)
  EXPECT_NEAR(s.cwnd, 100.0 * (1.0 - 0.8 * 50.0 / 160.0), 0.5);
  EXPECT_EQ(s.good_rounds, 0u);
  const double after = s.cwnd;
  EXPECT_FALSE(cc_on_ack(s, p, 1, base + 150 * kUs, true, base, srtt, now + srtt + 1));
  EXPECT_NEAR(s.cwnd, after, 0.01);  // not again within the round
  // A huge excess is capped at max_mdf.
  cc_restart(s, p);
  s.cwnd = 100;
  cc_on_ack(s, p, 1, base + 100'000 * kUs, true, base, srtt, now);
  EXPECT_TRUE(cc_on_ack(s, p, 1, base + 100'000 * kUs, true, base, srtt, now + srtt));
  EXPECT_NEAR(s.cwnd, 50.0, 0.5);
}

TEST(Congestion, OneSlowSampleInARoundIsNotCongestion) {
  CcParams p = params();
  CcState s;
  cc_restart(s, p);
  s.cwnd = 100;
  const uint64_t base = 10 * kUs, srtt = 50 * kUs;
  uint64_t now = 1'000'000;
  cc_on_ack(s, p, 1, base + 5000 * kUs, true, base, srtt, now);  // a descheduled receiver
  EXPECT_FALSE(cc_on_ack(s, p, 1, base, true, base, srtt, now + srtt));  // the round's lowest is fine
  EXPECT_GE(s.cwnd, 100.0);
}

TEST(Congestion, TimeoutsDecreaseThenResetAndSlowStartBack) {
  CcParams p = params();
  CcState s;
  cc_restart(s, p);
  s.cwnd = 100;
  uint64_t now = 1'000'000;
  const uint64_t srtt = 50 * kUs;
  EXPECT_TRUE(cc_on_timeout(s, p, 0, srtt, now));
  EXPECT_DOUBLE_EQ(s.cwnd, 50.0);
  EXPECT_FALSE(cc_on_timeout(s, p, 1, srtt, now + 1));  // within one srtt of the last decrease
  EXPECT_TRUE(cc_on_timeout(s, p, 2, srtt, now + srtt));  // the third: restart from the minimum
  EXPECT_DOUBLE_EQ(s.cwnd, 2.0);
  EXPECT_DOUBLE_EQ(s.ssthresh, 25.0);
  // Slow start: the window grows by the packets acknowledged until ssthresh.
  cc_on_ack(s, p, 2, 0, false, 10 * kUs, srtt, now + srtt + 1);
  EXPECT_GE(s.cwnd, 4.0);
  for (int i = 0; i < 20; ++i) cc_on_ack(s, p, 8, 0, false, 10 * kUs, srtt, now + srtt + 2 + i);
  EXPECT_GE(s.cwnd, 25.0);
  EXPECT_LE(s.cwnd, 256.0);
}

TEST(FlowControl, TheEdgeOnlyMovesForwardAndStallsEnd) {
  FlowState f;
  flow_restart(f, 256);
  EXPECT_TRUE(flow_window_open(f, util::Seq32(255)));
  EXPECT_FALSE(flow_window_open(f, util::Seq32(256)));
  f.credit_stalled = true;
  flow_on_ack(f, util::Seq32(10), 4, util::Seq32(256));  // offers less: not taken back
  EXPECT_FALSE(flow_window_open(f, util::Seq32(256)));
  EXPECT_TRUE(f.credit_stalled);
  flow_on_ack(f, util::Seq32(200), 100, util::Seq32(256));  // edge 300
  EXPECT_TRUE(flow_window_open(f, util::Seq32(299)));
  EXPECT_FALSE(f.credit_stalled);
  EXPECT_EQ(flow_credits(f, util::Seq32(200)), 100u);
  // Wrap-around of the 32-bit PSN space.
  flow_on_ack(f, util::Seq32(0xfffffff0u), 0x40, util::Seq32(0xfffffff0u));
  EXPECT_TRUE(flow_window_open(f, util::Seq32(0x20)));
}

TEST(FlowControl, ReceiverCreditsFollowTheUnexpectedBudget) {
  EXPECT_EQ(receiver_credits(true, 0, 1400, 256), 256u);       // a posted receive takes it
  EXPECT_EQ(receiver_credits(false, 14000, 1400, 256), 10u);   // 10 segments of budget left
  EXPECT_EQ(receiver_credits(false, 0, 1400, 256), 0u);        // closed
  EXPECT_EQ(receiver_credits(false, 1ull << 40, 1400, 4096), 4096u);
  EXPECT_EQ(receiver_credits(true, 0, 1400, 1u << 20), 0xffffu);  // the header field's limit
}

}  // namespace
}  // namespace pollfab::transport
