// Deferred ACKs (Engine::can_defer_ack, Peer::dack): the ACK a request piggybacks for a reply
// that made no completion event is processed after the next reply leaves, off the path the
// round trip waits for. What a user sees must not change: every message arrives once and in
// order, every send completes (those that asked, with an entry), nothing is resent, and the
// engine is left with nothing in use; a send that asked for a completion, or a bound send
// counter, keeps its ACK processed at once.
#include <gtest/gtest.h>

#include <vector>

#include "tests/unit/transport/harness.hpp"

namespace pollfab::transport::test {
namespace {

using util::Status;

struct DeferredAck : ::testing::Test {
  Pair t;
  char ping[16] = "ping", pong[16] = "pong";
  std::vector<char> in_a = std::vector<char>(16), in_b = std::vector<char>(16);

  // n round trips a -> b -> a, each side re-posting its receive before it replies (as
  // fi_pingpong and `pollfab pingpong` do); send_flags for both sides' sends; quiesce: then
  // run until neither side is busy.
  void ping_pong(int n, uint32_t send_flags, bool quiesce = true) {
    size_t a_got = 0, b_got = 0;
    ASSERT_EQ(t.b->recv(make_recv(in_b.data(), in_b.size())), Status::Ok);
    ASSERT_EQ(t.a->recv(make_recv(in_a.data(), in_a.size())), Status::Ok);
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(t.a->send(make_send(t.a_to_b, ping, sizeof ping, nullptr, send_flags)), Status::Ok);
      ASSERT_TRUE(t.run_until([&] { return count_recv(t.sink_b) > b_got; }));
      ++b_got;
      ASSERT_EQ(t.b->recv(make_recv(in_b.data(), in_b.size())), Status::Ok);
      const size_t on_link = t.link.in_flight();
      ASSERT_EQ(t.b->send(make_send(t.b_to_a, pong, sizeof pong, nullptr, send_flags)), Status::Ok);
      EXPECT_EQ(t.link.in_flight(), on_link + 1) << "the reply waited for a progress round";
      ASSERT_TRUE(t.run_until([&] { return count_recv(t.sink_a) > a_got; }));
      ++a_got;
      ASSERT_EQ(t.a->recv(make_recv(in_a.data(), in_a.size())), Status::Ok);
      EXPECT_STREQ(in_a.data(), "pong");
      EXPECT_STREQ(in_b.data(), "ping");
    }
    // Quiet: nothing left in flight or in use (else b's last reply is still unacknowledged,
    // and a's next request acknowledges it).
    if (quiesce) {
      ASSERT_TRUE(t.run_until([&] { return !t.a->busy() && !t.b->busy(); }));
    }
  }
  static size_t count_recv(const RecordingSink& s) {
    size_t n = 0;
    for (const auto& c : s.comps) n += (c.flags & kCompRecv) && c.status == Status::Ok;
    return n;
  }
  static size_t count_send(const RecordingSink& s) {
    size_t n = 0;
    for (const auto& c : s.comps) n += (c.flags & kCompSend) && c.status == Status::Ok && c.cq_entry;
    return n;
  }
};

TEST_F(DeferredAck, APingPongOfInjectsTakesEachRequestsAckAfterTheReply) {
  ping_pong(50, kOpInject);
  EXPECT_GE(t.b->stats().acks_deferred, 49u);  // every request but the first acknowledged a reply
  EXPECT_GE(t.a->stats().acks_deferred, 49u);
  EXPECT_EQ(t.a->stats().retx_pkts + t.b->stats().retx_pkts, 0u);
  EXPECT_EQ(t.a->sends_in_use(), 0u);
  EXPECT_EQ(t.b->sends_in_use(), 0u);
  EXPECT_EQ(count_send(t.sink_a) + count_send(t.sink_b), 0u);  // injects make no entries
}

TEST_F(DeferredAck, SendsThatAskForACompletionHaveTheirAckProcessedAtOnce) {
  ping_pong(20, kOpCompletion);
  EXPECT_EQ(t.a->stats().acks_deferred + t.b->stats().acks_deferred, 0u);
  EXPECT_EQ(count_send(t.sink_a), 20u);
  EXPECT_EQ(count_send(t.sink_b), 20u);
}

TEST_F(DeferredAck, ABoundSendCounterKeepsTheAckAtOnce) {
  t.a->set_send_counter_bound(true);
  t.b->set_send_counter_bound(true);
  ping_pong(20, kOpInject);
  EXPECT_EQ(t.a->stats().acks_deferred + t.b->stats().acks_deferred, 0u);
  EXPECT_EQ(t.a->sends_in_use(), 0u);
}

TEST_F(DeferredAck, ADeferredAckIsAppliedByTheNextRoundWhenNoReplyFollows) {
  ASSERT_EQ(t.b->recv(make_recv(in_b.data(), in_b.size())), Status::Ok);
  ASSERT_EQ(t.a->recv(make_recv(in_a.data(), in_a.size())), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, ping, sizeof ping, nullptr, kOpInject)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return count_recv(t.sink_b) == 1; }));
  ASSERT_EQ(t.b->recv(make_recv(in_b.data(), in_b.size())), Status::Ok);
  ASSERT_EQ(t.b->send(make_send(t.b_to_a, pong, sizeof pong, nullptr, kOpInject)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return count_recv(t.sink_a) == 1; }));
  // a's next request acknowledges b's reply: b defers that ACK, and b never replies again.
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, ping, sizeof ping, nullptr, kOpInject)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return count_recv(t.sink_b) == 2; }));
  EXPECT_EQ(t.b->stats().acks_deferred, 1u);
  EXPECT_EQ(t.b->sends_in_use(), 1u);  // the reply, acknowledged but not yet processed
  // The next rounds apply it: b's reply slot comes back and nothing is resent.
  ASSERT_TRUE(t.run_until([&] { return t.b->sends_in_use() == 0 && !t.b->busy(); }));
  EXPECT_EQ(t.a->stats().retx_pkts + t.b->stats().retx_pkts, 0u);
  EXPECT_EQ(t.b->stats().rto_events, 0u);
}

TEST_F(DeferredAck, AReplyPostedLaterThanTheRtoAfterTheRequestIsNotResent) {
  ping_pong(3, kOpInject, false);
  // a's request acknowledges b's last reply; b defers that ACK, then takes 5 RTOs to reply.
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, ping, sizeof ping, nullptr, kOpInject)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return count_recv(t.sink_b) == 4; }));
  ASSERT_EQ(t.b->stats().acks_deferred, 3u);
  t.clock.set(t.clock.now_ns() + 5 * EngineConfig{}.rto_min_ns);
  ASSERT_EQ(t.b->recv(make_recv(in_b.data(), in_b.size())), Status::Ok);
  ASSERT_EQ(t.b->send(make_send(t.b_to_a, pong, sizeof pong, nullptr, kOpInject)), Status::Ok);
  // b's next round must not time the reply from the request's arrival.
  t.step();
  EXPECT_EQ(t.b->stats().rto_events, 0u);
  EXPECT_EQ(t.b->stats().retx_pkts, 0u);
  ASSERT_TRUE(t.run_until([&] { return count_recv(t.sink_a) == 4 && !t.a->busy() && !t.b->busy(); }));
  // (a may resend its request: b, away for 5 RTOs, acknowledged it only with the reply.)
  EXPECT_EQ(t.b->stats().retx_pkts, 0u);
  EXPECT_EQ(t.b->stats().rto_events, 0u);
}

TEST_F(DeferredAck, ATimerDueInTheRoundThatBringsTheAckSeesItFirst) {
  ping_pong(3, kOpInject, false);
  const uint64_t deferred = t.a->stats().acks_deferred;
  // a sends a request; b replies at once; the reply (which acknowledges the request) reaches
  // a only after a has been away for longer than its RTO: the round that takes the reply in
  // must not resend the acknowledged request.
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, ping, sizeof ping, nullptr, kOpInject)), Status::Ok);
  PacketBuf bufs[32];
  for (int i = 0; i < 100 && count_recv(t.sink_b) < 4; ++i) {  // b only: a stays away
    t.clock.set(t.clock.now_ns() + 1'000);
    for (uint16_t n; (n = t.link.b().rx_burst(bufs, 32)) > 0;)
      for (uint16_t k = 0; k < n; ++k) t.b->on_packet(bufs[k]);
    t.b->progress();
  }
  ASSERT_EQ(count_recv(t.sink_b), 4u);
  ASSERT_EQ(t.b->recv(make_recv(in_b.data(), in_b.size())), Status::Ok);
  ASSERT_EQ(t.b->send(make_send(t.b_to_a, pong, sizeof pong, nullptr, kOpInject)), Status::Ok);
  t.clock.set(t.clock.now_ns() + 3 * EngineConfig{}.rto_initial_ns);
  t.step();  // a: the reply (its ACK deferred) and a progress round with the RTO long due
  EXPECT_EQ(count_recv(t.sink_a), 4u);
  EXPECT_EQ(t.a->stats().acks_deferred, deferred + 1);
  EXPECT_EQ(t.a->stats().rto_events, 0u);
  EXPECT_EQ(t.a->stats().retx_pkts, 0u);
}

TEST(DeferredAckSlots, ASendThatFindsTheTxSlotsHeldByADeferredAckAppliesItFirst) {
  EngineConfig cb;
  cb.tx_size = 1;  // b's one send slot: its reply's, until the reply is acknowledged
  Pair t({}, {}, cb);
  char in_a[16], in_b[16], ping[16] = "ping", pong[16] = "pong";
  const auto got = [](const RecordingSink& s) {
    size_t n = 0;
    for (const auto& c : s.comps) n += (c.flags & kCompRecv) && c.status == Status::Ok;
    return n;
  };
  ASSERT_EQ(t.b->recv(make_recv(in_b, sizeof in_b)), Status::Ok);
  ASSERT_EQ(t.a->recv(make_recv(in_a, sizeof in_a)), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, ping, sizeof ping, nullptr, kOpInject)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return got(t.sink_b) == 1; }));
  ASSERT_EQ(t.b->recv(make_recv(in_b, sizeof in_b)), Status::Ok);
  ASSERT_EQ(t.b->send(make_send(t.b_to_a, pong, sizeof pong, nullptr, kOpInject)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return got(t.sink_a) == 1; }));
  ASSERT_EQ(t.a->recv(make_recv(in_a, sizeof in_a)), Status::Ok);
  // a's next request acknowledges b's reply; b defers that ACK, so the reply holds b's slot.
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, ping, sizeof ping, nullptr, kOpInject)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return got(t.sink_b) == 2; }));
  ASSERT_EQ(t.b->stats().acks_deferred, 1u);
  ASSERT_EQ(t.b->sends_in_use(), 1u);
  // The next reply finds no free slot but one that only the deferred ACK holds: not refused.
  EXPECT_EQ(t.b->send(make_send(t.b_to_a, pong, sizeof pong, nullptr, kOpInject)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return got(t.sink_a) == 2; }));
}

}  // namespace
}  // namespace pollfab::transport::test
