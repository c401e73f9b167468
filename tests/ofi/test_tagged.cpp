// fi_tagged(3) and fi_msg(3) receive semantics through the public API (pollfab's drop-in
// libfabric.so.1): FI_LOCAL_COMM (an endpoint sending to itself and to another endpoint of its
// domain), directed receives, FI_PEEK / FI_CLAIM / FI_DISCARD, fi_cancel, truncation,
// selective completion, remote CQ data and fi_cq_readfrom sources, FI_MULTI_RECV with
// FI_OPT_MIN_MULTI_RECV.
#include <array>
#include <chrono>
#include <cstring>
#include <set>
#include <vector>

#include "tests/ofi/ofi_fixture.hpp"

namespace pollfab::ofitest {
namespace {

constexpr uint64_t kCaps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV | FI_LOCAL_COMM |
                           FI_REMOTE_COMM | FI_SOURCE | FI_MULTI_RECV;

ssize_t tsend(Ep& from, fi_addr_t to, const void* buf, size_t len, uint64_t tag, void* ctx) {
  ssize_t rc;
  fi_cq_tagged_entry e;
  while ((rc = fi_tsend(from.ep, buf, len, nullptr, to, tag, ctx)) == -FI_EAGAIN)
    fi_cq_read(from.cq, &e, 0);
  return rc;
}

// A peek-family fi_trecvmsg (no buffer unless given).
ssize_t trecvmsg(Ep& ep, void* buf, size_t len, fi_addr_t src, uint64_t tag, uint64_t ignore,
                 void* ctx, uint64_t flags) {
  iovec iov{buf, len};
  fi_msg_tagged m{};
  m.msg_iov = buf ? &iov : nullptr;
  m.iov_count = buf ? 1 : 0;
  m.addr = src;
  m.tag = tag;
  m.ignore = ignore;
  m.context = ctx;
  return fi_trecvmsg(ep.ep, &m, flags);
}

// Sends and waits for the send completion.
void send_and_complete(Ep& from, fi_addr_t to, const std::string& s, uint64_t tag) {
  fi_context ctx;
  ASSERT_EQ(tsend(from, to, s.data(), s.size(), tag, &ctx), 0);
  fi_cq_tagged_entry e;
  ASSERT_EQ(Ofi::wait(from.cq, e), 1);
  EXPECT_EQ(e.op_context, &ctx);
  EXPECT_EQ(e.flags, FI_SEND | FI_TAGGED);
}

TEST(OfiTagged, LocalCommToItselfAndToAnotherEndpointOfTheDomain) {
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f.info()->caps & FI_LOCAL_COMM);
  Ep& a = f.add_ep();
  Ep& b = f.add_ep();
  char buf[64] = {};
  fi_context rctx;
  ASSERT_EQ(fi_trecv(a.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 7, 0, &rctx), 0);
  fi_context sctx;
  ASSERT_EQ(tsend(a, a.self, "to myself", 9, 7, &sctx), 0);
  // One CQ sees both sides: the send and the receive completion, in either order.
  fi_cq_tagged_entry e;
  fi_addr_t src = FI_ADDR_NOTAVAIL;
  bool got_send = false, got_recv = false;
  for (int i = 0; i < 2; ++i) {
    fi_addr_t from = FI_ADDR_NOTAVAIL;
    ASSERT_EQ(Ofi::wait(a.cq, e, nullptr, &from), 1);
    if (e.flags & FI_SEND) {
      got_send = true;
      EXPECT_EQ(e.op_context, &sctx);
      continue;
    }
    got_recv = true;
    src = from;
    EXPECT_EQ(e.op_context, &rctx);
    EXPECT_EQ(e.len, 9u);
    EXPECT_EQ(e.tag, 7u);
  }
  EXPECT_TRUE(got_send && got_recv);
  EXPECT_EQ(std::string(buf, 9), "to myself");
  EXPECT_EQ(src, a.self);  // FI_SOURCE
  ASSERT_EQ(fi_trecv(b.ep, buf, sizeof buf, nullptr, a.self, 8, 0, &rctx), 0);  // directed
  send_and_complete(a, b.self, "to b", 8);
  ASSERT_EQ(Ofi::wait(b.cq, e, nullptr, &src), 1);
  EXPECT_EQ(std::string(buf, 4), "to b");
  EXPECT_EQ(src, a.self);
}

TEST(OfiTagged, AContextFormatCqReturnsEachContextOnceWithItsSource) {
  // FI_CQ_FORMAT_CONTEXT (fi_cq_entry: op_context only; fi_cq_readfrom adds the source): two
  // senders stream 64-byte messages and tagged messages, 32 of each in flight, to one
  // receiver (bundled several to a packet, completed in bursts). Every context comes back
  // exactly once, receives with their sender under FI_SOURCE.
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  Ep& r = f.add_ep(0, {}, FI_CQ_FORMAT_CONTEXT);
  Ep& s1 = f.add_ep(0, {}, FI_CQ_FORMAT_CONTEXT);
  Ep& s2 = f.add_ep(0, {}, FI_CQ_FORMAT_CONTEXT);
  constexpr int kPerSender = 64;  // half fi_send, half fi_tsend
  std::vector<fi_context> rctx(2 * kPerSender), sctx(2 * kPerSender);
  std::vector<std::array<char, 64>> rbuf(2 * kPerSender);
  for (int i = 0; i < 2 * kPerSender; ++i) {
    const bool tagged = i % 2;
    ASSERT_EQ(tagged ? fi_trecv(r.ep, rbuf[i].data(), 64, nullptr, FI_ADDR_UNSPEC, 9, 0, &rctx[i])
                     : fi_recv(r.ep, rbuf[i].data(), 64, nullptr, FI_ADDR_UNSPEC, &rctx[i]),
              0);
  }
  char msg[64] = "context only";
  for (int i = 0; i < 2 * kPerSender; ++i) {
    Ep& s = i < kPerSender ? s1 : s2;
    const bool tagged = i % 2;
    ssize_t rc;
    fi_cq_entry e;
    while ((rc = tagged ? fi_tsend(s.ep, msg, sizeof msg, nullptr, r.self, 9, &sctx[i])
                        : fi_send(s.ep, msg, sizeof msg, nullptr, r.self, &sctx[i])) == -FI_EAGAIN)
      fi_cq_read(s.cq, &e, 0);
    ASSERT_EQ(rc, 0);
  }
  // The receiver's and both senders' completions, read in batches of up to 16.
  std::set<void*> seen;
  size_t from_s1 = 0, from_s2 = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (seen.size() < 4u * kPerSender && std::chrono::steady_clock::now() < end) {
    for (Ep* ep : {&r, &s1, &s2}) {
      fi_cq_entry e[16];
      fi_addr_t src[16];
      const ssize_t n = fi_cq_readfrom(ep->cq, e, 16, src);
      ASSERT_TRUE(n > 0 || n == -FI_EAGAIN) << fi_strerror(int(-n));
      for (ssize_t k = 0; k < n; ++k) {
        EXPECT_TRUE(seen.insert(e[k].op_context).second) << "a context came back twice";
        if (ep != &r) {
          EXPECT_EQ(src[k], FI_ADDR_NOTAVAIL) << "a send completion has no source";
          continue;
        }
        from_s1 += src[k] == s1.self;
        from_s2 += src[k] == s2.self;
      }
    }
  }
  ASSERT_EQ(seen.size(), 4u * kPerSender);
  for (int i = 0; i < 2 * kPerSender; ++i) {
    EXPECT_TRUE(seen.count(&rctx[i]) && seen.count(&sctx[i])) << i;
    EXPECT_STREQ(rbuf[i].data(), "context only");
  }
  EXPECT_EQ(from_s1, size_t(kPerSender));
  EXPECT_EQ(from_s2, size_t(kPerSender));
}

TEST(OfiTagged, DirectedReceiveTakesOnlyItsSource) {
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  Ep& r = f.add_ep();
  Ep& s1 = f.add_ep();
  Ep& s2 = f.add_ep();
  send_and_complete(s1, r.self, "one", 5);
  send_and_complete(s2, r.self, "two", 5);
  char buf[8] = {};
  fi_context c;
  ASSERT_EQ(fi_trecv(r.ep, buf, sizeof buf, nullptr, s2.self, 5, 0, &c), 0);
  fi_cq_tagged_entry e;
  ASSERT_EQ(Ofi::wait(r.cq, e), 1);
  EXPECT_EQ(std::string(buf, 3), "two");  // s1's earlier message is not its source
  ASSERT_EQ(fi_trecv(r.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 5, 0, &c), 0);
  ASSERT_EQ(Ofi::wait(r.cq, e), 1);
  EXPECT_EQ(std::string(buf, 3), "one");
}

TEST(OfiTagged, PeekClaimDiscardAndTheMissError) {
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  Ep& r = f.add_ep();
  Ep& s = f.add_ep();
  fi_context pctx;
  fi_cq_tagged_entry e;
  fi_cq_err_entry err{};
  // A miss is an FI_ENOMSG error completion.
  ASSERT_EQ(trecvmsg(r, nullptr, 0, FI_ADDR_UNSPEC, 0x10, 0, &pctx, FI_PEEK), 0);
  ASSERT_EQ(Ofi::wait(r.cq, e, &err), -FI_EAVAIL);
  EXPECT_EQ(err.err, FI_ENOMSG);
  EXPECT_EQ(err.op_context, &pctx);

  send_and_complete(s, r.self, "first", 0x10);
  send_and_complete(s, r.self, "second!", 0x11);
  send_and_complete(s, r.self, "third", 0x12);
  // Peek (ignore mask 0x3 covers all three): the first, which stays queued.
  ASSERT_EQ(trecvmsg(r, nullptr, 0, FI_ADDR_UNSPEC, 0x10, 0x3, &pctx, FI_PEEK), 0);
  ASSERT_EQ(Ofi::wait(r.cq, e), 1);
  EXPECT_EQ(e.len, 5u);
  EXPECT_EQ(e.tag, 0x10u);
  EXPECT_EQ(e.flags & (FI_RECV | FI_TAGGED), FI_RECV | FI_TAGGED);
  // Peek|claim the first, then the same context claims it into a buffer.
  fi_context cctx;
  ASSERT_EQ(trecvmsg(r, nullptr, 0, s.self, 0x10, 0x3, &cctx, FI_PEEK | FI_CLAIM), 0);
  ASSERT_EQ(Ofi::wait(r.cq, e), 1);
  EXPECT_EQ(e.tag, 0x10u);
  // Peek|discard now finds the second (the first is claimed) and drops it.
  ASSERT_EQ(trecvmsg(r, nullptr, 0, FI_ADDR_UNSPEC, 0x10, 0x3, &pctx, FI_PEEK | FI_DISCARD), 0);
  ASSERT_EQ(Ofi::wait(r.cq, e), 1);
  EXPECT_EQ(e.tag, 0x11u);
  char buf[16] = {};
  ASSERT_EQ(trecvmsg(r, buf, sizeof buf, FI_ADDR_UNSPEC, 0x10, 0x3, &cctx, FI_CLAIM), 0);
  ASSERT_EQ(Ofi::wait(r.cq, e), 1);
  EXPECT_EQ(e.op_context, &cctx);
  EXPECT_EQ(std::string(buf, e.len), "first");
  // A claim with no claimed message is refused at the call.
  EXPECT_EQ(trecvmsg(r, buf, sizeof buf, FI_ADDR_UNSPEC, 0x10, 0x3, &cctx, FI_CLAIM), -FI_EINVAL);
  // The third is still there; the discarded second is gone.
  ASSERT_EQ(fi_trecv(r.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 0x10, 0x3, &pctx), 0);
  ASSERT_EQ(Ofi::wait(r.cq, e), 1);
  EXPECT_EQ(std::string(buf, e.len), "third");
  EXPECT_TRUE(Ofi::quiet(r.cq));
}

TEST(OfiTagged, CancelTruncationAndCqData) {
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  EXPECT_GE(f.info()->domain_attr->cq_data_size, 8u);
  Ep& r = f.add_ep();
  Ep& s = f.add_ep();
  char buf[4];
  fi_context c1, c2;
  ASSERT_EQ(fi_trecv(r.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 1, 0, &c1), 0);
  ASSERT_EQ(fi_cancel(&r.ep->fid, &c1), 0);
  fi_cq_tagged_entry e;
  fi_cq_err_entry err{};
  ASSERT_EQ(Ofi::wait(r.cq, e, &err), -FI_EAVAIL);
  EXPECT_EQ(err.err, FI_ECANCELED);
  EXPECT_EQ(err.op_context, &c1);
  EXPECT_EQ(fi_cancel(&r.ep->fid, &c1), -FI_ENOENT);
  // Truncation: 10 bytes into 4.
  ASSERT_EQ(fi_trecv(r.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 2, 0, &c2), 0);
  send_and_complete(s, r.self, "0123456789", 2);
  ASSERT_EQ(Ofi::wait(r.cq, e, &err), -FI_EAVAIL);
  EXPECT_EQ(err.err, FI_ETRUNC);
  EXPECT_EQ(err.len, 4u);
  EXPECT_EQ(err.olen, 6u);
  EXPECT_EQ(std::string(buf, 4), "0123");
  // Remote CQ data (8 bytes).
  char big[8];
  ASSERT_EQ(fi_trecv(r.ep, big, sizeof big, nullptr, FI_ADDR_UNSPEC, 3, 0, &c2), 0);
  fi_context sc;
  ASSERT_EQ(fi_tsenddata(s.ep, "xy", 2, nullptr, 0x1122334455667788ull, r.self, 3, &sc), 0);
  ASSERT_EQ(Ofi::wait(r.cq, e), 1);
  EXPECT_TRUE(e.flags & FI_REMOTE_CQ_DATA);
  EXPECT_EQ(e.data, 0x1122334455667788ull);
  ASSERT_EQ(Ofi::wait(s.cq, e), 1);
}

TEST(OfiTagged, SelectiveCompletionReportsOnlyWhatAsksForIt) {
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  Ep& r = f.add_ep();
  Ep& s = f.add_ep(FI_SELECTIVE_COMPLETION);
  char buf[8];
  fi_context rc;
  ASSERT_EQ(fi_trecv(r.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 9, 0, &rc), 0);
  iovec iov{const_cast<char*>("ack"), 3};
  fi_msg_tagged m{};
  m.msg_iov = &iov;
  m.iov_count = 1;
  m.addr = r.self;
  m.tag = 9;
  ASSERT_EQ(fi_tsendmsg(s.ep, &m, 0), 0);  // Open MPI's Ssend ack: no completion wanted
  fi_cq_tagged_entry e;
  ASSERT_EQ(Ofi::wait(r.cq, e), 1);
  EXPECT_TRUE(Ofi::quiet(s.cq));
  fi_context sc;
  m.context = &sc;
  ASSERT_EQ(fi_trecv(r.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 9, 0, &rc), 0);
  ASSERT_EQ(fi_tsendmsg(s.ep, &m, FI_COMPLETION), 0);
  ASSERT_EQ(Ofi::wait(s.cq, e), 1);
  EXPECT_EQ(e.op_context, &sc);
  ASSERT_EQ(Ofi::wait(r.cq, e), 1);
}

TEST(OfiMsg, MultiRecvBufferTakesSeveralMessagesAndReleasesOnce) {
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  Ep& r = f.add_ep();
  Ep& s = f.add_ep();
  size_t min = 0, len = sizeof min;
  ASSERT_EQ(fi_getopt(&r.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, &len), 0);
  EXPECT_GT(min, 0u);
  min = 100;
  ASSERT_EQ(fi_setopt(&r.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof min), 0);
  EXPECT_EQ(fi_setopt(&r.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, 1), -FI_EINVAL);
  std::vector<char> pool(400);
  iovec iov{pool.data(), pool.size()};
  fi_msg m{};
  m.msg_iov = &iov;
  m.iov_count = 1;
  m.addr = FI_ADDR_UNSPEC;
  fi_context mctx;
  m.context = &mctx;
  ASSERT_EQ(fi_recvmsg(r.ep, &m, FI_MULTI_RECV), 0);
  std::vector<std::string> msgs = {std::string(120, 'a'), std::string(150, 'b'), std::string(60, 'c')};
  for (auto& s_ : msgs) {
    fi_context sc;
    ASSERT_EQ(fi_send(s.ep, s_.data(), s_.size(), nullptr, r.self, &sc), 0);
    fi_cq_tagged_entry e;
    ASSERT_EQ(Ofi::wait(s.cq, e), 1);
  }
  size_t off = 0;
  for (size_t i = 0; i < msgs.size(); ++i) {
    fi_cq_tagged_entry e;
    ASSERT_EQ(Ofi::wait(r.cq, e), 1);
    EXPECT_EQ(e.op_context, &mctx);
    EXPECT_EQ(e.buf, pool.data() + off);
    EXPECT_EQ(std::string(static_cast<char*>(e.buf), e.len), msgs[i]);
    // 400 - 120 - 150 = 130 free after two (>= 100 stays); 70 after three: released.
    EXPECT_EQ(bool(e.flags & FI_MULTI_RECV), i == 2) << i;
    off += e.len;
  }
}

// fi_recv with FI_MULTI_RECV among the endpoint's default receive flags (FI_SETOPSFLAG): the
// one-buffer call honours them as fi_recvmsg's flags (the provider's one-buffer path hands
// such receives to the general one).
TEST(OfiMsg, MultiRecvFromTheDefaultFlagsOfAOneBufferReceive) {
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  Ep& r = f.add_ep();
  Ep& s = f.add_ep();
  size_t min = 100;
  ASSERT_EQ(fi_setopt(&r.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof min), 0);
  uint64_t flags = FI_RECV | FI_MULTI_RECV;
  ASSERT_EQ(fi_control(&r.ep->fid, FI_SETOPSFLAG, &flags), 0);
  std::vector<char> pool(300);
  fi_context mctx;
  ASSERT_EQ(fi_recv(r.ep, pool.data(), pool.size(), nullptr, FI_ADDR_UNSPEC, &mctx), 0);
  const std::string one(120, 'a'), two(90, 'b');
  for (const std::string* m : {&one, &two}) {
    fi_context sc;
    ASSERT_EQ(fi_send(s.ep, m->data(), m->size(), nullptr, r.self, &sc), 0);
    fi_cq_tagged_entry e;
    ASSERT_EQ(Ofi::wait(s.cq, e), 1);
  }
  fi_cq_tagged_entry e;
  ASSERT_EQ(Ofi::wait(r.cq, e), 1);
  EXPECT_EQ(e.op_context, &mctx);
  EXPECT_EQ(e.buf, pool.data());
  EXPECT_EQ(std::string(static_cast<char*>(e.buf), e.len), one);
  EXPECT_FALSE(e.flags & FI_MULTI_RECV);  // 180 bytes left: the buffer stays posted
  ASSERT_EQ(Ofi::wait(r.cq, e), 1);
  EXPECT_EQ(e.buf, pool.data() + one.size());  // the same buffer, after the first
  EXPECT_EQ(std::string(static_cast<char*>(e.buf), e.len), two);
  EXPECT_TRUE(e.flags & FI_MULTI_RECV);  // 90 left, under 100: released
}

}  // namespace
}  // namespace pollfab::ofitest

namespace pollfab::ofitest {
namespace {

TEST(OfiCompletion, DeliveryCompleteWaitsForTheReceiveTransmitCompleteDoesNot) {
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  Ep& r = f.add_ep();
  Ep& s = f.add_ep();
  iovec iov{const_cast<char*>("dc"), 2};
  fi_msg_tagged m{};
  m.msg_iov = &iov;
  m.iov_count = 1;
  m.addr = r.self;
  m.tag = 4;
  fi_context dc, tc;
  m.context = &dc;
  ASSERT_EQ(fi_tsendmsg(s.ep, &m, FI_COMPLETION | FI_DELIVERY_COMPLETE), 0);
  m.context = &tc;
  m.tag = 5;
  ASSERT_EQ(fi_tsendmsg(s.ep, &m, FI_COMPLETION | FI_TRANSMIT_COMPLETE), 0);
  fi_cq_tagged_entry e;
  ASSERT_EQ(Ofi::wait(s.cq, e), 1);  // the transmit-complete one: received, still unexpected
  EXPECT_EQ(e.op_context, &tc);
  EXPECT_TRUE(Ofi::quiet(s.cq, std::chrono::milliseconds(100)));  // not placed yet
  char buf[4];
  fi_context rc;
  ASSERT_EQ(fi_trecv(r.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 4, 0, &rc), 0);
  ASSERT_EQ(Ofi::wait(r.cq, e), 1);
  ASSERT_EQ(Ofi::wait(s.cq, e), 1);  // now placed
  EXPECT_EQ(e.op_context, &dc);
  EXPECT_EQ(e.flags, FI_SEND | FI_TAGGED);
}

// Many sends acknowledged together (the provider takes their completions in bursts): each send
// asking for a completion gets its CQ entry, in the order posted, with FI_SEND and FI_MSG or
// FI_TAGGED; fi_inject gets none; the FI_SEND counter counts every one (fi_cntr(3)).
TEST(OfiTagged, EverySendOfABurstCompletesInOrderAndIsCounted) {
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  fi_cntr_attr attr{};
  attr.events = FI_CNTR_EVENTS_COMP;
  fid_cntr* sent = nullptr;
  ASSERT_EQ(fi_cntr_open(f.domain(), &attr, &sent, nullptr), 0);
  Ep& a = f.add_ep(0, [&](fid_ep* ep) { EXPECT_EQ(fi_ep_bind(ep, &sent->fid, FI_SEND), 0); });
  Ep& b = f.add_ep();
  constexpr int kN = 120;
  std::vector<std::array<char, 32>> in(kN);
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(i % 2 ? fi_trecv(b.ep, in[i].data(), 32, nullptr, FI_ADDR_UNSPEC, uint64_t(i), 0, nullptr)
                    : fi_recv(b.ep, in[i].data(), 32, nullptr, FI_ADDR_UNSPEC, nullptr),
              0);
  }
  std::vector<fi_context> ctx(kN);
  const char msg[] = "a message of a burst";
  int expected_entries = 0;
  for (int i = 0; i < kN; ++i) {
    ssize_t rc;
    fi_cq_tagged_entry e;
    do {
      if (i % 5 == 4)  // inject: counted, no entry (untagged, for its receive)
        rc = i % 2 ? fi_tinject(a.ep, msg, sizeof msg, b.self, uint64_t(i))
                   : fi_inject(a.ep, msg, sizeof msg, b.self);
      else
        rc = i % 2 ? fi_tsend(a.ep, msg, sizeof msg, nullptr, b.self, uint64_t(i), &ctx[i])
                   : fi_send(a.ep, msg, sizeof msg, nullptr, b.self, &ctx[i]);
      if (rc == -FI_EAGAIN) fi_cq_read(b.cq, &e, 0);
    } while (rc == -FI_EAGAIN);
    ASSERT_EQ(rc, 0) << i;
    if (i % 5 != 4) ++expected_entries;
  }
  int got = 0;
  for (int i = 0; i < kN; ++i) {
    if (i % 5 == 4) continue;
    fi_cq_tagged_entry e;
    fi_cq_tagged_entry r;
    while (fi_cq_read(a.cq, &e, 1) == -FI_EAGAIN) fi_cq_read(b.cq, &r, 0);  // b progresses too
    EXPECT_EQ(e.op_context, &ctx[i]) << i;
    EXPECT_EQ(e.flags, FI_SEND | (i % 2 ? FI_TAGGED : FI_MSG)) << i;
    ++got;
  }
  EXPECT_EQ(got, expected_entries);
  EXPECT_TRUE(Ofi::quiet(a.cq));  // no entry for the injects
  EXPECT_EQ(fi_cntr_read(sent), uint64_t(kN));
  fi_cq_tagged_entry r;
  for (int i = 0; i < kN; ++i) ASSERT_EQ(Ofi::wait(b.cq, r), 1) << i;
  f.close_eps();
  fi_close(&sent->fid);
}

}  // namespace
}  // namespace pollfab::ofitest
