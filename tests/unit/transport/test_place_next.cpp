// Early placement into the next message (Engine::place_next): while a hole in one message is
// repaired, the segments of the message after it arrive too. Its first segment is matched at
// once to a posted receive and its segments are copied to their places on arrival, instead of
// waiting in their packet buffers. What a user sees: each message intact in the receive that
// in-order matching would give it, completions in order; a message with no posted receive waits
// as an unexpected one; a sender lost during the repair fails both matched receives (none is
// lost). What the receiver counts: every segment above the hole placed (ooo_placed ==
// ooo_pkts).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "tests/unit/transport/harness.hpp"

namespace pollfab::transport::test {
namespace {

using util::Status;

constexpr uint32_t kSegs = 100;  // segments a message

struct PlaceNext : ::testing::Test {
  // Two messages of kSegs segments from a to b over a 10 us one-way link, no congestion
  // control, a 64-packet window and a 512-packet reorder window (the hole stays open for
  // several windows). PSN `lost` (in the first message's last segments) is lost `times` times.
  void SetUp() override {
    lc.latency_ns = 10'000;
    link = std::make_unique<MemLink>(lc, clock);
    drop = std::make_unique<DropPsn>(link->a());
    drop->drop_psn = kSegs - 10;
    EngineConfig ca, cb;
    ca.ep_id = 1;
    cb.ep_id = 2;
    ca.cc = cb.cc = false;
    ca.window_pkts = cb.window_pkts = 64;
    ca.reorder_window_pkts = cb.reorder_window_pkts = 512;
    ca.peer_timeout_ns = cb.peer_timeout_ns = 50'000'000;
    a = std::make_unique<Engine>(ca, *drop, clock, sink_a);
    b = std::make_unique<Engine>(cb, link->b(), clock, sink_b);
    to_b = a->peer(PeerAddr{link->host(1), 2});
    seg = lc.max_packet_bytes - wire::kHeaderBytes;
    for (int i = 0; i < 2; ++i) {
      out[i].resize(size_t(kSegs) * seg);
      in[i].assign(out[i].size(), 0);
      fill_xorshift(out[i].data(), out[i].size(), 11 + i);
    }
  }
  // The first message, then the second; tags (a tagged send if nonzero).
  void send_both(uint64_t tag0 = 0, uint64_t tag1 = 0) {
    const uint64_t tags[2] = {tag0, tag1};
    for (int i = 0; i < 2; ++i) {
      SendOp s = make_send(to_b, out[i].data(), out[i].size(), &ctx_send[i]);
      if (tags[i]) {
        s.flags |= kOpTagged;
        s.tag = tags[i];
      }
      ASSERT_EQ(a->send(s), Status::Ok);
    }
  }
  Status post(int buf, uint64_t tag = 0) {
    RecvOp r = make_recv(in[buf].data(), in[buf].size(), &ctx_recv[buf]);
    if (tag) {
      r.flags |= kOpTagged;
      r.tag = tag;
    }
    return b->recv(r);
  }
  bool run_until(const std::function<bool()>& pred) {
    return drive_until(*link, clock, *a, *b, pred, 2'000'000);
  }
  size_t recvs_done() const { return ok_completions(sink_b, kCompRecv); }

  MemLinkConfig lc;
  ManualClock clock;
  std::unique_ptr<MemLink> link;
  std::unique_ptr<DropPsn> drop;
  RecordingSink sink_a, sink_b;
  std::unique_ptr<Engine> a, b;
  PeerId to_b = kNoPeer;
  uint32_t seg = 0;
  std::vector<uint8_t> out[2], in[2];
  int ctx_send[2] = {}, ctx_recv[2] = {};
};

TEST_F(PlaceNext, TheNextMessagesSegmentsAboveAHoleArePlacedOnArrival) {
  ASSERT_EQ(post(0), Status::Ok);
  ASSERT_EQ(post(1), Status::Ok);
  send_both();
  ASSERT_TRUE(run_until([&] { return recvs_done() == 2 && !a->busy(); }));
  EXPECT_EQ(drop->dropped, 2u);
  ASSERT_EQ(sink_b.comps.size(), 2u);
  for (int i = 0; i < 2; ++i) {  // in order, each in its own receive, intact
    EXPECT_EQ(sink_b.comps[i].context, &ctx_recv[i]);
    EXPECT_EQ(sink_b.comps[i].len, out[i].size());
    EXPECT_TRUE(in[i] == out[i]) << "message " << i;
  }
  // The second message's segments came above the first one's hole (more than the first
  // message's 9 segments after it), and each was copied to its place on arrival.
  EXPECT_GT(b->stats().ooo_pkts, uint64_t(kSegs));
  EXPECT_EQ(b->stats().ooo_placed, b->stats().ooo_pkts) << "segments were held, not placed";
  EXPECT_EQ(b->stats().drop_protocol, 0u);
}

// Receives posted in the opposite order to the messages' tags: the early match takes the
// receive the tag names, as in-order matching would.
TEST_F(PlaceNext, TheEarlyMatchTakesTheReceiveInOrderMatchingWould) {
  ASSERT_EQ(post(1, /*tag=*/7), Status::Ok);
  ASSERT_EQ(post(0, /*tag=*/5), Status::Ok);
  send_both(/*tag0=*/5, /*tag1=*/7);
  ASSERT_TRUE(run_until([&] { return recvs_done() == 2 && !a->busy(); }));
  ASSERT_EQ(sink_b.comps.size(), 2u);
  EXPECT_EQ(sink_b.comps[0].context, &ctx_recv[0]);
  EXPECT_EQ(sink_b.comps[0].tag, 5u);
  EXPECT_EQ(sink_b.comps[1].context, &ctx_recv[1]);
  EXPECT_EQ(sink_b.comps[1].tag, 7u);
  EXPECT_TRUE(in[0] == out[0]);
  EXPECT_TRUE(in[1] == out[1]);
  EXPECT_EQ(b->stats().ooo_placed, b->stats().ooo_pkts);
}

// Nothing posted for the second message: its segments wait in their buffers (an unexpected
// message is not started early), and a receive posted after the first completed gets it
// intact.
TEST_F(PlaceNext, WithNoPostedReceiveTheNextMessageWaitsAsUnexpected) {
  ASSERT_EQ(post(0), Status::Ok);
  send_both();
  ASSERT_TRUE(run_until([&] { return recvs_done() == 1; }));
  EXPECT_LT(b->stats().ooo_placed, b->stats().ooo_pkts);
  ASSERT_EQ(post(1), Status::Ok);
  ASSERT_TRUE(run_until([&] { return recvs_done() == 2 && !a->busy(); }));
  EXPECT_EQ(sink_b.comps[1].context, &ctx_recv[1]);
  EXPECT_TRUE(in[0] == out[0]);
  EXPECT_TRUE(in[1] == out[1]);
}

// The sender is gone while the hole is open and the second message is matched early: when b
// gives up on it (peer failure), both receives complete with the failure; neither is lost.
TEST_F(PlaceNext, ASenderLostDuringTheRepairFailsBothMatchedReceives) {
  drop->times = UINT32_MAX;  // the hole never fills
  ASSERT_EQ(post(0), Status::Ok);
  ASSERT_EQ(post(1), Status::Ok);
  send_both();
  // The second message's segments are in place (beyond the first message's 9 after the hole).
  ASSERT_TRUE(run_until([&] { return b->stats().ooo_placed >= kSegs; }));
  EXPECT_EQ(recvs_done(), 0u);
  a.reset();
  PacketBuf bufs[32];
  for (int i = 0; i < 1000 && b->stats().peers_dead == 0; ++i) {
    while (uint16_t n = link->a().rx_burst(bufs, 32)) link->a().free(bufs, n);
    b->progress();
    clock.advance(1'000'000);
  }
  ASSERT_EQ(b->stats().peers_dead, 1u);
  ASSERT_EQ(sink_b.comps.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(sink_b.comps[i].context, &ctx_recv[i]);
    EXPECT_NE(sink_b.comps[i].status, Status::Ok);
  }
}

}  // namespace
}  // namespace pollfab::transport::test
