// Send times (transmit.cpp, Engine::flush) and RACK (reliability.cpp, RFC 8985): a packet's
// send time must not be earlier than that of a packet with a lower PSN, and an ACK for an
// original transmission must not date a delivery at its retransmission's send time; either way
// RACK takes packets for overtaken by a delivered one and resends them although nothing was
// lost. What a user sees: over a lossless link every packet goes once (a probe aside) and
// arrives once, even when time passes while a post emits its packets or the receiver pauses.
#include <gtest/gtest.h>

#include <vector>

#include "tests/unit/transport/harness.hpp"

namespace pollfab::transport::test {
namespace {

using util::Status;

// A test clock that moves when told (set), and, while ticking, also 1 us at every reading: as
// a real one does while a post emits hundreds of packets.
class PostClock final : public Clock {
 public:
  uint64_t now_ns() const noexcept override { return ticking ? (t_ += 1'000) : t_; }
  void set(uint64_t t) noexcept { if (t > t_) t_ = t; }
  bool ticking = false;

 private:
  mutable uint64_t t_ = 1'000'000;
};

struct SendTimes : ::testing::Test {
  // 25 Gbit/s, 50 us one way: a window of 1472-byte packets takes ~120 us to go out, so the
  // ACKs of the post's first packets come back well before those of its last ones, yet each
  // oldest packet is acknowledged sooner than its probe is due (2 RTTs): no packet is resent
  // unless RACK misjudges one.
  static MemLinkConfig link_cfg() {
    MemLinkConfig c;
    c.latency_ns = 50'000;
    c.rate_mbps = 25'000;
    return c;
  }
  PostClock clock;
  MemLink link{link_cfg(), clock};
  RecordingSink sink_a, sink_b;
  Engine a{cfg(1), link.a(), clock, sink_a};
  Engine b{cfg(2), link.b(), clock, sink_b};
  PeerId a_to_b = a.peer(PeerAddr{link.host(1), 2});

  static EngineConfig cfg(uint16_t ep) {
    EngineConfig c;
    c.ep_id = ep;
    return c;
  }
  bool drive(const std::function<bool()>& pred) { return drive_until(link, clock, a, b, pred); }
  // Eight small round trips: RTT samples (srtt, min_rtt). Without one, RACK waits the initial
  // RTO and could not misfire. Their completions are the first 8 of each sink.
  void warm_up() {
    small_rx.resize(8 * 64);
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(b.recv(make_recv(small_rx.data() + i * 64, 64)), Status::Ok);
      ASSERT_EQ(a.send(make_send(a_to_b, small, sizeof small)), Status::Ok);
      ASSERT_TRUE(drive([&] { return sink_a.comps.size() == size_t(i) + 1; }));
    }
    ASSERT_GT(a.peer_stats(a_to_b).srtt_ns, 0u);
  }
  uint8_t small[64] = {7};
  std::vector<uint8_t> small_rx;
};

TEST_F(SendTimes, ALargeSendOverALosslessLinkGoesOnceThoughTheClockMovesDuringThePost) {
  ASSERT_NO_FATAL_FAILURE(warm_up());

  // One post of 1 MiB: a window of packets emitted at once, more than the tx queue holds, so
  // the post flushes part of it before it ends (Engine::kTxQueue).
  const size_t len = 1 << 20;
  std::vector<uint8_t> msg(len), rx(len);
  fill_xorshift(msg.data(), len, 42);
  ASSERT_EQ(b.recv(make_recv(rx.data(), len)), Status::Ok);
  clock.ticking = true;
  ASSERT_EQ(a.send(make_send(a_to_b, msg.data(), len, &msg)), Status::Ok);
  clock.ticking = false;
  ASSERT_TRUE(drive([&] { return sink_a.comps.size() == 9 && sink_b.comps.size() == 9; }));

  EXPECT_EQ(sink_a.comps.back().status, Status::Ok);
  EXPECT_EQ(sink_b.comps.back().status, Status::Ok);
  EXPECT_EQ(sink_b.comps.back().len, len);
  EXPECT_EQ(rx, msg);
  // Nothing was lost, so nothing is resent and nothing arrives twice.
  EXPECT_EQ(a.stats().retx_pkts, 0u);
  EXPECT_EQ(a.stats().rack_retx_events, 0u);
  EXPECT_EQ(b.stats().dup_pkts, 0u);
}

// RFC 8985 6.2: an ACK that comes sooner than min_rtt after a retransmission acknowledges the
// original, so the retransmission's send time must not become RACK's. Here the receiver pauses
// (a host preempting it) with the packets in hand, the sender's probe resends the oldest, and
// the receiver, back, acknowledges the first 16 packets at once (ack_coalesce_pkts), 50 us
// after the probe left. Taken as delivered at the probe's send time, the next oldest packet
// (sent before the probe) looked overtaken and was resent as well.
TEST_F(SendTimes, AnAckForTheOriginalDoesNotMakeAProbeOvertakeTheWindow) {
  ASSERT_NO_FATAL_FAILURE(warm_up());
  const uint64_t min_rtt = a.peer_stats(a_to_b).min_rtt_ns;
  ASSERT_GT(min_rtt, 60'000u);  // two 50 us hops: the ACK below comes back sooner than this

  // 32 messages of one packet each (above bundle_max_bytes: no bundling), all in flight.
  const size_t len = 1200, n = 32;
  std::vector<uint8_t> msg(len * n), rx(len * n);
  fill_xorshift(msg.data(), msg.size(), 9);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(b.recv(make_recv(rx.data() + i * len, len)), Status::Ok);
    ASSERT_EQ(a.send(make_send(a_to_b, msg.data() + i * len, len)), Status::Ok);
  }
  a.progress();

  // The receiver pauses: only the sender runs, until its probe resends the oldest packet.
  PacketBuf bufs[32];
  for (int i = 0; i < 10'000; ++i) {
    for (uint16_t k; (k = link.a().rx_burst(bufs, 32)) > 0;)
      for (uint16_t j = 0; j < k; ++j) a.on_packet(bufs[j]);
    a.progress();
    if (a.stats().retx_pkts) break;  // the receiver comes back right after the probe
    const uint64_t t = a.next_deadline_ns();
    if (t != UINT64_MAX) clock.set(std::max(t, clock.now_ns() + 1));
  }
  ASSERT_EQ(a.stats().retx_pkts, 1u);
  // Back: everything arrives, once each.
  ASSERT_TRUE(drive([&] { return sink_a.comps.size() == 8 + n && sink_b.comps.size() == 8 + n; }));
  ASSERT_TRUE(drive([&] { return link.next_delivery_ns() == UINT64_MAX; }));  // the probe lands
  EXPECT_EQ(rx, msg);
  EXPECT_EQ(a.stats().retx_pkts, 1u);  // the probe only
  EXPECT_EQ(b.stats().dup_pkts, 1u);   // its duplicate
}

}  // namespace
}  // namespace pollfab::transport::test
