// Send completion levels (fi_cq(3) "completion semantics"): by default a send completes when the
// target has acknowledged it (FI_TRANSMIT_COMPLETE: received, possibly buffered as unexpected);
// with kOpDeliveryComplete (FI_DELIVERY_COMPLETE) only once the target has placed it in a
// receive buffer or discarded it. kOpMore (FI_MORE) defers the flush to the next call.
#include <gtest/gtest.h>

#include "tests/unit/transport/harness.hpp"

namespace pollfab::transport::test {
namespace {

using util::Status;

constexpr uint32_t kDc = kOpCompletion | kOpDeliveryComplete;

TEST(SendCompletion, TransmitCompleteDoesNotWaitForAReceive) {
  Pair t;
  uint8_t msg[100] = {};
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, msg, sizeof msg)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return !t.sink_a.comps.empty(); }));
  EXPECT_EQ(t.b->unexpected_in_use(), 1u);  // buffered, not placed: yet complete
}

TEST(SendCompletion, DeliveryCompleteWaitsUntilTheTargetPlacesIt) {
  Pair t;
  std::vector<uint8_t> big(50'000, 3), small(10, 4), in_big(50'000), in_small(10);
  int c1, c2;
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, big.data(), big.size(), &c1, kDc)), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, small.data(), small.size(), &c2, kDc)), Status::Ok);
  // Both arrive and are acknowledged, but stay unexpected: no completion yet.
  ASSERT_TRUE(t.run_until([&] { return t.b->unexpected_in_use() == 2 && !t.b->busy(); }));
  for (int i = 0; i < 100; ++i) t.step();
  EXPECT_TRUE(t.sink_a.comps.empty());
  ASSERT_EQ(t.b->recv(make_recv(in_small.data(), in_small.size())), Status::Ok);  // takes big: truncated
  ASSERT_TRUE(t.run_until([&] { return t.sink_a.comps.size() == 1; }));
  EXPECT_EQ(t.sink_a.comps[0].context, &c1);
  EXPECT_EQ(t.sink_a.comps[0].status, Status::Ok);  // placed (truncated at the target is its news)
  EXPECT_EQ(t.sink_a.comps[0].flags, kCompSend);
  // The second is discarded by a peek: processed, so it completes too.
  RecvOp p = make_recv(nullptr, 0, nullptr, kAnyPeer, kOpPeek | kOpDiscard);
  p.iov_count = 0;
  ASSERT_EQ(t.b->recv(p), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_a.comps.size() == 2; }));
  EXPECT_EQ(t.sink_a.comps[1].context, &c2);
  // A posted receive first: the answer follows the placement at once.
  int c3;
  ASSERT_EQ(t.b->recv(make_recv(in_big.data(), in_big.size())), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, big.data(), big.size(), &c3, kDc)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_a.comps.size() == 3; }));
  EXPECT_EQ(t.sink_a.comps[2].context, &c3);
  EXPECT_EQ(in_big, big);
  ASSERT_TRUE(t.run_until([&] { return t.a->sends_in_use() == 0 && t.b->sends_in_use() == 0; }));
}

TEST(SendCompletion, DeliveryCompleteUnderFaultsCompletesEachExactlyOnce) {
  MemLinkConfig lc;
  lc.fault_ab = {0.05, 0.02, 0.05, 0.0, 21};
  lc.fault_ba = {0.05, 0.02, 0.05, 0.0, 22};
  Pair t(lc);
  constexpr int kN = 300;
  std::vector<std::vector<uint8_t>> out(kN), in(kN);
  for (int i = 0; i < kN; ++i) {
    out[i].assign(size_t(1 + i * 97 % 5000), uint8_t(i));
    in[i].resize(out[i].size());
    if (i % 2) {
      ASSERT_EQ(t.b->recv(make_recv(in[i].data(), in[i].size(), &in[i])), Status::Ok);
    }
  }
  for (int i = 0; i < kN; ++i) {
    Status st;
    while ((st = t.a->send(make_send(t.a_to_b, out[i].data(), out[i].size(), &out[i], kDc))) ==
           Status::NoResource)
      t.step();
    ASSERT_EQ(st, Status::Ok);
  }
  // Half were posted: receives take the messages in order, so the first kN/2 messages land in
  // them; post the rest now.
  for (int i = 0; i < kN; ++i)
    if (!(i % 2)) {
      ASSERT_EQ(t.b->recv(make_recv(in[i].data(), in[i].size(), &in[i])), Status::Ok);
    }
  ASSERT_TRUE(t.run_until([&] { return t.sink_a.comps.size() == size_t(kN); }));
  std::vector<int> seen(kN, 0);
  for (const Completion& c : t.sink_a.comps) {
    EXPECT_EQ(c.status, Status::Ok);
    const auto* v = static_cast<const std::vector<uint8_t>*>(c.context);
    ++seen[v - out.data()];
  }
  for (int i = 0; i < kN; ++i) EXPECT_EQ(seen[i], 1) << i;
  ASSERT_TRUE(t.run_until([&] { return t.a->sends_in_use() == 0 && t.b->sends_in_use() == 0; }));
}

TEST(SendCompletion, TheSendsOfAnAckCompleteInBurstsInPostOrder) {
  Pair t;
  constexpr int kN = 200;
  std::vector<std::vector<uint8_t>> out(kN);
  std::vector<int> dc_ctx(1);
  for (int i = 0; i < kN; ++i) {
    out[i].assign(size_t(1 + i * 37 % 900), uint8_t(i));  // small enough to copy, not attach
    uint32_t f = kOpCompletion;
    if (i % 3 == 1) f |= kOpTagged;
    if (i % 7 == 3) f = kOpInject;  // counted, no CQ entry
    SendOp op = make_send(t.a_to_b, out[i].data(), out[i].size(), &out[i], f);
    op.tag = uint64_t(i);
    if (i == kN / 2) {  // completes on the target's answer, through on_completion
      ASSERT_EQ(t.a->send(make_send(t.a_to_b, out[i].data(), out[i].size(), &dc_ctx[0], kDc)),
                Status::Ok);
      continue;
    }
    Status st;
    while ((st = t.a->send(op)) == Status::NoResource) t.step();
    ASSERT_EQ(st, Status::Ok) << i;
  }
  std::vector<std::vector<uint8_t>> in(kN);
  for (int i = 0; i < kN; ++i) {
    in[i].resize(900);
    RecvOp r = make_recv(in[i].data(), in[i].size(), nullptr, kAnyPeer,
                         kOpCompletion | ((i % 3 == 1 && i % 7 != 3 && i != kN / 2) ? kOpTagged : 0));
    r.ignore = ~0ull;
    ASSERT_EQ(t.b->recv(r), Status::Ok);
  }
  ASSERT_TRUE(t.run_until([&] { return t.sink_a.comps.size() == size_t(kN); }));
  EXPECT_EQ(t.b->unexpected_in_use(), 0u);  // every message found its receive
  // The bursts: several sends per call, never more than the engine's burst.
  uint32_t in_bursts = 0, most = 0;
  for (uint32_t n : t.sink_a.send_bursts) {
    EXPECT_GE(n, 1u);
    in_bursts += n;
    most = std::max(most, n);
  }
  EXPECT_EQ(in_bursts, uint32_t(kN - 1));  // all but the delivery-complete send
  EXPECT_GT(most, 1u);
  EXPECT_LE(most, 32u);
  // Each as on_completion would have had it, in the order posted.
  int next = 0;
  for (const Completion& c : t.sink_a.comps) {
    if (c.context == &dc_ctx[0]) continue;
    if (next == kN / 2) ++next;
    ASSERT_LT(next, kN);
    EXPECT_EQ(c.context, &out[next]) << next;
    EXPECT_EQ(c.status, Status::Ok);
    EXPECT_EQ(c.len, out[next].size());
    EXPECT_EQ(c.cq_entry, next % 7 != 3) << next;
    const bool tagged = next % 3 == 1 && next % 7 != 3;
    EXPECT_EQ(c.flags, kCompSend | (tagged ? kCompTagged : 0u)) << next;
    ++next;
  }
  EXPECT_EQ(next, kN);
}

TEST(SendCompletion, MoreDefersTheFlush) {
  Pair t;
  uint8_t m[8] = {};
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, m, sizeof m, nullptr, kOpCompletion | kOpMore)), Status::Ok);
  EXPECT_EQ(t.a->stats().tx_pkts, 0u);  // queued, not yet handed to the link
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, m, sizeof m)), Status::Ok);  // the last of the batch
  // Both leave now, the second in the first's packet (bundling: the first was still queued).
  EXPECT_EQ(t.a->stats().tx_pkts, 1u);
  EXPECT_EQ(t.a->stats().bundled_msgs, 1u);
}

}  // namespace
}  // namespace pollfab::transport::test
