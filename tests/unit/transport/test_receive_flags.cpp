// Receive flags on messages that are still arriving (the model test, test_matching_model.cpp,
// covers whole messages): FI_PEEK|FI_CLAIM then FI_CLAIM, FI_PEEK|FI_DISCARD, and
// multi-recv buffers whose slices are open when the buffer retires or is cancelled.
#include <gtest/gtest.h>

#include "tests/unit/transport/harness.hpp"

namespace pollfab::transport::test {
namespace {

using util::Status;

constexpr size_t kBig = 2'000'000;  // ~1500 segments: many round trips to arrive

// Sends a big message a -> b and steps until b has started (not finished) receiving it.
void start_big(Pair& t, std::vector<uint8_t>& msg, uint32_t flags = kOpCompletion | kOpTagged) {
  msg.resize(kBig);
  fill_xorshift(msg.data(), msg.size(), 77);
  SendOp s = make_send(t.a_to_b, msg.data(), msg.size(), nullptr, flags);
  s.tag = 0x99;
  ASSERT_EQ(t.a->send(s), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.b->unexpected_in_use() == 1 || !t.sink_b.comps.empty(); }));
  ASSERT_LT(t.b->stats().rx_bytes, kBig);  // still arriving
}

TEST(ReceiveFlags, PeekClaimThenClaimAMessageStillArriving) {
  Pair t;
  std::vector<uint8_t> msg, out(kBig + 10);
  start_big(t, msg);
  int peek_ctx;
  RecvOp p = make_recv(nullptr, 0, &peek_ctx, kAnyPeer, kOpTagged | kOpPeek | kOpClaim);
  p.iov_count = 0;
  p.tag = 0x99;
  ASSERT_EQ(t.b->recv(p), Status::Ok);
  ASSERT_EQ(t.sink_b.comps.size(), 1u);
  EXPECT_EQ(t.sink_b.comps[0].status, Status::Ok);
  EXPECT_EQ(t.sink_b.comps[0].len, kBig);  // the whole message's length, known from segment 1
  EXPECT_EQ(t.sink_b.comps[0].tag, 0x99u);
  // Claimed: an ordinary receive no longer sees it.
  RecvOp other = make_recv(out.data(), out.size(), nullptr, kAnyPeer, kOpTagged | kOpPeek);
  other.tag = 0x99;
  ASSERT_EQ(t.b->recv(other), Status::Ok);
  EXPECT_EQ(t.sink_b.comps.back().status, Status::NoMessage);
  RecvOp c = make_recv(out.data(), out.size(), &peek_ctx, kAnyPeer,
                       kOpTagged | kOpClaim | kOpCompletion);
  ASSERT_EQ(t.b->recv(c), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_b.comps.size() == 3; }));
  EXPECT_EQ(t.sink_b.comps[2].context, &peek_ctx);
  EXPECT_EQ(t.sink_b.comps[2].status, Status::Ok);
  EXPECT_EQ(t.sink_b.comps[2].len, kBig);
  EXPECT_TRUE(std::equal(msg.begin(), msg.end(), out.begin()));
  EXPECT_EQ(t.b->unexpected_in_use(), 0u);
  EXPECT_EQ(t.b->recvs_in_use(), 0u);
}

TEST(ReceiveFlags, PeekDiscardDropsAMessageStillArriving) {
  Pair t;
  std::vector<uint8_t> msg, out(kBig);
  start_big(t, msg);
  RecvOp p = make_recv(nullptr, 0, nullptr, kAnyPeer, kOpTagged | kOpPeek | kOpDiscard);
  p.iov_count = 0;
  p.tag = 0x99;
  ASSERT_EQ(t.b->recv(p), Status::Ok);
  ASSERT_EQ(t.sink_b.comps.size(), 1u);
  EXPECT_EQ(t.sink_b.comps[0].len, kBig);
  RecvOp r = make_recv(out.data(), out.size(), nullptr, kAnyPeer, kOpTagged | kOpCompletion);
  r.tag = 0x99;
  ASSERT_EQ(t.b->recv(r), Status::Ok);  // posted: the discarded message never reaches it
  ASSERT_TRUE(t.run_until([&] { return !t.sink_a.comps.empty(); }));
  EXPECT_EQ(t.sink_b.comps.size(), 1u);
  EXPECT_EQ(t.b->unexpected_in_use(), 0u);  // freed when its last segment came in
  EXPECT_TRUE(t.b->cancel_recv(nullptr));
}

TEST(ReceiveFlags, MultiRecvBufferCancelledWithASliceOpenIsReleasedByTheSlice) {
  Pair t;
  std::vector<uint8_t> buf(2 * kBig);
  int ctx;
  RecvOp m = make_recv(buf.data(), buf.size(), &ctx, kAnyPeer, kOpMultiRecv | kOpCompletion);
  m.min_multi_recv = 100;
  ASSERT_EQ(t.b->recv(m), Status::Ok);
  std::vector<uint8_t> msg(kBig);
  fill_xorshift(msg.data(), msg.size(), 5);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, msg.data(), msg.size())), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.b->stats().rx_bytes > 0; }));
  ASSERT_LT(t.b->stats().rx_bytes, kBig);  // still arriving
  ASSERT_TRUE(t.sink_b.comps.empty());
  EXPECT_TRUE(t.b->cancel_recv(&ctx));  // withdrawn; the open slice finishes first
  EXPECT_TRUE(t.sink_b.comps.empty());
  ASSERT_TRUE(t.run_until([&] { return !t.sink_b.comps.empty(); }));
  const Completion& c = t.sink_b.comps[0];
  EXPECT_EQ(c.status, Status::Ok);
  EXPECT_EQ(c.len, kBig);
  EXPECT_EQ(c.buf, buf.data());
  EXPECT_TRUE(c.flags & kCompMultiRecv);  // and it releases the buffer
  EXPECT_TRUE(std::equal(msg.begin(), msg.end(), buf.begin()));
  EXPECT_EQ(t.b->recvs_in_use(), 0u);
}

TEST(ReceiveFlags, MultiRecvTakesWaitingMessagesInOrderThenNewOnes) {
  Pair t;
  std::vector<std::vector<uint8_t>> msgs;
  for (int i = 0; i < 3; ++i) {
    msgs.emplace_back(1000 + i, uint8_t(i + 1));
    ASSERT_EQ(t.a->send(make_send(t.a_to_b, msgs[i].data(), msgs[i].size())), Status::Ok);
  }
  ASSERT_TRUE(t.run_until([&] { return t.sink_a.comps.size() == 3; }));
  std::vector<uint8_t> buf(4000);
  int ctx;
  RecvOp m = make_recv(buf.data(), buf.size(), &ctx, kAnyPeer, kOpMultiRecv | kOpCompletion);
  m.min_multi_recv = 800;
  ASSERT_EQ(t.b->recv(m), Status::Ok);
  ASSERT_EQ(t.sink_b.comps.size(), 3u);  // the waiting three, at once, packed
  EXPECT_EQ(t.sink_b.comps[1].buf, buf.data() + 1000);
  EXPECT_EQ(t.sink_b.comps[2].buf, buf.data() + 2001);
  EXPECT_FALSE(t.sink_b.comps[1].flags & kCompMultiRecv);
  EXPECT_FALSE(t.sink_b.comps[2].flags & kCompMultiRecv);  // 997 bytes free >= 800: stays
  std::vector<uint8_t> last(500, 9);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, last.data(), last.size())), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_b.comps.size() == 4; }));
  EXPECT_EQ(t.sink_b.comps[3].buf, buf.data() + 3003);
  EXPECT_TRUE(t.sink_b.comps[3].flags & kCompMultiRecv);  // 497 free < 800: released
  EXPECT_EQ(t.b->recvs_in_use(), 0u);
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(std::equal(msgs[i].begin(), msgs[i].end(),
                           buf.begin() + (i == 0 ? 0 : i == 1 ? 1000 : 2001)));
}

}  // namespace
}  // namespace pollfab::transport::test
