// Batching across posts (transmit.cpp): the first post after a progress() to a peer with
// nothing of ours in flight leaves at once in a tx burst of its own (a ping-pong pays no
// wait); the posts after it, and a post behind sends still in flight, queue until the next
// progress(), which sends them as one burst, or until Engine::kTxBurst packets wait. FI_MORE
// (kOpMore) always queues; the post that ends an FI_MORE batch sends it (unless a post already
// left at once since the last progress()), stamped when it leaves. What the application
// sees: the same messages, in order, complete; what the link sees: fewer, fuller bursts.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/unit/transport/harness.hpp"
#include "transport/packet_io_filter.hpp"

namespace pollfab::transport::test {
namespace {

using util::Status;

// Counts the tx bursts and packets that reach the link.
struct BurstCounter final : PacketIoFilter {
  using PacketIoFilter::PacketIoFilter;
  uint16_t tx_burst(PacketBuf* pkts, uint16_t n) noexcept override {
    ++bursts;
    sizes.push_back(n);
    return inner_.tx_burst(pkts, n);
  }
  uint32_t bursts = 0;
  std::vector<uint16_t> sizes;
};

struct Batching : ::testing::Test {
  EngineConfig cfg() {
    EngineConfig c;
    c.cc = false;  // the window is the receiver's alone: every post may go at once
    c.bundle_max_bytes = 0;  // one message a packet: these tests count packets per burst
    return c;
  }
  ManualClock clock;
  MemLink link{MemLinkConfig{}, clock};
  BurstCounter counter{link.a()};
  RecordingSink sink_a, sink_b;
  Engine a{[this] { auto c = cfg(); c.ep_id = 1; return c; }(), counter, clock, sink_a};
  Engine b{[this] { auto c = cfg(); c.ep_id = 2; return c; }(), link.b(), clock, sink_b};
  PeerId to_b = a.peer(PeerAddr{link.host(1), 2});

  bool run_until(const std::function<bool()>& pred) {
    return drive_until(link, clock, a, b, pred, 100000);
  }
  // n messages 'a', 'b', ... of 8 bytes: out[i] to send, in[i] posted at b to receive it.
  void post_receives(char (*in)[8], char (*out)[8], int n) {
    for (int i = 0; i < n; ++i) {
      out[i][0] = char('a' + i);
      ASSERT_EQ(b.recv(make_recv(in[i], sizeof in[i], in[i])), Status::Ok);
    }
  }
  // Once all n are through: b completed them in posting order, each with its own message.
  void expect_in_order(char (*in)[8], int n) {
    ASSERT_TRUE(run_until([&] { return sink_a.comps.size() == size_t(n) && sink_b.comps.size() == size_t(n); }));
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(sink_b.comps[size_t(i)].context, in[i]) << "in order";
      EXPECT_EQ(in[i][0], char('a' + i));
    }
  }
};

TEST_F(Batching, TheFirstPostLeavesAtOnceTheRestAtTheNextProgress) {
  char in[10][8] = {}, out[10][8] = {};
  ASSERT_NO_FATAL_FAILURE(post_receives(in, out, 10));
  ASSERT_EQ(a.send(make_send(to_b, out[0], 8, out[0])), Status::Ok);
  EXPECT_EQ(counter.bursts, 1u) << "the first post since progress() is not held back";
  EXPECT_EQ(counter.sizes.back(), 1u);
  for (int i = 1; i < 10; ++i) ASSERT_EQ(a.send(make_send(to_b, out[i], 8, out[i])), Status::Ok);
  EXPECT_EQ(counter.bursts, 1u) << "later posts wait for the next progress()";
  EXPECT_NE(a.next_deadline_ns(), UINT64_MAX);  // a sleeper must not sleep on queued packets
  EXPECT_EQ(a.next_deadline_ns(), 0u);
  a.progress();
  ASSERT_EQ(counter.bursts, 2u);
  EXPECT_EQ(counter.sizes.back(), 9u) << "the nine queued posts leave as one burst";
  expect_in_order(in, 10);
}

TEST_F(Batching, APostBehindSendsInFlightWaitsForTheNextProgress) {
  // A window of small sends: a refill after a progress round would otherwise open with a
  // packet of its own, one message in it, every time.
  char in[5][8] = {}, out[5][8] = {};
  ASSERT_NO_FATAL_FAILURE(post_receives(in, out, 5));
  ASSERT_EQ(a.send(make_send(to_b, out[0], 8, out[0])), Status::Ok);
  ASSERT_EQ(counter.bursts, 1u) << "nothing in flight: at once";
  a.progress();  // the message is still in flight (the link's latency has not passed)
  ASSERT_EQ(counter.bursts, 1u);
  ASSERT_EQ(a.send(make_send(to_b, out[1], 8, out[1])), Status::Ok);
  ASSERT_EQ(a.send(make_send(to_b, out[2], 8, out[2])), Status::Ok);
  EXPECT_EQ(counter.bursts, 1u) << "behind a send in flight, the first post since progress() waits";
  EXPECT_EQ(a.next_deadline_ns(), 0u) << "a sleeper must not sleep on queued packets";
  a.progress();
  ASSERT_EQ(counter.bursts, 2u);
  EXPECT_EQ(counter.sizes.back(), 2u) << "and leaves with the post after it, in one burst";
  // An FI_MORE batch behind sends in flight leaves when its last post comes.
  ASSERT_EQ(a.send(make_send(to_b, out[3], 8, out[3], kOpCompletion | kOpMore)), Status::Ok);
  ASSERT_EQ(a.send(make_send(to_b, out[4], 8, out[4])), Status::Ok);
  ASSERT_EQ(counter.bursts, 3u) << "the batch's end sends it";
  EXPECT_EQ(counter.sizes.back(), 2u);
  expect_in_order(in, 5);
}

TEST_F(Batching, AnFiMoreBatchBehindSendsInFlightIsStampedWhenItLeaves) {
  // The application computes 300 us between a progress round and a batch it posts behind a
  // send whose ACK it has not read yet: the batch's posts read no clock, and the batch must
  // not leave stamped with the round's reading (its probe, due two RTTs after that, would
  // resend it at once although nothing was lost).
  char in[11][8] = {}, out[11][8] = {};
  for (int i = 0; i < 8; ++i) {  // round trips: an RTT estimate for the probe's timing
    ASSERT_EQ(b.recv(make_recv(in[i], sizeof in[i], in[i])), Status::Ok);
    ASSERT_EQ(a.send(make_send(to_b, out[i], 8, out[i])), Status::Ok);
    ASSERT_TRUE(run_until([&] { return sink_a.comps.size() == size_t(i) + 1; }));
  }
  for (int i = 8; i < 11; ++i) ASSERT_EQ(b.recv(make_recv(in[i], sizeof in[i], in[i])), Status::Ok);
  ASSERT_EQ(a.send(make_send(to_b, out[8], 8, out[8])), Status::Ok);  // leaves at once
  a.progress();  // the round before the application's computation
  // 300 us without a call into a; b receives and acknowledges meanwhile (the ACK waits).
  PacketBuf bufs[32];
  for (int k = 0; k < 30; ++k) {
    clock.advance(10'000);
    for (uint16_t n; (n = link.b().rx_burst(bufs, 32)) > 0;)
      for (uint16_t j = 0; j < n; ++j) b.on_packet(bufs[j]);
    b.progress();
  }
  ASSERT_EQ(a.send(make_send(to_b, out[9], 8, out[9], kOpCompletion | kOpMore)), Status::Ok);
  ASSERT_EQ(a.send(make_send(to_b, out[10], 8, out[10])), Status::Ok);  // the batch's end
  ASSERT_TRUE(run_until([&] { return sink_a.comps.size() == 11 && sink_b.comps.size() == 11; }));
  EXPECT_EQ(a.stats().retx_pkts, 0u) << "nothing was lost";
  EXPECT_EQ(b.stats().dup_pkts, 0u);
}

TEST_F(Batching, EachReplyOfAPingPongLeavesAtOnce) {
  // b asks, a answers: the request acknowledges a's previous answer, so a has nothing in
  // flight when it answers and its answer does not wait for a's next call.
  char req[8] = "ping", got_req[8], ans[8] = "pong", got_ans[8];
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(a.recv(make_recv(got_req, sizeof got_req, got_req)), Status::Ok);
    ASSERT_EQ(b.recv(make_recv(got_ans, sizeof got_ans, got_ans)), Status::Ok);
    ASSERT_EQ(b.send(make_send(b.peer(PeerAddr{link.host(0), 1}), req, 8)), Status::Ok);
    const auto received = [](const RecordingSink& k, const void* ctx) {
      return std::count_if(k.comps.begin(), k.comps.end(),
                           [&](const Completion& c) { return c.context == ctx; });
    };
    ASSERT_TRUE(run_until([&] { return received(sink_a, got_req) == i + 1; }));
    const uint32_t before = counter.bursts;
    ASSERT_EQ(a.send(make_send(to_b, ans, 8)), Status::Ok);
    EXPECT_EQ(counter.bursts, before + 1) << "answer " << i << " left at once";
    ASSERT_TRUE(run_until([&] { return received(sink_b, got_ans) == i + 1; }));
  }
}

TEST_F(Batching, AFullBurstLeavesWithoutWaitingForProgress) {
  std::vector<std::vector<char>> out(100, std::vector<char>(16, 'x'));
  std::vector<std::vector<char>> in(100, std::vector<char>(16));
  for (auto& r : in) ASSERT_EQ(b.recv(make_recv(r.data(), r.size(), r.data())), Status::Ok);
  for (auto& s : out) ASSERT_EQ(a.send(make_send(to_b, s.data(), s.size(), s.data())), Status::Ok);
  // 1 at once, then a burst each time kTxBurst wait: 1 + 32 + 32 + 32 = 97 sent, 3 queued.
  ASSERT_EQ(counter.sizes.size(), 4u);
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(counter.sizes[i], Engine::kTxBurst);
  ASSERT_TRUE(run_until([&] { return sink_a.comps.size() == 100 && sink_b.comps.size() == 100; }));
  for (const Completion& c : sink_b.comps) EXPECT_EQ(c.status, Status::Ok);
}

TEST_F(Batching, FiMoreQueuesEvenTheFirstPost) {
  char in[8] = {}, out[8] = "m";
  ASSERT_EQ(b.recv(make_recv(in, sizeof in, in)), Status::Ok);
  ASSERT_EQ(a.send(make_send(to_b, out, 8, out, kOpCompletion | kOpMore)), Status::Ok);
  EXPECT_EQ(counter.bursts, 0u);
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() == 1; }));
  EXPECT_EQ(in[0], 'm');
}

// A message of several segments (up to Engine::kTxBurst) posted to an idle peer: its first
// segment leaves in a burst of its own, before the others are built (the receiver works on it
// meanwhile), and the rest in the post's own burst. Behind sends in flight, under FI_MORE, or
// longer than a burst, nothing leaves early.
TEST_F(Batching, AFirstSegmentToAnIdlePeerLeavesAloneAndTheRestAtThePost) {
  const size_t len = 2 * a.segment_bytes() + 100;  // three segments
  std::vector<char> out(len), in1(len), in2(len), in3(len);
  for (size_t i = 0; i < len; ++i) out[i] = char('a' + i % 23);
  for (auto* r : {&in1, &in2, &in3})
    ASSERT_EQ(b.recv(make_recv(r->data(), len, r->data())), Status::Ok);
  ASSERT_EQ(a.send(make_send(to_b, out.data(), len, &in1)), Status::Ok);
  ASSERT_EQ(counter.sizes, (std::vector<uint16_t>{1, 2})) << "the first segment, then the rest";
  a.progress();  // the round's first post may go early again; the first message is in flight
  ASSERT_EQ(counter.bursts, 2u);
  ASSERT_EQ(a.send(make_send(to_b, out.data(), len, &in2)), Status::Ok);  // behind the first
  EXPECT_EQ(counter.bursts, 2u) << "behind a send in flight the post waits for progress()";
  a.progress();
  ASSERT_EQ(counter.bursts, 3u);
  EXPECT_EQ(counter.sizes.back(), 3u);
  ASSERT_TRUE(run_until([&] { return sink_a.comps.size() == 2 && sink_b.comps.size() == 2; }));
  a.progress();
  const uint32_t before = counter.bursts;
  ASSERT_EQ(a.send(make_send(to_b, out.data(), len, &in3, kOpCompletion | kOpMore)), Status::Ok);
  EXPECT_EQ(counter.bursts, before) << "FI_MORE: not even the first segment leaves early";
  ASSERT_TRUE(run_until([&] { return sink_a.comps.size() == 3 && sink_b.comps.size() == 3; }));
  for (auto* r : {&in1, &in2, &in3}) EXPECT_EQ(*r, out);
  // Exactly a burst's segments: the first leaves alone; one segment more: it does not (the
  // post would build for longer than the first one's probe may wait for its ACK).
  for (const uint32_t segs : {Engine::kTxBurst, Engine::kTxBurst + 1}) {
    const size_t n = segs * size_t(a.segment_bytes());
    std::vector<char> big_out(n, char('0' + segs % 10)), big_in(n);
    ASSERT_EQ(b.recv(make_recv(big_in.data(), n, big_in.data())), Status::Ok);
    a.progress();
    const size_t first = counter.sizes.size();
    const size_t done = sink_b.comps.size();
    ASSERT_EQ(a.send(make_send(to_b, big_out.data(), n, &big_in)), Status::Ok);
    ASSERT_GT(counter.sizes.size(), first);
    if (segs == Engine::kTxBurst) EXPECT_EQ(counter.sizes[first], 1u) << segs << " segments";
    else EXPECT_GT(counter.sizes[first], 1u) << segs << " segments: no burst of one";
    ASSERT_TRUE(run_until(
        [&] { return sink_a.comps.size() == done + 1 && sink_b.comps.size() == done + 1; }));
    EXPECT_EQ(big_in, big_out);
  }
  EXPECT_EQ(a.stats().retx_pkts, 0u);
}

// Only the round's first post goes early (tx_eager_), and not the one that ends an FI_MORE
// batch: a second idle peer's message, or a message after an FI_MORE post, leaves whole in one
// burst (with the batch), never as a first segment alone with the rest waiting. (The other
// peers have no engine behind them: what a sends them is counted, never answered.)
TEST_F(Batching, OnlyTheRoundsFirstPostSendsAFirstSegmentAlone) {
  const size_t len = 2 * a.segment_bytes() + 100;
  std::vector<char> out(len, 'm'), in(len);
  const PeerId other = a.peer(PeerAddr{link.host(1), 3});
  const PeerId third = a.peer(PeerAddr{link.host(1), 4});
  ASSERT_EQ(b.recv(make_recv(in.data(), len, in.data())), Status::Ok);
  ASSERT_EQ(a.send(make_send(to_b, out.data(), len, &in)), Status::Ok);
  ASSERT_EQ(counter.sizes, (std::vector<uint16_t>{1, 2}));
  ASSERT_EQ(a.send(make_send(other, out.data(), len, nullptr)), Status::Ok);
  EXPECT_EQ(counter.bursts, 2u) << "the round's second post queues, first segment included";
  a.progress();
  ASSERT_EQ(counter.bursts, 3u);
  EXPECT_EQ(counter.sizes.back(), 3u);
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() == 1 && sink_a.comps.size() == 1; }));
  EXPECT_EQ(in, out);
  // An FI_MORE post to b, then a plain one to an idle peer: the batch leaves whole at its end.
  char small[8] = "s", small_in[8] = {};
  ASSERT_EQ(b.recv(make_recv(small_in, sizeof small_in, small_in)), Status::Ok);
  a.progress();
  const size_t first = counter.sizes.size();
  ASSERT_EQ(a.send(make_send(to_b, small, 8, small, kOpCompletion | kOpMore)), Status::Ok);
  ASSERT_EQ(a.send(make_send(third, out.data(), len, nullptr)), Status::Ok);
  ASSERT_EQ(counter.sizes.size(), first + 1) << "one burst: the batch's end";
  EXPECT_EQ(counter.sizes.back(), 4u);
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() == 2; }));
  EXPECT_EQ(small_in[0], 's');
}

// A read's answer is queued inside progress() and leaves with the round's one flush: all its
// segments in one burst, never a first segment alone (the early segment is for posts).
TEST_F(Batching, AReadAnswerOfSeveralSegmentsLeavesInOneBurst) {
  TestMrs mrs;
  auto& mr = mrs.regions[9];
  mr.access = kAccessRemoteRead;
  const size_t len = 2 * a.segment_bytes() + 100;
  mr.bytes.resize(len);
  for (size_t i = 0; i < len; ++i) mr.bytes[i] = uint8_t(i * 7);
  a.set_mr_lookup(&mrs);
  std::vector<uint8_t> back(len);
  RmaOp op;
  op.kind = RmaKind::Read;
  op.peer = b.peer(PeerAddr{link.host(0), 1});
  op.iov[0] = {back.data(), len};
  op.iov_count = 1;
  op.key = 9;
  op.flags = kOpCompletion;
  ASSERT_EQ(b.rma(op), Status::Ok);
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() == 1; }));
  EXPECT_EQ(sink_b.comps[0].status, Status::Ok);
  EXPECT_EQ(back, mr.bytes);
  ASSERT_FALSE(counter.sizes.empty());
  EXPECT_EQ(counter.sizes.front(), 3u) << "the answer's three segments in one burst";
}

// An RMA write under FI_MORE waits for its batch's end like a send (rma.cpp keeps only
// kOpCqData of a write's flags in the message: the early first segment is for sends).
TEST_F(Batching, AnRmaWriteUnderFiMoreSendsNothingEarly) {
  TestMrs mrs;
  auto& mr = mrs.regions[9];
  mr.access = kAccessRemoteWrite;
  const size_t len = 2 * a.segment_bytes() + 100;
  mr.bytes.assign(len, 0);
  b.set_mr_lookup(&mrs);
  std::vector<uint8_t> src(len);
  for (size_t i = 0; i < len; ++i) src[i] = uint8_t(i * 13 + 1);
  RmaOp op;
  op.kind = RmaKind::Write;
  op.peer = to_b;
  op.iov[0] = {src.data(), len};
  op.iov_count = 1;
  op.key = 9;
  op.flags = kOpCompletion | kOpMore;
  ASSERT_EQ(a.rma(op), Status::Ok);
  EXPECT_EQ(counter.bursts, 0u) << "FI_MORE: not even the first segment leaves";
  ASSERT_TRUE(run_until([&] { return sink_a.comps.size() == 1; }));
  EXPECT_EQ(sink_a.comps[0].status, Status::Ok);
  EXPECT_EQ(mr.bytes, src);
}

// A packet that waits in the queue (FI_MORE, then no progress for five RTOs) is timed from
// when it leaves, not from its post: the round that sends it does not also resend it.
TEST_F(Batching, AQueuedPacketIsTimedFromWhenItLeaves) {
  char in[8] = {}, out[8] = "q";
  ASSERT_EQ(b.recv(make_recv(in, sizeof in, in)), Status::Ok);
  ASSERT_EQ(a.send(make_send(to_b, out, 8, out, kOpCompletion | kOpMore)), Status::Ok);
  clock.advance(5 * EngineConfig{}.rto_initial_ns);
  a.progress();
  EXPECT_EQ(counter.bursts, 1u);
  EXPECT_EQ(a.stats().rto_events, 0u);
  EXPECT_EQ(a.stats().retx_pkts, 0u) << "resent in the round that first sent it";
  ASSERT_TRUE(run_until([&] { return sink_a.comps.size() == 1 && sink_b.comps.size() == 1; }));
  EXPECT_EQ(a.stats().retx_pkts, 0u);
  EXPECT_EQ(in[0], 'q');
}

}  // namespace
}  // namespace pollfab::transport::test
