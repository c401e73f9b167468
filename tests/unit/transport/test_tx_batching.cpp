// Batching across posts (transmit.cpp): the first post after a progress() leaves at once in a tx
// burst of its own (a ping-pong pays no wait); the posts after it queue until the next
// progress(), which sends them as one burst, or until Engine::kTxBurst packets wait. FI_MORE
// (kOpMore) always queues. What the application sees: the same messages, in order, complete;
// what the link sees: fewer, fuller bursts.
#include <gtest/gtest.h>

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
};

TEST_F(Batching, TheFirstPostLeavesAtOnceTheRestAtTheNextProgress) {
  char in[10][8] = {}, out[10][8] = {};
  for (int i = 0; i < 10; ++i) {
    out[i][0] = char('a' + i);
    ASSERT_EQ(b.recv(make_recv(in[i], sizeof in[i], in[i])), Status::Ok);
  }
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
  ASSERT_TRUE(run_until([&] { return sink_a.comps.size() == 10 && sink_b.comps.size() == 10; }));
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(sink_b.comps[size_t(i)].context, in[i]) << "in order";
    EXPECT_EQ(in[i][0], char('a' + i));
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
