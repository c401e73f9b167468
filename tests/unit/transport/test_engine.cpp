// Transport engine over the in-memory link: delivery, ordering, integrity and clean-up under
// loss, duplication and reordering, with a manual clock (deterministic, no sleeps).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <random>

#include "tests/unit/transport/harness.hpp"

using namespace pollfab::transport;
using namespace pollfab::transport::test;
using pollfab::util::Status;

namespace {

// Deterministic content of message `idx` of a run: a function of (seed, idx, byte offset).
void fill(uint8_t* p, size_t len, uint64_t seed, uint64_t idx) {
  fill_xorshift(p, len, seed * 0x9E3779B97F4A7C15ull + idx * 0xBF58476D1CE4E5B9ull + 1);
}

struct Flow {
  std::vector<size_t> sizes;
};

// Sizes log-uniform in [0, 1 MiB] plus `big` messages of 64 MiB at random places.
Flow make_flow(uint64_t seed, size_t n, size_t big) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, std::log(double(1 << 20) + 1));
  Flow f;
  for (size_t i = 0; i < n; ++i) f.sizes.push_back(size_t(std::exp(u(rng))) - 1);
  for (size_t k = 0; k < big; ++k) f.sizes.insert(f.sizes.begin() + rng() % f.sizes.size(), 64u << 20);
  return f;
}

// Runs a one-directional flow a -> b with at most `depth` sends and receives outstanding.
// Checks every message arrives exactly once, in order, intact; returns false on stall.
void run_flow(Pair& t, const Flow& f, uint64_t seed, size_t depth) {
  struct Slot { std::vector<uint8_t> buf; size_t idx; };
  std::deque<Slot> tx, rx;
  size_t next_send = 0, next_recv = 0, sends_done = 0, recvs_done = 0;
  std::vector<uint8_t> expect;

  t.sink_a.hook = [&](const Completion& c) {
    ASSERT_EQ(c.status, Status::Ok);
    ASSERT_TRUE(c.flags & kCompSend);
    ASSERT_FALSE(tx.empty());
    ASSERT_EQ(reinterpret_cast<size_t>(c.context), tx.front().idx);  // in order
    tx.pop_front();
    ++sends_done;
  };
  t.sink_b.hook = [&](const Completion& c) {
    ASSERT_EQ(c.status, Status::Ok) << "recv " << recvs_done;
    ASSERT_TRUE(c.flags & kCompRecv);
    ASSERT_FALSE(rx.empty());
    Slot& s = rx.front();
    ASSERT_EQ(reinterpret_cast<size_t>(c.context), s.idx);  // exactly in posting order
    ASSERT_EQ(c.len, f.sizes[s.idx]);
    expect.resize(f.sizes[s.idx]);
    fill(expect.data(), expect.size(), seed, s.idx);
    ASSERT_TRUE(std::memcmp(expect.data(), s.buf.data(), expect.size()) == 0)
        << "corrupt message " << s.idx << " size " << expect.size();
    rx.pop_front();
    ++recvs_done;
  };

  const size_t n = f.sizes.size();
  auto feed = [&] {
    while (next_recv < n && rx.size() < depth) {
      rx.push_back({std::vector<uint8_t>(f.sizes[next_recv]), next_recv});
      Slot& s = rx.back();
      ASSERT_EQ(t.b->recv(make_recv(s.buf.data(), s.buf.size(), reinterpret_cast<void*>(s.idx))),
                Status::Ok);
      ++next_recv;
    }
    while (next_send < n && tx.size() < depth) {
      tx.push_back({std::vector<uint8_t>(f.sizes[next_send]), next_send});
      Slot& s = tx.back();
      fill(s.buf.data(), s.buf.size(), seed, s.idx);
      Status st = t.a->send(make_send(t.a_to_b, s.buf.data(), s.buf.size(),
                                      reinterpret_cast<void*>(s.idx)));
      if (st == Status::NoResource) { tx.pop_back(); break; }
      ASSERT_EQ(st, Status::Ok);
      ++next_send;
    }
  };
  bool ok = t.run_until([&] {
    feed();
    return sends_done == n && recvs_done == n;
  });
  ASSERT_TRUE(ok) << "stalled: sends " << sends_done << "/" << n << " recvs " << recvs_done;
  // Quiesce: let the last ACKs settle, then nothing may be left behind.
  ASSERT_TRUE(t.run_until([&] { return !t.a->busy() && !t.b->busy() && t.link.in_flight() == 0; }));
  EXPECT_EQ(t.a->sends_in_use(), 0u);
  EXPECT_EQ(t.b->recvs_in_use(), 0u);
  EXPECT_EQ(t.b->unexpected_in_use(), 0u);
  EXPECT_EQ(t.b->held_packets(), 0u);
  EXPECT_EQ(t.link.buffers_in_use(), t.a->cached_packets() + t.b->cached_packets());
  t.sink_a.hook = nullptr;
  t.sink_b.hook = nullptr;
}

MemLinkConfig lossy(uint64_t seed, double drop, double dup, double reorder) {
  MemLinkConfig lc;
  lc.fault_ab = {drop, dup, reorder, 0.0, seed};
  lc.fault_ba = {drop, dup, reorder, 0.0, seed ^ 0x5555};
  return lc;
}

}  // namespace

TEST(Engine, SmallMessageBothWays) {
  Pair t;
  char out[] = "hello", in[16] = {};
  ASSERT_EQ(t.b->recv(make_recv(in, sizeof in, in)), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, out, 5, out)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_a.comps.size() == 1 && t.sink_b.comps.size() == 1; }));
  EXPECT_EQ(std::string(in, 5), "hello");
  const Completion& r = t.sink_b.comps[0];
  EXPECT_EQ(r.len, 5u);
  EXPECT_EQ(r.context, in);
  EXPECT_EQ(r.peer, t.b->find_peer(PeerAddr{t.link.host(0), 1}));
  EXPECT_EQ(t.sink_a.comps[0].context, out);
}

TEST(Engine, ZeroByteAndInjectWithoutCompletion) {
  Pair t;
  char in[8];
  ASSERT_EQ(t.b->recv(make_recv(in, sizeof in, in)), Status::Ok);
  ASSERT_EQ(t.b->recv(make_recv(in, sizeof in, in + 1)), Status::Ok);
  char data[4] = {1, 2, 3, 4};
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, nullptr, 0, data)), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, data, 4, nullptr, kOpInject)), Status::Ok);
  std::memset(data, 0, 4);  // inject buffer is reusable at once
  ASSERT_TRUE(t.run_until([&] { return t.sink_b.comps.size() == 2 && !t.a->busy(); }));
  EXPECT_EQ(t.sink_b.comps[0].len, 0u);
  EXPECT_EQ(t.sink_b.comps[1].len, 4u);
  EXPECT_EQ(in[0], 1);
  EXPECT_EQ(in[3], 4);
  ASSERT_EQ(t.sink_a.comps.size(), 2u);
  EXPECT_TRUE(t.sink_a.comps[0].cq_entry);
  EXPECT_FALSE(t.sink_a.comps[1].cq_entry);  // inject: counted, no CQ entry
  EXPECT_EQ(t.a->send(make_send(t.a_to_b, data, 4096, nullptr, kOpInject)), Status::TooBig);
}

TEST(Engine, UnexpectedThenPosted) {
  Pair t;
  std::vector<uint8_t> big(100000), small(10, 7);
  fill(big.data(), big.size(), 1, 1);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, small.data(), small.size())), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, big.data(), big.size())), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_a.comps.size() == 2; }));
  EXPECT_EQ(t.b->unexpected_in_use(), 2u);
  std::vector<uint8_t> r1(10), r2(100000);
  ASSERT_EQ(t.b->recv(make_recv(r1.data(), r1.size())), Status::Ok);
  ASSERT_EQ(t.b->recv(make_recv(r2.data(), r2.size())), Status::Ok);
  ASSERT_EQ(t.sink_b.comps.size(), 2u);
  EXPECT_EQ(r1, small);
  EXPECT_EQ(r2, big);
  EXPECT_EQ(t.b->unexpected_in_use(), 0u);
}

TEST(Engine, TruncationReportsOverflow) {
  Pair t;
  std::vector<uint8_t> msg(5000, 9), buf(1000);
  ASSERT_EQ(t.b->recv(make_recv(buf.data(), buf.size())), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, msg.data(), msg.size())), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_b.comps.size() == 1; }));
  EXPECT_EQ(t.sink_b.comps[0].status, Status::Truncated);
  EXPECT_EQ(t.sink_b.comps[0].len, 1000u);
  EXPECT_EQ(t.sink_b.comps[0].olen, 4000u);
  EXPECT_TRUE(t.sink_b.comps[0].cq_entry);
}

TEST(Engine, TaggedMatchingWithIgnoreAndDirected) {
  Pair t;
  uint64_t v1 = 1, v2 = 2, r1 = 0, r2 = 0;
  RecvOp a = make_recv(&r1, 8);
  a.flags |= kOpTagged;
  a.tag = 0x1200;
  a.ignore = 0x00ff;
  RecvOp b = make_recv(&r2, 8, nullptr, t.b_to_a);
  b.flags |= kOpTagged;
  b.tag = 0x9999;
  ASSERT_EQ(t.b->recv(a), Status::Ok);
  ASSERT_EQ(t.b->recv(b), Status::Ok);
  SendOp s2 = make_send(t.a_to_b, &v2, 8);
  s2.flags |= kOpTagged;
  s2.tag = 0x9999;
  SendOp s1 = make_send(t.a_to_b, &v1, 8);
  s1.flags |= kOpTagged;
  s1.tag = 0x1234;
  ASSERT_EQ(t.a->send(s2), Status::Ok);
  ASSERT_EQ(t.a->send(s1), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_b.comps.size() == 2; }));
  EXPECT_EQ(r1, 1u);
  EXPECT_EQ(r2, 2u);
  EXPECT_EQ(t.sink_b.comps[1].tag, 0x1234u);
  EXPECT_TRUE(t.sink_b.comps[1].flags & kCompTagged);
}

TEST(Engine, Datagram) {
  EngineConfig c;
  c.reliable = false;
  Pair t({}, c, c);
  char in[2000], out[1400];
  std::memset(out, 'x', sizeof out);
  ASSERT_EQ(t.b->recv(make_recv(in, sizeof in)), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, out, sizeof out)), Status::Ok);
  EXPECT_EQ(t.sink_a.comps.size(), 1u);  // local completion
  ASSERT_TRUE(t.run_until([&] { return t.sink_b.comps.size() == 1; }));
  EXPECT_EQ(t.sink_b.comps[0].len, sizeof out);
  EXPECT_EQ(in[1399], 'x');
  char big[1401];
  EXPECT_EQ(t.a->send(make_send(t.a_to_b, big, sizeof big)), Status::TooBig);
  // No posted receive: dropped and counted.
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, out, 10)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.link.in_flight() == 0; }));
  EXPECT_EQ(t.b->stats().drop_no_recv, 1u);
}

TEST(Engine, MalformedPacketsDroppedAndCounted) {
  Pair t;
  PacketBuf p;
  ASSERT_EQ(t.link.b().alloc(&p, 1), 1);
  std::memset(p.data, 0xab, 100);
  p.len = 100;
  t.b->on_packet(p);
  EXPECT_EQ(t.b->stats().drop_protocol, 1u);
  EXPECT_EQ(t.link.buffers_in_use(), t.a->cached_packets() + t.b->cached_packets());
}

TEST(EngineLossy, UnexpectedBudgetBlocksThenRecovers) {
  // A tiny unexpected budget with reordering: packets are held, delivery blocks on the
  // budget, and everything still arrives once receives are posted.
  EngineConfig cb;
  cb.max_unexpected_bytes = 8192;
  Pair t(lossy(9, 0.0, 0.0, 0.3), {}, cb);
  const int n = 40;
  std::vector<std::vector<uint8_t>> out, in(n, std::vector<uint8_t>(3000));
  for (int i = 0; i < n; ++i) {
    out.emplace_back(3000, uint8_t(i));
    ASSERT_EQ(t.a->send(make_send(t.a_to_b, out[i].data(), out[i].size())), Status::Ok);
  }
  // Run a while with no receive posted: the budget fills, the rest is held or refused.
  for (int i = 0; i < 20000; ++i) {
    t.step();
    t.clock.advance(1000);
  }
  EXPECT_GT(t.b->stats().drop_unexpected_full, 0u);
  for (int i = 0; i < n; ++i) ASSERT_EQ(t.b->recv(make_recv(in[i].data(), in[i].size())), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_b.comps.size() == size_t(n); }));
  EXPECT_EQ(in, out);
  ASSERT_TRUE(t.run_until([&] { return !t.a->busy() && !t.b->busy() && t.link.in_flight() == 0; }));
  EXPECT_EQ(t.b->held_packets(), 0u);
  EXPECT_EQ(t.b->unexpected_in_use(), 0u);
}

// Zero copy over the in-memory link: large segments travel as references to the sender's
// buffer (read at delivery); the send completes only after the link let go of them.
TEST(Engine, ZeroCopySendsFromTheApplicationBuffer) {
  MemLinkConfig lc;
  lc.zero_copy_min_bytes = 512;
  lc.fault_ab.dup = 0.2;  // duplicates hold a second reference, delivered later
  lc.fault_ab.seed = 7;
  Pair t(lc);
  std::vector<uint8_t> out(100'000), in(100'000);
  for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t(i * 7 + 1);
  ASSERT_EQ(t.b->recv(make_recv(in.data(), in.size())), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, out.data(), out.size(), out.data())), Status::Ok);
  bool leaked = false;
  ASSERT_TRUE(t.run_until([&] {
    for (const Completion& c : t.sink_a.comps)
      if (c.flags & kCompSend) leaked |= t.link.references(out.data(), out.size());
    return t.sink_a.comps.size() == 1 && t.sink_b.comps.size() == 1;
  }));
  EXPECT_FALSE(leaked) << "send completed while the link still referenced its buffer";
  EXPECT_EQ(t.sink_a.comps[0].status, Status::Ok);
  EXPECT_EQ(in, out);
  EXPECT_GT(t.a->stats().zc_tx_pkts, 60u);  // 100 KB in ~1400-byte segments, none copied
  EXPECT_EQ(t.link.attached_packets(), t.a->stats().zc_tx_pkts);
  ASSERT_TRUE(t.run_until([&] { return !t.a->busy() && !t.b->busy(); }));
  EXPECT_EQ(t.link.pins_in_use(), 0u);
  EXPECT_EQ(t.a->sends_in_use(), 0u);
}

// A send queued is an event for progress's peer walk: a lone message whose only packet is lost,
// to a peer that sends nothing (its liveness probes off), is found lost by the sender's own
// timers and arrives, though the sender's walks had planned nothing before the post.
TEST(Engine, ALoneLostSendIsResentThoughNothingElseHappens) {
  ManualClock clock;
  MemLink link({}, clock);
  RecordingSink sink_a, sink_b;
  DropPsn drop{link.a()};
  drop.drop_psn = 0;  // the first data packet
  drop.times = 1;
  EngineConfig ca, cb;
  ca.ep_id = 1;
  cb.ep_id = 2;
  cb.peer_timeout_ns = 0;  // b never probes a
  Engine a(ca, drop, clock, sink_a), b(cb, link.b(), clock, sink_b);
  const PeerId to_b = a.peer(PeerAddr{link.host(1), 2});
  b.peer(PeerAddr{link.host(0), 1});
  for (int i = 0; i < 10; ++i) {  // idle rounds: both plan nothing
    a.progress();
    b.progress();
    clock.advance(1'000'000);
  }
  char in[8], out[8] = "x";
  ASSERT_EQ(b.recv(make_recv(in, 8)), Status::Ok);
  ASSERT_EQ(a.send(make_send(to_b, out, 2)), Status::Ok);  // leaves at once, and is lost
  ASSERT_EQ(drop.dropped, 1u);
  const uint64_t t0 = clock.now_ns();
  ASSERT_TRUE(drive_until(link, clock, a, b, [&] { return sink_b.comps.size() == 1; }));
  EXPECT_EQ(sink_b.comps[0].status, Status::Ok);
  EXPECT_GE(a.stats().retx_pkts, 1u);
  EXPECT_LT(clock.now_ns() - t0, ca.rto_max_ns) << "resent by the probe or the first RTO";
}

// Acceptance (issue 2, item 6): for each of 20 seeds, 2,000 messages log-uniform in 0..1 MiB
// plus a few of 64 MiB arrive exactly once, in order and intact, under 5% drop, 2% duplicate
// and 5% reorder.
TEST(EngineLossy, TwentySeedsExactlyOnceInOrderIntact) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Pair t(lossy(seed, 0.05, 0.02, 0.05));
    Flow f = make_flow(seed, 2000, seed % 5 == 0 ? 2 : 1);
    run_flow(t, f, seed, 32);
    if (::testing::Test::HasFatalFailure()) {
      ADD_FAILURE() << "replay with seed " << seed;
      return;
    }
    EXPECT_GT(t.a->stats().retx_pkts, 0u);
    EXPECT_GT(t.link.fault_stats(0).dropped, 0u);
  }
}

TEST(EngineLossy, HeavyLossStillDelivers) {
  Pair t(lossy(77, 0.30, 0.05, 0.10));
  Flow f = make_flow(77, 200, 0);
  run_flow(t, f, 77, 8);
}

TEST(EngineLossy, Bidirectional) {
  Pair t(lossy(5, 0.05, 0.02, 0.05));
  std::vector<std::vector<uint8_t>> ins, outs;
  const int n = 300;
  size_t got_a = 0, got_b = 0;
  for (int i = 0; i < n; ++i) {
    size_t len = (i * 7919) % 20000;
    outs.emplace_back(len, uint8_t(i));
    ins.emplace_back(len);
  }
  std::vector<std::vector<uint8_t>> ins2 = ins;
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(t.b->recv(make_recv(ins[i].data(), ins[i].size())), Status::Ok);
    ASSERT_EQ(t.a->recv(make_recv(ins2[i].data(), ins2[i].size())), Status::Ok);
  }
  int sent_a = 0, sent_b = 0;
  ASSERT_TRUE(t.run_until([&] {
    while (sent_a < n && t.a->send(make_send(t.a_to_b, outs[sent_a].data(), outs[sent_a].size())) == Status::Ok) ++sent_a;
    while (sent_b < n && t.b->send(make_send(t.b_to_a, outs[sent_b].data(), outs[sent_b].size())) == Status::Ok) ++sent_b;
    got_a = 0; got_b = 0;
    for (auto& c : t.sink_a.comps) got_a += (c.flags & kCompRecv) ? 1 : 0;
    for (auto& c : t.sink_b.comps) got_b += (c.flags & kCompRecv) ? 1 : 0;
    return got_a == size_t(n) && got_b == size_t(n);
  }));
  EXPECT_EQ(ins, outs);
  EXPECT_EQ(ins2, outs);
}

