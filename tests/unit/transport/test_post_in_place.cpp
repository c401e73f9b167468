// The post paths that write the operation straight into the engine's slot (Engine::send_slot /
// post_send, recv_entry / post_recv: the provider's fast path) behave as send() and recv() do:
// same completions, same errors, and a refused operation leaves no slot or entry taken.
#include <gtest/gtest.h>

#include "tests/unit/transport/harness.hpp"
#include "transport/matcher.hpp"

namespace pollfab::transport::test {
namespace {

using util::Status;

// Writes op into e's send slot and posts it; Status::NoResource if no slot was free.
Status post_in_place(Engine& e, const SendOp& op) {
  SendOp* slot = e.send_slot();
  if (!slot) return Status::NoResource;
  copy_op(*slot, op);
  return e.post_send(slot);
}

Status post_in_place(Engine& e, const RecvOp& op) {
  RecvEntry* r = e.recv_entry();
  if (!r) return Status::NoResource;
  copy_op(r->op, op);
  return e.post_recv(r);
}

TEST(PostInPlace, MessagesArriveAndCompleteAsThroughSendAndRecv) {
  Pair t;
  std::vector<uint8_t> big(20'000), in_big(20'000);
  fill_xorshift(big.data(), big.size(), 7);
  uint8_t small[64], in_small[64] = {}, inj[16] = {9, 8, 7}, in_inj[16] = {};
  fill_xorshift(small, sizeof small, 3);
  int cs, cb, rb, rt, ri;
  // Tagged (with ignore bits), untagged multi-segment, and an inject without a completion.
  RecvOp rtag = make_recv(in_small, sizeof in_small, &rt, kAnyPeer, kOpCompletion | kOpTagged);
  rtag.tag = 0x1200;
  rtag.ignore = 0xff;
  ASSERT_EQ(post_in_place(*t.b, rtag), Status::Ok);
  ASSERT_EQ(post_in_place(*t.b, make_recv(in_big.data(), in_big.size(), &rb)), Status::Ok);
  ASSERT_EQ(post_in_place(*t.b, make_recv(in_inj, sizeof in_inj, &ri)), Status::Ok);
  EXPECT_EQ(t.b->recvs_in_use(), 3u);
  SendOp stag = make_send(t.a_to_b, small, sizeof small, &cs, kOpCompletion | kOpTagged);
  stag.tag = 0x1234;
  ASSERT_EQ(post_in_place(*t.a, stag), Status::Ok);
  ASSERT_EQ(post_in_place(*t.a, make_send(t.a_to_b, big.data(), big.size(), &cb)), Status::Ok);
  ASSERT_EQ(post_in_place(*t.a, make_send(t.a_to_b, inj, sizeof inj, nullptr, kOpInject)),
            Status::Ok);
  inj[0] = 0;  // an inject's buffer is the caller's again at return
  // The inject's completion is recorded too, with no CQ entry (one ACK may complete all three).
  ASSERT_TRUE(
      t.run_until([&] { return t.sink_b.comps.size() == 3 && t.sink_a.comps.size() == 3; }));
  EXPECT_EQ(std::vector<uint8_t>(in_small, in_small + 64), std::vector<uint8_t>(small, small + 64));
  EXPECT_EQ(in_big, big);
  EXPECT_EQ(in_inj[0], 9);
  EXPECT_EQ(t.sink_b.comps[0].context, &rt);
  EXPECT_EQ(t.sink_b.comps[0].tag, 0x1234u);
  EXPECT_EQ(t.sink_b.comps[0].flags, kCompRecv | kCompTagged);
  EXPECT_EQ(t.sink_b.comps[1].context, &rb);
  EXPECT_EQ(t.sink_b.comps[1].len, big.size());
  EXPECT_EQ(t.sink_b.comps[2].context, &ri);
  EXPECT_EQ(t.sink_b.comps[2].len, sizeof in_inj);
  EXPECT_EQ(t.sink_a.comps[0].context, &cs);
  EXPECT_EQ(t.sink_a.comps[1].context, &cb);
  EXPECT_EQ(t.sink_a.comps[2].context, nullptr);
  EXPECT_FALSE(t.sink_a.comps[2].cq_entry);
  for (const Completion& c : t.sink_a.comps) EXPECT_EQ(c.status, Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.a->sends_in_use() == 0; }));
  EXPECT_EQ(t.b->recvs_in_use(), 0u);
}

TEST(PostInPlace, ARefusedSendLeavesNoSlotTaken) {
  Pair t;
  uint8_t buf[64] = {};
  SendOp bad_peer = make_send(PeerId(77), buf, sizeof buf);
  EXPECT_EQ(post_in_place(*t.a, bad_peer), Status::Invalid);
  SendOp too_many = make_send(t.a_to_b, buf, sizeof buf);
  too_many.iov_count = kMaxIov + 1;
  SendOp* slot = t.a->send_slot();
  ASSERT_NE(slot, nullptr);
  copy_op(*slot, too_many);
  slot->iov_count = kMaxIov + 1;  // copy_op copies at most kMaxIov entries
  EXPECT_EQ(t.a->post_send(slot), Status::Invalid);
  std::vector<uint8_t> big(t.a->config().inject_size + 1);
  EXPECT_EQ(post_in_place(*t.a, make_send(t.a_to_b, big.data(), big.size(), nullptr, kOpInject)),
            Status::TooBig);
  EXPECT_EQ(t.a->sends_in_use(), 0u);
  // Every slot can still be had: tx_size sends are accepted, and then none.
  EngineConfig small;
  small.tx_size = 8;
  Pair u({}, small);
  for (int i = 0; i < 8; ++i)
    ASSERT_EQ(post_in_place(*u.a, make_send(u.a_to_b, buf, sizeof buf)), Status::Ok) << i;
  EXPECT_EQ(u.a->send_slot(), nullptr);
  EXPECT_EQ(u.a->send(make_send(u.a_to_b, buf, sizeof buf)), Status::NoResource);
  ASSERT_TRUE(u.run_until([&] { return u.a->sends_in_use() == 0; }));
  EXPECT_EQ(u.sink_a.comps.size(), 8u);
  SendOp* again = u.a->send_slot();  // free again; given back through a refused post
  ASSERT_NE(again, nullptr);
  copy_op(*again, bad_peer);
  EXPECT_EQ(u.a->post_send(again), Status::Invalid);
  EXPECT_EQ(u.a->sends_in_use(), 0u);
}

TEST(PostInPlace, ARefusedReceiveLeavesNoEntryTaken) {
  Pair t;
  uint8_t buf[64] = {};
  EXPECT_EQ(post_in_place(*t.b, make_recv(buf, sizeof buf, nullptr, PeerId(77))), Status::Invalid);
  // Peeks and claims take no entry of their own: recv() is their path.
  EXPECT_EQ(post_in_place(*t.b, make_recv(buf, sizeof buf, nullptr, kAnyPeer, kOpPeek)),
            Status::Invalid);
  EXPECT_EQ(post_in_place(*t.b, make_recv(buf, sizeof buf, nullptr, kAnyPeer, kOpClaim)),
            Status::Invalid);
  EXPECT_EQ(t.b->recvs_in_use(), 0u);
  EngineConfig small;
  small.rx_size = 4;
  Pair u({}, {}, small);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(post_in_place(*u.b, make_recv(buf, sizeof buf)), Status::Ok);
  EXPECT_EQ(u.b->recv_entry(), nullptr);
  EXPECT_EQ(u.b->recvs_in_use(), 4u);
}

TEST(PostInPlace, AReceiveTakesAMessageThatArrivedBeforeIt) {
  Pair t;
  uint8_t out[32], in[32] = {};
  fill_xorshift(out, sizeof out, 5);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, out, sizeof out)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.b->unexpected_in_use() == 1; }));
  int ctx;
  ASSERT_EQ(post_in_place(*t.b, make_recv(in, sizeof in, &ctx)), Status::Ok);
  ASSERT_EQ(t.sink_b.comps.size(), 1u);
  EXPECT_EQ(t.sink_b.comps[0].context, &ctx);
  EXPECT_EQ(std::vector<uint8_t>(in, in + 32), std::vector<uint8_t>(out, out + 32));
  EXPECT_EQ(t.b->unexpected_in_use(), 0u);
}

TEST(PostInPlace, ADatagramEngineHasNoSendSlot) {
  EngineConfig dg;
  dg.reliable = false;
  Pair t({}, dg, dg);
  EXPECT_EQ(t.a->send_slot(), nullptr);
}

}  // namespace
}  // namespace pollfab::transport::test
