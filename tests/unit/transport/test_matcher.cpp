// The receive matcher alone (transport/matcher.hpp): the order and rules by which posted
// receives and unexpected messages meet, the unexpected-message budget and cancellation.
#include <gtest/gtest.h>

#include <vector>

#include "transport/matcher.hpp"
#include "transport/wire.hpp"

namespace pollfab::transport {
namespace {

RecvEntry* post(Matcher& m, PeerId peer, bool tagged, uint64_t tag = 0, uint64_t ignore = 0,
                void* ctx = nullptr) {
  RecvEntry* r = m.new_recv();
  EXPECT_NE(r, nullptr);
  r->op = RecvOp{};
  r->op.peer = peer;
  r->op.tag = tag;
  r->op.ignore = ignore;
  r->op.flags = tagged ? kOpTagged : 0;
  r->op.context = ctx;
  m.post(r);
  return r;
}

TEST(Matcher, PostedReceivesMatchInPostingOrderBySourceAndTag) {
  Matcher m(8, 1 << 20);
  RecvEntry* from2 = post(m, 2, true, 0x10);
  RecvEntry* any_masked = post(m, kAnyPeer, true, 0x1f, 0x0f);  // matches 0x10..0x1f
  RecvEntry* untagged = post(m, kAnyPeer, false);
  EXPECT_EQ(m.match_posted(1, true, 0x10, 0), any_masked);  // not from 2: the directed one is skipped
  EXPECT_EQ(m.match_posted(2, true, 0x10, 0), from2);
  EXPECT_EQ(m.match_posted(2, true, 0x10, 0), nullptr);     // both taken
  EXPECT_EQ(m.match_posted(2, false, 0x99, 0), untagged);   // untagged ignores the tag
  EXPECT_FALSE(m.has_posted());
  for (RecvEntry* r : {from2, any_masked, untagged}) m.release(r);
  EXPECT_EQ(m.recvs_in_use(), 0u);
}

TEST(Matcher, ClassesAreSeparateAndThePoolBounds) {
  Matcher m(2, 1 << 20);
  post(m, kAnyPeer, false);
  post(m, kAnyPeer, false);
  EXPECT_EQ(m.new_recv(), nullptr);  // rx_size in use: NoResource for the caller
  EXPECT_EQ(m.match_posted(0, true, 0, 0), nullptr);  // a tagged message never meets msg receives
}

TEST(Matcher, UnexpectedMessagesMatchInArrivalOrderWithinTheBudget) {
  const uint64_t budget = 2 * sizeof(UnexEntry) + 1000;
  Matcher m(8, budget);
  UnexEntry* a = m.new_unexpected(1, wire::kTagged, 0x5, 0, 100);
  UnexEntry* b = m.new_unexpected(2, wire::kTagged, 0x5, 0, 1000);  // malloc'd: counts its bytes
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(m.new_unexpected(3, 0, 0, 0, 10), nullptr);  // over the budget
  EXPECT_EQ(m.unexpected_count(), 2u);
  RecvOp op;
  op.flags = kOpTagged;
  op.peer = 2;
  op.tag = 0x5;
  EXPECT_EQ(m.match_unexpected(op), b);  // directed at 2: a is skipped
  EXPECT_EQ(b->queue, UnexEntry::Queue::None);
  op.peer = kAnyPeer;
  op.tag = 0x4;
  EXPECT_EQ(m.match_unexpected(op), nullptr);
  op.ignore = 0x1;
  EXPECT_EQ(m.match_unexpected(op), a);
  const uint64_t epoch = m.budget_epoch();
  m.free_unexpected(b);
  EXPECT_EQ(m.budget_epoch(), epoch + 1);  // each engine compares with the epoch it last saw
  EXPECT_GT(m.unexpected_free_bytes(), 1000u);
  m.free_unexpected(a);
  EXPECT_EQ(m.unexpected_free_bytes(), budget);
  EXPECT_EQ(m.unexpected_count(), 0u);
}

// A freed entry is reused for the next unexpected message (a spare, not the heap): it comes
// back with every field as new, nothing of the message it held before.
TEST(Matcher, AReusedUnexpectedEntryCarriesNothingOver) {
  Matcher m(8, 1 << 20);
  int owner;
  UnexEntry* a = m.new_unexpected(3, wire::kTagged | wire::kCqData, 0x77, 0x99, 100, &owner);
  ASSERT_NE(a, nullptr);
  a->received = 100;
  a->complete = true;
  a->discard = true;
  a->claimed = reinterpret_cast<RecvEntry*>(&owner);
  a->claim_context = &owner;
  a->answer = &owner;
  a->buf[0] = 0x5a;
  m.free_unexpected(a);
  EXPECT_EQ(m.unexpected_count(), 0u);
  UnexEntry* b = m.new_unexpected(4, 0, 0, 0, 10);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b, a) << "the spare is reused";
  EXPECT_EQ(b->peer, 4u);
  EXPECT_EQ(b->owner, nullptr);
  EXPECT_EQ(b->flags, 0u);
  EXPECT_EQ(b->tag, 0u);
  EXPECT_EQ(b->cq_data, 0u);
  EXPECT_EQ(b->msg_len, 10u);
  EXPECT_EQ(b->received, 0u);
  EXPECT_FALSE(b->complete);
  EXPECT_FALSE(b->discard);
  EXPECT_EQ(b->claimed, nullptr);
  EXPECT_EQ(b->claim_context, nullptr);
  EXPECT_EQ(b->answer, nullptr);
  EXPECT_EQ(b->buf, b->inline_buf);
  EXPECT_EQ(b->queue, UnexEntry::Queue::Unexpected);
  // It is matched like any other, and the budget counts it once.
  RecvOp op;
  EXPECT_EQ(m.match_unexpected(op), b);
  m.free_unexpected(b);
  EXPECT_EQ(m.unexpected_free_bytes(), uint64_t(1) << 20);
  // Many at once: more than the spares kept, all freed (leaks would show under ASan/valgrind).
  std::vector<UnexEntry*> many;
  for (int i = 0; i < 600; ++i) many.push_back(m.new_unexpected(1, 0, 0, 0, i % 2 ? 8 : 400));
  for (UnexEntry* u : many) ASSERT_NE(u, nullptr);
  EXPECT_EQ(m.unexpected_count(), 600u);
  for (UnexEntry* u : many) m.free_unexpected(u);
  EXPECT_EQ(m.unexpected_count(), 0u);
  EXPECT_EQ(m.unexpected_free_bytes(), uint64_t(1) << 20);
}

TEST(Matcher, CancelAndRemoveIfTakePostedReceives) {
  Matcher m(8, 1 << 20);
  int c1, c2, c3;
  post(m, 1, false, 0, 0, &c1);
  post(m, 2, true, 0, 0, &c2);
  post(m, kAnyPeer, true, 0, 0, &c3);
  RecvEntry* r = m.cancel(&c2);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->op.context, &c2);
  m.release(r);
  EXPECT_EQ(m.cancel(&c2), nullptr);
  std::vector<void*> removed;
  m.remove_posted_if([](const RecvEntry& e) { return e.op.peer == 1; },
                     [&](RecvEntry* e) { removed.push_back(e->op.context); m.release(e); });
  EXPECT_EQ(removed, std::vector<void*>{&c1});
  EXPECT_TRUE(m.has_posted());
  EXPECT_EQ(m.recvs_in_use(), 1u);
}

TEST(Matcher, MultiRecvBufferLendsSlicesAndRetiresBelowTheMinimum) {
  Matcher m(4, 1 << 20);
  uint8_t buf[1000];
  int ctx;
  RecvEntry* b = m.new_recv();
  b->op.flags = kOpMultiRecv;
  b->op.iov[0] = {buf, sizeof buf};
  b->op.iov_count = 1;
  b->op.min_multi_recv = 300;
  b->op.context = &ctx;
  b->cap = sizeof buf;
  m.post(b);
  RecvEntry* s1 = m.match_posted(7, false, 0, 400);
  ASSERT_NE(s1, nullptr);
  EXPECT_EQ(s1->parent, b);
  EXPECT_EQ(s1->op.iov[0].iov_base, buf);
  EXPECT_EQ(s1->cap, 400u);
  EXPECT_FALSE(b->retired);               // 600 free >= 300
  RecvEntry* s2 = m.match_posted(7, false, 0, 500);
  ASSERT_NE(s2, nullptr);
  EXPECT_EQ(s2->op.iov[0].iov_base, buf + 400);
  EXPECT_TRUE(b->retired);                // 100 free < 300: out of the posted queue
  EXPECT_FALSE(m.has_posted());
  EXPECT_EQ(m.match_posted(7, false, 0, 10), nullptr);
  EXPECT_FALSE(m.release(s1));            // s2 still open
  EXPECT_TRUE(m.release(s2));             // the last slice releases the buffer
  EXPECT_EQ(m.recvs_in_use(), 0u);
}

TEST(Matcher, MultiRecvSliceOfALongMessageIsTheFreeSpace) {
  Matcher m(4, 1 << 20);
  uint8_t a[100], c[50];
  RecvEntry* b = m.new_recv();
  b->op.flags = kOpMultiRecv | kOpTagged;
  b->op.iov[0] = {a, sizeof a};
  b->op.iov[1] = {c, sizeof c};
  b->op.iov_count = 2;
  b->cap = 150;
  m.post(b);
  RecvEntry* s1 = m.match_posted(1, true, 0, 120);
  ASSERT_NE(s1, nullptr);
  ASSERT_EQ(s1->op.iov_count, 2u);        // spans both iovs
  EXPECT_EQ(s1->op.iov[1].iov_base, c);
  EXPECT_EQ(s1->op.iov[1].iov_len, 20u);
  RecvEntry* s2 = m.match_posted(1, true, 0, 80);
  ASSERT_NE(s2, nullptr);
  EXPECT_EQ(s2->cap, 30u);                // truncated to what is left
  EXPECT_TRUE(b->retired);
  // Cancelling a retired buffer finds nothing; a withdrawn buffer with open slices waits.
  EXPECT_FALSE(m.release(s2));
  EXPECT_TRUE(m.release(s1));
}

TEST(Matcher, PeekClaimAndTakeClaimed) {
  Matcher m(4, 1 << 20);
  UnexEntry* u = m.new_unexpected(3, wire::kTagged, 0x42, 9, 10);
  ASSERT_NE(u, nullptr);
  RecvOp op;
  op.flags = kOpTagged;
  op.tag = 0x42;
  EXPECT_EQ(m.find_unexpected(op), u);
  EXPECT_EQ(m.find_unexpected(op), u);    // a peek leaves it queued
  int ctx;
  m.claim(u, &ctx);
  EXPECT_EQ(m.find_unexpected(op), nullptr);  // claimed: out of matching
  int other;
  EXPECT_EQ(m.take_claimed(&other), nullptr);
  EXPECT_EQ(m.take_claimed(&ctx), u);
  EXPECT_EQ(m.take_claimed(&ctx), nullptr);
  m.claim(u, &ctx);
  EXPECT_EQ(m.unexpected_count(), 1u);    // the destructor frees claimed messages too
}

TEST(Matcher, FreeOwnedFreesOnlyThatEnginesMessages) {
  Matcher m(4, 1 << 20);
  int engine_a, engine_b;
  UnexEntry* a1 = m.new_unexpected(0, 0, 0, 0, 10, &engine_a);
  UnexEntry* b1 = m.new_unexpected(0, 0, 0, 0, 20, &engine_b);
  UnexEntry* a2 = m.new_unexpected(0, wire::kTagged, 7, 0, 30, &engine_a);
  ASSERT_TRUE(a1 && b1 && a2);
  int ctx;
  m.claim(a2, &ctx);
  m.free_owned(&engine_a);  // queued and claimed alike
  EXPECT_EQ(m.unexpected_count(), 1u);
  RecvOp op;  // untagged, any peer: only b's message is left
  EXPECT_EQ(m.find_unexpected(op), b1);
  EXPECT_EQ(m.take_claimed(&ctx), nullptr);
  EXPECT_FALSE(m.empty());
}

}  // namespace
}  // namespace pollfab::transport
