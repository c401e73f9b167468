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
  EXPECT_EQ(m.match_posted(1, true, 0x10), any_masked);  // not from 2: the directed one is skipped
  EXPECT_EQ(m.match_posted(2, true, 0x10), from2);
  EXPECT_EQ(m.match_posted(2, true, 0x10), nullptr);     // both taken
  EXPECT_EQ(m.match_posted(2, false, 0x99), untagged);   // untagged ignores the tag
  EXPECT_FALSE(m.has_posted());
  for (RecvEntry* r : {from2, any_masked, untagged}) m.release(r);
  EXPECT_EQ(m.recvs_in_use(), 0u);
}

TEST(Matcher, ClassesAreSeparateAndThePoolBounds) {
  Matcher m(2, 1 << 20);
  post(m, kAnyPeer, false);
  post(m, kAnyPeer, false);
  EXPECT_EQ(m.new_recv(), nullptr);  // rx_size in use: NoResource for the caller
  EXPECT_EQ(m.match_posted(0, true, 0), nullptr);  // a tagged message never meets msg receives
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
  EXPECT_FALSE(b->listed);
  op.peer = kAnyPeer;
  op.tag = 0x4;
  EXPECT_EQ(m.match_unexpected(op), nullptr);
  op.ignore = 0x1;
  EXPECT_EQ(m.match_unexpected(op), a);
  EXPECT_FALSE(m.take_budget_freed());
  m.free_unexpected(b);
  EXPECT_TRUE(m.take_budget_freed());
  EXPECT_FALSE(m.take_budget_freed());  // reported once
  EXPECT_GT(m.unexpected_free_bytes(), 1000u);
  m.free_unexpected(a);
  EXPECT_EQ(m.unexpected_free_bytes(), budget);
  EXPECT_EQ(m.unexpected_count(), 0u);
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

}  // namespace
}  // namespace pollfab::transport
