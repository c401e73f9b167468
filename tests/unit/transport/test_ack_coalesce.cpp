// How often a receiver acknowledges an in-order stream (EngineConfig::ack_coalesce_pkts and
// ack_coalesce_msgs, reliability.cpp): once ack_coalesce_pkts packets (64) or ack_coalesce_msgs
// messages (16; a bundle counts as its messages) wait, whichever comes first. A bulk message
// gets an ACK every 64 packets, small messages one every 16; every ACK costs both sides a
// packet. A sender whose window stops it asks for its ACK (ACK_REQ on its newest packet), so a
// window smaller than the ACK interval (a congestion window after a loss) does not wait out the
// receiver's ACK delay.
#include <gtest/gtest.h>

#include <vector>

#include "tests/unit/transport/harness.hpp"

namespace pollfab::transport::test {
namespace {

using util::Status;

constexpr uint64_t kLatency = 1'000;  // one way, ns
// A full segment's payload: MemLinkConfig's packet less the header.
const uint32_t kSeg = MemLinkConfig{}.max_packet_bytes - uint32_t(wire::kHeaderBytes);

size_t ok_sends(const RecordingSink& s) { return ok_completions(s, kCompSend); }

// One message of `pkts` full segments a -> b with config c on both sides; returns b's standalone
// ACKs, and in took_ns how long the send took to complete.
uint64_t acks_for_one_message(uint32_t pkts, EngineConfig c, uint64_t* took_ns = nullptr) {
  Pair t(link_with_latency(kLatency), c, c);
  std::vector<uint8_t> out(size_t(pkts) * kSeg), in(out.size());
  fill_xorshift(out.data(), out.size(), 5);
  EXPECT_EQ(t.b->recv(make_recv(in.data(), in.size())), Status::Ok);
  const uint64_t t0 = t.clock.now_ns();
  EXPECT_EQ(t.a->send(make_send(t.a_to_b, out.data(), out.size())), Status::Ok);
  EXPECT_TRUE(t.run_until([&] { return ok_sends(t.sink_a) == 1; }));
  if (took_ns) *took_ns = t.clock.now_ns() - t0;
  EXPECT_EQ(in, out);
  EXPECT_EQ(t.a->stats().tx_pkts, pkts) << "one packet a segment, none resent";
  return t.b->stats().acks_tx;
}

TEST(AckCoalesce, ABulkMessageIsAcknowledgedEveryAckCoalescePktsPackets) {
  EngineConfig c;
  EXPECT_EQ(c.ack_coalesce_pkts, 64u);
  EXPECT_EQ(acks_for_one_message(128, c), 2u);  // at packets 64 and 128 (the window is 256)
  c.ack_coalesce_pkts = 16;
  EXPECT_EQ(acks_for_one_message(128, c), 8u);
}

TEST(AckCoalesce, SmallMessagesAreAcknowledgedEveryAckCoalesceMsgsMessages) {
  EngineConfig c;
  c.bundle_max_bytes = 0;  // one message a packet: packets alone would ask for one ACK in 64
  Pair t(link_with_latency(kLatency), c, c);
  constexpr int kMsgs = 64;
  char out[kMsgs][64] = {}, in[kMsgs][64] = {};
  for (int i = 0; i < kMsgs; ++i) {
    out[i][0] = char(i);
    ASSERT_EQ(t.b->recv(make_recv(in[i], sizeof in[i])), Status::Ok);
  }
  for (int i = 0; i < kMsgs; ++i)
    ASSERT_EQ(t.a->send(make_send(t.a_to_b, out[i], sizeof out[i])), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return ok_sends(t.sink_a) == kMsgs; }));
  EXPECT_EQ(t.a->stats().tx_pkts, uint64_t(kMsgs));
  EXPECT_EQ(t.b->stats().acks_tx, uint64_t(kMsgs / 16));
  for (int i = 0; i < kMsgs; ++i) EXPECT_EQ(in[i][0], char(i));
}

TEST(AckCoalesce, ASenderStoppedByItsWindowAsksForItsAck) {
  // A window of 16 packets under an ACK interval of 64: each window would wait for the
  // receiver's ACK delay; the sender asks instead, so each costs about a round trip.
  EngineConfig c;
  c.window_pkts = 16;
  c.reorder_window_pkts = 16;
  c.cc = false;
  uint64_t took = 0;
  acks_for_one_message(64, c, &took);
  // Windows 1-3 end in a stop (about a round trip each); the last one stops nothing, and its
  // one message waiting is below ack_coalesce_msgs / 2: it may wait out one delay (a reply
  // would have carried the ACK). Without the request each window waits: about 70 us.
  EXPECT_LT(took, c.ack_delay_ns + 16 * kLatency);
}

}  // namespace
}  // namespace pollfab::transport::test
