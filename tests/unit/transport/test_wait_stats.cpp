// Where a transfer's time goes, as a user reads it in the peer counters (docs/observability.md):
// a sender's waits with data queued, by what stopped it (blocked_window_ns, blocked_cwnd_ns,
// blocked_credits_ns, blocked_ring_ns, blocked_tx_ns), and a receiver's holes (holes, hole_ns:
// packets held above a missing one). Each test makes one cause happen on a MemLink with a
// ManualClock, so the expected time is known from the link's latency and the test's own pauses.
#include <gtest/gtest.h>

#include <vector>

#include "tests/unit/transport/harness.hpp"

namespace pollfab::transport::test {
namespace {

using util::Status;

constexpr uint64_t kLatency = 10'000;  // one way, ns
constexpr uint32_t kSeg = 1400;        // payload bytes per packet at MemLink's 1472

MemLinkConfig slow_link() {
  MemLinkConfig lc;
  lc.latency_ns = kLatency;
  return lc;
}

// `packets` full segments of seeded data from t.a to t.b, both completions awaited: the data
// must arrive whole.
void transfer(Pair& t, uint32_t packets, uint64_t seed) {
  std::vector<uint8_t> out(size_t(packets) * kSeg), in(out.size());
  fill_xorshift(out.data(), out.size(), seed);
  ASSERT_EQ(t.b->recv(make_recv(in.data(), in.size())), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, out.data(), out.size())), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_a.comps.size() == 1 && t.sink_b.comps.size() == 1; }));
  EXPECT_EQ(in, out);
}

uint64_t blocked_other_than_window(const PeerStats& s) {
  return s.blocked_cwnd_ns + s.blocked_credits_ns + s.blocked_ring_ns + s.blocked_tx_ns;
}

// a -> b over slow_link() with PSN 1 lost once on the way (b's config: cb, its ep_id set here).
struct LossyPair {
  explicit LossyPair(EngineConfig cb = {}) : b(with_ep(cb, 2), link.b(), clock, sink_b) {
    drop.times = 1;
  }
  static EngineConfig with_ep(EngineConfig c, uint16_t ep) {
    c.ep_id = ep;
    return c;
  }
  ManualClock clock;
  RecordingSink sink_a, sink_b;
  MemLink link{slow_link(), clock};
  DropPsn drop{link.a()};
  Engine a{with_ep({}, 1), drop, clock, sink_a};
  Engine b;
  PeerId to_b = a.peer(PeerAddr{link.host(1), 2});
  PeerId to_a = b.peer(PeerAddr{link.host(0), 1});
  bool drive(const std::function<bool()>& pred) { return drive_until(link, clock, a, b, pred); }
};

TEST(WaitStats, ASenderHeldByItsWindowCountsTheWaitsAsWindow) {
  // 64 packets through a window of 8 (no congestion control): the sender stops 7 times with data
  // queued, each time for at least a round trip, and nothing else stops it.
  EngineConfig ca;
  ca.cc = false;
  ca.window_pkts = 8;
  ca.reorder_window_pkts = 8;
  Pair t(slow_link(), ca);
  const uint64_t t0 = t.clock.now_ns();
  ASSERT_NO_FATAL_FAILURE(transfer(t, 64, 3));
  const uint64_t took = t.clock.now_ns() - t0;
  const PeerStats s = t.a->peer_stats(t.a_to_b);
  EXPECT_GE(s.blocked_window_ns, 7 * 2 * kLatency) << "7 waits of a round trip or more";
  EXPECT_LE(s.blocked_window_ns, took);
  EXPECT_EQ(blocked_other_than_window(s), 0u);
  const PeerStats r = t.b->peer_stats(t.b_to_a);
  EXPECT_EQ(r.holes, 0u) << "nothing was lost";
  EXPECT_EQ(r.hole_ns, 0u);
  EXPECT_EQ(r.blocked_window_ns + blocked_other_than_window(r), 0u) << "b sent no data";
}

TEST(WaitStats, AReceiverWithoutReceivesCountsAsCreditsUntilItPostsThem) {
  // b has no receive posted and room for 16 KiB of unexpected messages: its first ACKs close
  // a's window (credits) in the middle of 100 messages of 4 KiB (300 packets, more than a's
  // send window of 256). b posts its receives 2 ms later; a's wait for credits is most of those 2 ms,
  // and the data arrives intact.
  EngineConfig cb;
  cb.max_unexpected_bytes = 16 * 1024;
  Pair t(slow_link(), {}, cb);
  constexpr int kMsgs = 100;
  constexpr size_t kLen = 4096;
  std::vector<std::vector<uint8_t>> out, in(kMsgs, std::vector<uint8_t>(kLen));
  for (int i = 0; i < kMsgs; ++i) {
    out.emplace_back(kLen);
    fill_xorshift(out.back().data(), kLen, uint64_t(i) + 1);
    ASSERT_EQ(t.a->send(make_send(t.a_to_b, out[i].data(), kLen)), Status::Ok);
  }
  const uint64_t pause = 2'000'000;
  const uint64_t t_post = t.clock.now_ns() + pause;
  t.run_until([&] { return t.clock.now_ns() >= t_post; });
  EXPECT_LT(t.sink_b.comps.size(), size_t(kMsgs)) << "b's budget cannot hold them all";
  for (int i = 0; i < kMsgs; ++i)
    ASSERT_EQ(t.b->recv(make_recv(in[i].data(), kLen)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_b.comps.size() == size_t(kMsgs); }));
  EXPECT_EQ(in, out);
  const PeerStats s = t.a->peer_stats(t.a_to_b);
  EXPECT_GE(s.blocked_credits_ns, pause / 2) << "a waited for b's credits";
  EXPECT_LE(s.blocked_credits_ns, t.clock.now_ns());
  // Before b's first ACK a knew no credits: its window (256) stopped it, for a round trip and
  // b's ACK delay at most.
  EXPECT_LE(s.blocked_window_ns, 2 * kLatency + EngineConfig{}.ack_delay_ns);
  EXPECT_EQ(s.blocked_ring_ns + s.blocked_tx_ns, 0u);
}

TEST(WaitStats, ASenderHeldByItsCongestionWindowCountsAsCwnd) {
  // A 1 Gbit/s link (12 us a packet) under a 256-packet window: the queue's delay passes
  // congestion control's target (100 us above the lowest RTT), the congestion window shrinks
  // below the send window, and the sender waits on it.
  MemLinkConfig lc = slow_link();
  lc.rate_mbps = 1000;
  Pair t(lc);
  ASSERT_NO_FATAL_FAILURE(transfer(t, 2000, 9));
  EXPECT_GT(t.a->stats().cc_decreases, 0u);
  const PeerStats s = t.a->peer_stats(t.a_to_b);
  EXPECT_GT(s.blocked_cwnd_ns, 0u);
  EXPECT_LE(s.blocked_cwnd_ns + s.blocked_window_ns, t.clock.now_ns());
  EXPECT_EQ(s.blocked_credits_ns + s.blocked_ring_ns + s.blocked_tx_ns, 0u);
}

TEST(WaitStats, ASenderOutOfPacketBuffersCountsAsThePacketPath) {
  // The link has 24 packet buffers for both ends: a 64-packet message runs out of them while
  // its first packets are on the wire, and the sender waits for the receiver to free some.
  MemLinkConfig lc = slow_link();
  lc.pool_buffers = 24;
  EngineConfig ca;
  ca.cc = false;
  Pair t(lc, ca);
  ASSERT_NO_FATAL_FAILURE(transfer(t, 64, 5));
  const PeerStats s = t.a->peer_stats(t.a_to_b);
  EXPECT_GT(s.blocked_tx_ns, 0u);
  EXPECT_LE(s.blocked_tx_ns, t.clock.now_ns());
  EXPECT_EQ(s.blocked_credits_ns + s.blocked_ring_ns + s.blocked_cwnd_ns, 0u);
}

TEST(WaitStats, AHoleIsTimedFromTheFirstPacketHeldAboveItUntilItFills) {
  // One packet (PSN 1) lost once in a 40-packet message: b holds the 38 above it until the
  // retransmission arrives, which takes at least a round trip after the first one held (the
  // SACK goes back, the resend comes). One hole, counted once; a's send is not blocked.
  LossyPair t;
  std::vector<uint8_t> out(40 * kSeg), in(out.size());
  fill_xorshift(out.data(), out.size(), 11);
  ASSERT_EQ(t.b.recv(make_recv(in.data(), in.size())), Status::Ok);
  ASSERT_EQ(t.a.send(make_send(t.to_b, out.data(), out.size())), Status::Ok);
  ASSERT_TRUE(t.drive([&] { return t.sink_b.comps.size() == 1; }));
  EXPECT_EQ(t.drop.dropped, 1u);
  EXPECT_EQ(in, out);
  const PeerStats r = t.b.peer_stats(t.to_a);
  EXPECT_EQ(r.holes, 1u);
  EXPECT_GE(r.hole_ns, 2 * kLatency) << "at least the SACK's way back and the resend's way";
  EXPECT_EQ(t.a.peer_stats(t.to_b).holes, 0u);
  t.clock.advance(1'000'000);
  t.b.progress();
  EXPECT_EQ(t.b.peer_stats(t.to_a).hole_ns, r.hole_ns) << "the hole is closed: its time stops";
}

TEST(WaitStats, AHoleClosesWhenItsLastHeldPacketIsReplacedByARetransmission) {
  // b has room for two unexpected 1,000-byte messages and no receive posted; PSN 1 is lost
  // once. PSN 2 is held above the hole; PSN 1's retransmission is delivered, PSN 2 then cannot
  // be (no room) and stays held at rcv_nxt, the only one held, until a's retransmission of it
  // replaces it and is refused too: nothing is held any more, so the hole is over and its time
  // stops, though PSN 2 is still to come.
  EngineConfig cb;
  cb.max_unexpected_bytes = 3024;
  LossyPair t(cb);
  std::vector<std::vector<uint8_t>> out, in(3, std::vector<uint8_t>(1000));
  for (int i = 0; i < 3; ++i) {
    out.emplace_back(1000, uint8_t(i + 1));
    ASSERT_EQ(t.a.send(make_send(t.to_b, out[i].data(), 1000)), Status::Ok);
  }
  ASSERT_TRUE(t.drive([&] {
    return t.b.stats().drop_unexpected_full > 0 && t.b.held_packets() == 0;
  }));
  const PeerStats r = t.b.peer_stats(t.to_a);
  EXPECT_EQ(r.holes, 1u);
  EXPECT_GT(r.hole_ns, 0u);
  t.clock.advance(1'000'000);
  t.b.progress();
  EXPECT_EQ(t.b.peer_stats(t.to_a).hole_ns, r.hole_ns) << "nothing is held: the hole's time stopped";
  for (int i = 0; i < 3; ++i) ASSERT_EQ(t.b.recv(make_recv(in[i].data(), 1000)), Status::Ok);
  ASSERT_TRUE(t.drive([&] { return t.sink_b.comps.size() == 3; }));
  EXPECT_EQ(in, out);
  EXPECT_EQ(t.b.peer_stats(t.to_a).holes, 1u);
  EXPECT_EQ(t.b.peer_stats(t.to_a).hole_ns, r.hole_ns);
}

}  // namespace
}  // namespace pollfab::transport::test
