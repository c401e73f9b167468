// The reorder window (transport.reorder_window_pkts) and the pipe (RFC 6675): packets SACKed
// above a hole leave the pipe, so a sender keeps sending new packets while the hole is
// repaired, up to reorder_window_pkts past the cumulative ACK, instead of stopping at
// window_pkts; the receiver holds them (its ring grows from window_pkts on first need) and
// reports them in SACKs longer than the header's 64 bits. What a user sees: the same data,
// intact and in order, with one retransmission for one loss; what the link sees: the sender
// did not stall. Also the ReorderBuffer alone.
#include <gtest/gtest.h>

#include <vector>

#include "tests/unit/transport/harness.hpp"
#include "transport/packet_io_filter.hpp"
#include "transport/reorder_buffer.hpp"
#include "transport/wire.hpp"

namespace pollfab::transport::test {
namespace {

using util::Seq32;
using util::Status;

struct ReorderWindow : ::testing::Test {
  // One 600-segment message from a to b over a 10 us one-way link without congestion control
  // (the windows alone decide), the second data packet lost twice (its first retransmission
  // too, so the repair takes several RTTs). Returns the largest span snd_nxt - snd_una the
  // sender reached.
  // reorder_b: the receiver's reorder window, if not the sender's. late_recv: the receive is
  // posted only once the whole message arrived (it is reassembled as an unexpected message).
  uint32_t run(uint32_t window, uint32_t reorder, uint32_t reorder_b = 0, bool late_recv = false) {
    MemLinkConfig lc;
    lc.latency_ns = 10'000;
    MemLink link(lc, clock);
    DropPsn drop(link.a());
    EngineConfig ca, cb;
    ca.ep_id = 1;
    cb.ep_id = 2;
    ca.cc = cb.cc = false;
    ca.window_pkts = cb.window_pkts = window;
    ca.reorder_window_pkts = reorder;
    cb.reorder_window_pkts = reorder_b ? reorder_b : reorder;
    Engine a(ca, drop, clock, sink_a), b(cb, link.b(), clock, sink_b);
    const PeerId to_b = a.peer(PeerAddr{link.host(1), 2});
    std::vector<uint8_t> out(600 * 1400), in(out.size());
    fill_xorshift(out.data(), out.size(), 7);
    if (!late_recv) {
      EXPECT_EQ(b.recv(make_recv(in.data(), in.size())), Status::Ok);
    }
    EXPECT_EQ(a.send(make_send(to_b, out.data(), out.size())), Status::Ok);
    uint32_t max_span = 0;
    PacketBuf bufs[32];
    for (int i = 0; i < 1'000'000 && sink_b.comps.empty(); ++i) {
      if (late_recv && !sink_a.comps.empty() && b.stats().ooo_placed) {
        EXPECT_EQ(b.recv(make_recv(in.data(), in.size())), Status::Ok);
        late_recv = false;
      }
      for (int side = 0; side < 2; ++side) {
        PacketIo& io = side == 0 ? static_cast<PacketIo&>(drop) : link.b();
        Engine& e = side == 0 ? a : b;
        for (uint16_t n; (n = io.rx_burst(bufs, 32)) > 0;)
          for (uint16_t k = 0; k < n; ++k) e.on_packet(bufs[k]);
      }
      a.progress();
      b.progress();
      max_span = std::max(max_span, a.peer_stats(to_b).inflight_pkts);
      const uint64_t t =
          std::min({link.next_delivery_ns(), a.next_deadline_ns(), b.next_deadline_ns()});
      if (t != UINT64_MAX) clock.set(std::max(t, clock.now_ns() + 1));
    }
    EXPECT_EQ(drop.dropped, 2u);
    EXPECT_EQ(sink_b.comps.size(), 1u);
    if (!sink_b.comps.empty()) {
      EXPECT_EQ(sink_b.comps[0].status, Status::Ok);
      EXPECT_EQ(sink_b.comps[0].len, out.size());
    }
    EXPECT_TRUE(in == out) << "delivered intact and in order";
    retx = a.stats().retx_pkts;
    rto = a.stats().rto_events;
    drop_window = b.stats().drop_window;
    ooo = b.stats().ooo_pkts;
    placed = b.stats().ooo_placed;
    return max_span;
  }
  ManualClock clock;
  RecordingSink sink_a, sink_b;
  uint64_t retx = 0, rto = 0, drop_window = 0, ooo = 0, placed = 0;
};

TEST_F(ReorderWindow, SenderKeepsSendingPastThePipeWhileAHoleIsRepaired) {
  const uint32_t span = run(64, 512);
  // Packets SACKed above the hole left the pipe, so new ones went out, round after round while
  // the hole stayed open: beyond two windows only if the receiver's SACKs past the header's
  // 64 bits (the extended SACK) reached the sender.
  EXPECT_GT(span, 192u) << "the sender stalled while the hole was repaired";
  EXPECT_LE(span, 512u);
  // The only retransmissions are the lost packet's, found by SACK and the probe, not by the
  // timeout.
  EXPECT_EQ(retx, 2u);
  EXPECT_EQ(rto, 0u);
  EXPECT_EQ(drop_window, 0u);
  // Every segment above the hole belonged to the message being received: each was copied to
  // its place on arrival (the data check in run() proves the places), none held.
  EXPECT_GT(ooo, 128u);
  EXPECT_EQ(placed, ooo);
}

TEST_F(ReorderWindow, SegmentsAboveAHoleArePlacedInAnUnexpectedMessageToo) {
  const uint32_t span = run(64, 512, 0, /*late_recv=*/true);
  EXPECT_GT(span, 192u);
  EXPECT_EQ(retx, 2u);
  EXPECT_GT(placed, 128u);
  EXPECT_EQ(placed, ooo);
}

TEST_F(ReorderWindow, WithoutRoomBeyondThePipeTheSenderStopsAtIt) {
  const uint32_t span = run(64, 64);  // the behaviour before the reorder window
  EXPECT_LE(span, 64u);
  EXPECT_EQ(retx, 2u);
  EXPECT_EQ(drop_window, 0u);
}

// Peers configured differently: the smaller reorder window rules (the receiver's credits, the
// sender's ring), and nothing is sent past what the receiver can hold.
TEST_F(ReorderWindow, MixedReorderWindowsTakeTheSmaller) {
  uint32_t span = run(64, 512, 128);
  EXPECT_GT(span, 64u);
  EXPECT_LE(span, 128u) << "the receiver's credits bound the sender";
  EXPECT_EQ(drop_window, 0u);
  EXPECT_EQ(retx, 2u);
  sink_a.comps.clear();
  sink_b.comps.clear();
  span = run(64, 128, 512);
  EXPECT_GT(span, 64u);
  EXPECT_LE(span, 128u) << "the sender's ring bounds it";
  EXPECT_EQ(drop_window, 0u);
  EXPECT_EQ(retx, 2u);
}

TEST(ReorderBuffer, HoldsTakesAndReportsAcrossTheWrap) {
  ReorderBuffer rb;
  rb.init(128);
  auto pkt = [](uintptr_t tag) {
    PacketBuf p;
    p.data = reinterpret_cast<uint8_t*>(tag);
    return p;
  };
  const Seq32 base(0xfffffff0u);  // the PSNs wrap past 2^32 and the ring's end
  for (uint32_t i : {1u, 2u, 63u, 64u, 100u}) rb.put(base + i, pkt(i));
  EXPECT_EQ(rb.count(), 5u);
  EXPECT_TRUE(rb.has(base + 63));
  EXPECT_FALSE(rb.has(base + 3));
  EXPECT_EQ(rb.bits64(base + 1), (1ull << 0) | (1ull << 1) | (1ull << 62) | (1ull << 63));
  EXPECT_EQ(rb.bits64(base + 65), 1ull << 35);
  EXPECT_EQ(rb.take(base + 2).data, reinterpret_cast<uint8_t*>(2));
  EXPECT_FALSE(rb.has(base + 2));
  ASSERT_TRUE(rb.grow(1024, base));
  EXPECT_EQ(rb.slots(), 1024u);
  EXPECT_EQ(rb.count(), 4u);
  for (uint32_t i : {1u, 63u, 64u, 100u}) {
    ASSERT_TRUE(rb.has(base + i)) << i;
    EXPECT_EQ(rb.at(base + i).data, reinterpret_cast<uint8_t*>(uintptr_t(i)));
  }
  rb.put(base + 900, pkt(900));  // room the small ring did not have
  EXPECT_EQ(rb.bits64(base + 900), 1u);
  std::vector<uintptr_t> freed;
  rb.clear([&](PacketBuf& p) { freed.push_back(reinterpret_cast<uintptr_t>(p.data)); });
  EXPECT_EQ(freed.size(), 5u);
  EXPECT_TRUE(rb.empty());
  EXPECT_FALSE(rb.has(base + 900));
}

// Placed segments are found and taken as runs (Engine::drain_held counts a run of the
// current message's at once): a run stops at a held packet, at a gap and at the limit, crosses
// the PSN wrap and word boundaries, and survives the ring's growth.
TEST(ReorderBuffer, RunsOfPlacedSegmentsAcrossTheWrapAndTheGrowth) {
  ReorderBuffer rb;
  rb.init(128);
  const Seq32 base(0xffffffc0u);  // PSNs base + 64 on wrap past 2^32
  for (uint32_t i = 1; i <= 100; ++i) rb.put_placed(base + i, {i * 1000, 1000, false});
  rb.put(base + 101, PacketBuf{});  // a packet held: not placed
  for (uint32_t i = 102; i <= 110; ++i) rb.put_placed(base + i, {i * 1000, 1000, false});
  EXPECT_EQ(rb.placed_run(base, 1000), 0u) << "base itself is missing";
  EXPECT_EQ(rb.placed_run(base + 1, 1000), 100u) << "across a word and the wrap, up to the packet";
  EXPECT_EQ(rb.placed_run(base + 1, 70), 70u);
  EXPECT_TRUE(rb.placed(base + 100));
  EXPECT_FALSE(rb.placed(base + 101));
  ASSERT_TRUE(rb.grow(1024, base + 1));
  EXPECT_EQ(rb.placed_run(base + 1, 1000), 100u);
  rb.take_run(base + 1, 60);
  EXPECT_EQ(rb.count(), 110u - 60u);
  EXPECT_FALSE(rb.has(base + 60));
  EXPECT_TRUE(rb.has(base + 61));
  EXPECT_EQ(rb.placed_run(base + 61, 1000), 40u);
  rb.take_run(base + 61, 40);
  EXPECT_EQ(rb.placed_run(base + 101, 1000), 0u);
  EXPECT_EQ(rb.placed_run(base + 102, 1000), 9u);
  EXPECT_EQ(rb.placed_at(base + 105).offset, 105000u);
  // A placed segment taken alone, then the slot reused by a packet: no longer placed.
  rb.take(base + 102);
  rb.put(base + 102, PacketBuf{});
  EXPECT_FALSE(rb.placed(base + 102));
  EXPECT_EQ(rb.placed_run(base + 103, 1000), 8u);
}

TEST(ReorderBuffer, SmallRingsRotateTheirOneWord) {
  ReorderBuffer rb;
  rb.init(8);
  rb.put(Seq32(6), PacketBuf{});
  rb.put(Seq32(9), PacketBuf{});  // slot 1
  EXPECT_EQ(rb.bits64(Seq32(5)) & 0xff, (1u << 1) | (1u << 4));
}

}  // namespace
}  // namespace pollfab::transport::test
