// Peers over the in-memory link, with a manual clock: a peer that restarts (a new epoch:
// its old state and the sends it had not acknowledged fail, stale packets are dropped), a
// peer that dies (its pending work fails with TimedOut, later sends fail at once), and the
// probes that find out (a receiver probes a silent peer while it holds receives; a driver
// sleeping until next_deadline_ns() still probes and declares on time). transport/liveness.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/unit/transport/harness.hpp"

using namespace pollfab::transport;
using namespace pollfab::transport::test;
using pollfab::util::Status;

TEST(Engine, PeerRestartResetsState) {
  Pair t;
  char in[8], out[8] = "abc";
  ASSERT_EQ(t.b->recv(make_recv(in, 8)), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, out, 4)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_b.comps.size() == 1 && !t.a->busy(); }));
  // A new incarnation of a at the same address starts again at PSN 0.
  RecordingSink sink2;
  EngineConfig c2;
  c2.ep_id = 1;
  Engine a2(c2, t.link.a(), t.clock, sink2);
  PeerId p2 = a2.peer(PeerAddr{t.link.host(1), 2});
  ASSERT_EQ(t.b->recv(make_recv(in, 8)), Status::Ok);
  ASSERT_EQ(a2.send(make_send(p2, "xyz", 4)), Status::Ok);
  PacketBuf bufs[32];
  for (int i = 0; i < 1000 && t.sink_b.comps.size() < 2; ++i) {
    for (uint16_t n = t.link.b().rx_burst(bufs, 32), k = 0; k < n; ++k) t.b->on_packet(bufs[k]);
    for (uint16_t n = t.link.a().rx_burst(bufs, 32), k = 0; k < n; ++k) a2.on_packet(bufs[k]);
    a2.progress();
    t.b->progress();
    t.clock.advance(1000);
  }
  ASSERT_EQ(t.sink_b.comps.size(), 2u);
  EXPECT_STREQ(in, "xyz");
  EXPECT_EQ(t.b->stats().peer_resets, 1u);
}

TEST(Engine, ReceiverRestartFailsPendingSendsAtOnce) {
  Pair t;
  char in[8], out[8] = "one";
  ASSERT_EQ(t.b->recv(make_recv(in, 8)), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, out, 4)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_b.comps.size() == 1 && !t.a->busy(); }));
  // b restarts at the same address and only receives; a still knows b's old epoch.
  t.b.reset();
  RecordingSink sink2;
  EngineConfig c2;
  c2.ep_id = 2;
  Engine b2(c2, t.link.b(), t.clock, sink2);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, "two", 4, out)), Status::Ok);
  PacketBuf bufs[32];
  for (int i = 0; i < 2000 && t.sink_a.comps.size() < 2; ++i) {
    for (uint16_t n = t.link.b().rx_burst(bufs, 32), k = 0; k < n; ++k) b2.on_packet(bufs[k]);
    for (uint16_t n = t.link.a().rx_burst(bufs, 32), k = 0; k < n; ++k) t.a->on_packet(bufs[k]);
    t.a->progress();
    b2.progress();
    t.clock.advance(1000);
  }
  ASSERT_EQ(t.sink_a.comps.size(), 2u);
  EXPECT_EQ(t.sink_a.comps[1].status, Status::IoError);  // told by b2's reply, not a timeout
  EXPECT_TRUE(t.sink_a.comps[1].cq_entry);
  EXPECT_EQ(t.a->stats().peer_resets, 1u);
  EXPECT_GT(b2.stats().drop_stale_epoch, 0u);
}

TEST(Engine, DeadPeerFailsPendingWorkThenFailsFast) {
  EngineConfig ca;
  ca.peer_timeout_ns = 50'000'000;  // 50 ms of manual time
  Pair t({}, ca);
  char in[16], out[16] = "hello";
  ASSERT_EQ(t.a->recv(make_recv(in, sizeof in, in)), Status::Ok);  // undirected receive
  t.b.reset();  // b dies: nothing answers any more
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, out, 6, out)), Status::Ok);
  PacketBuf bufs[32];
  for (int i = 0; i < 200 && t.sink_a.comps.size() < 2; ++i) {
    while (uint16_t n = t.link.b().rx_burst(bufs, 32)) t.link.b().free(bufs, n);  // into the void
    t.a->progress();
    t.clock.advance(1'000'000);
  }
  ASSERT_EQ(t.sink_a.comps.size(), 2u);
  for (const Completion& c : t.sink_a.comps) {
    EXPECT_EQ(c.status, Status::TimedOut);
    EXPECT_TRUE(c.cq_entry);
  }
  EXPECT_EQ(t.a->stats().peers_dead, 1u);
  EXPECT_EQ(t.a->sends_in_use(), 0u);
  EXPECT_EQ(t.a->recvs_in_use(), 0u);  // the only peer is dead: the receive failed too
  // Later sends fail at once, through their completion.
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, out, 6, out)), Status::Ok);
  ASSERT_EQ(t.sink_a.comps.size(), 3u);
  EXPECT_EQ(t.sink_a.comps[2].status, Status::TimedOut);
  // So do receives directed at the dead peer (an undirected one may still meet a new peer).
  RecvOp directed = make_recv(in, sizeof in, in);
  directed.peer = t.a_to_b;
  ASSERT_EQ(t.a->recv(directed), Status::Ok);
  ASSERT_EQ(t.sink_a.comps.size(), 4u);
  EXPECT_EQ(t.sink_a.comps[3].status, Status::TimedOut);
  EXPECT_TRUE(t.sink_a.comps[3].cq_entry);
  EXPECT_EQ(t.a->recvs_in_use(), 0u);
}

// next_deadline_ns() covers liveness: a driver that sleeps until it (rather than polling) still
// probes a silent peer and declares a dead one dead on time.
TEST(Engine, NextDeadlineCoversLiveness) {
  EngineConfig ca;
  ca.peer_timeout_ns = 40'000'000;
  ca.rto_max_ns = 200'000'000;  // retransmissions alone would not wake it in time
  Pair t({}, ca);
  char in[8], out[8] = "x";
  t.b.reset();
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, out, 2, out)), Status::Ok);
  PacketBuf bufs[32];
  for (int i = 0; i < 100 && t.sink_a.comps.empty(); ++i) {
    while (uint16_t n = t.link.b().rx_burst(bufs, 32)) t.link.b().free(bufs, n);
    uint64_t d = t.a->next_deadline_ns();
    ASSERT_NE(d, UINT64_MAX);
    ASSERT_LE(d, t.clock.now_ns() + ca.peer_timeout_ns);
    if (d > t.clock.now_ns()) t.clock.advance(d - t.clock.now_ns());
    t.a->progress();
  }
  ASSERT_EQ(t.sink_a.comps.size(), 1u);
  EXPECT_EQ(t.sink_a.comps[0].status, Status::TimedOut);
  // A posted receive and nobody to wait on: the deadline is the probe, a quarter timeout on.
  EngineConfig cc;
  cc.peer_timeout_ns = 40'000'000;
  Pair u({}, cc);
  ASSERT_EQ(u.a->send(make_send(u.a_to_b, out, 2)), Status::Ok);
  ASSERT_TRUE(u.run_until([&] { return !u.a->busy(); }));
  ASSERT_EQ(u.a->recv(make_recv(in, 8)), Status::Ok);
  u.a->progress();
  EXPECT_LE(u.a->next_deadline_ns(), u.clock.now_ns() + cc.peer_timeout_ns / 4);
}

TEST(Engine, ReceiverProbesASilentPeer) {
  EngineConfig ca, cb;
  ca.peer_timeout_ns = cb.peer_timeout_ns = 40'000'000;
  Pair t({}, ca, cb);
  char in[8], out[8] = "x";
  ASSERT_EQ(t.b->recv(make_recv(in, 8)), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, out, 2)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_b.comps.size() == 1 && !t.a->busy(); }));
  // b waits for more; a stays alive and silent: probes keep b's view of a alive.
  ASSERT_EQ(t.b->recv(make_recv(in, 8)), Status::Ok);
  for (int i = 0; i < 300; ++i) {
    t.step();
    t.clock.advance(1'000'000);
  }
  EXPECT_GT(t.b->stats().probes_tx, 0u);
  EXPECT_EQ(t.b->stats().peers_dead, 0u);
  EXPECT_EQ(t.b->recvs_in_use(), 1u);
  // Now a dies: b's probes go unanswered and its waiting receive fails.
  t.a.reset();
  PacketBuf bufs[32];
  for (int i = 0; i < 300 && t.sink_b.comps.size() < 2; ++i) {
    while (uint16_t n = t.link.a().rx_burst(bufs, 32)) t.link.a().free(bufs, n);
    for (uint16_t n = t.link.b().rx_burst(bufs, 32), k = 0; k < n; ++k) t.b->on_packet(bufs[k]);
    t.b->progress();
    t.clock.advance(1'000'000);
  }
  ASSERT_EQ(t.sink_b.comps.size(), 2u);
  EXPECT_EQ(t.sink_b.comps[1].status, Status::TimedOut);
  EXPECT_EQ(t.b->stats().peers_dead, 1u);
}

// progress() walks the peers only after an event or when a timer is due (Engine::scan_peers).
// A receive posted through another engine sharing the matcher (a shared receive context) is
// such an event for every sharer: b probes its silent peer, and declares it dead once it is
// gone, though nothing was posted through b, nothing arrived and no timer of b's was armed.
TEST(Engine, AReceivePostedThroughASharingEngineStartsTheProbes) {
  EngineConfig ca, cb;
  ca.peer_timeout_ns = cb.peer_timeout_ns = 40'000'000;
  Pair t({}, ca, cb);
  Matcher shared(64, 1 << 20);
  ASSERT_TRUE(t.b->share_matcher(shared));
  RecordingSink sink_c;
  EngineConfig cc = cb;
  cc.ep_id = 3;
  Engine c(cc, t.link.b(), t.clock, sink_c);  // posts only: never sends, never polled
  ASSERT_TRUE(c.share_matcher(shared));
  char in[8], out[8] = "x";
  ASSERT_EQ(c.recv(make_recv(in, 8)), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, out, 2)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_b.comps.size() == 1 && !t.a->busy(); }));
  // Idle with nothing posted: no probes are due, whatever the time.
  for (int i = 0; i < 100; ++i) {
    t.step();
    t.clock.advance(1'000'000);
  }
  ASSERT_EQ(t.b->stats().probes_tx, 0u);
  // A receive posted through c: a has been silent for longer than a quarter timeout, so b's
  // next round probes it, and a answers.
  ASSERT_EQ(c.recv(make_recv(in, 8)), Status::Ok);
  t.b->progress();
  EXPECT_EQ(t.b->stats().probes_tx, 1u);
  // The receive consumed (a message from a), then another posted through c, after more
  // silence: probed again.
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, out, 2)), Status::Ok);
  ASSERT_TRUE(t.run_until([&] { return t.sink_b.comps.size() == 2 && !t.a->busy(); }));
  for (int i = 0; i < 100; ++i) {
    t.step();
    t.clock.advance(1'000'000);
  }
  const uint64_t probes = t.b->stats().probes_tx;
  // a dies; then a receive is posted through c. b's rounds must probe a and give up on it.
  t.a.reset();
  ASSERT_EQ(c.recv(make_recv(in, 8)), Status::Ok);
  t.b->progress();
  EXPECT_EQ(t.b->stats().probes_tx, probes + 1);
  PacketBuf bufs[32];
  for (int i = 0; i < 300 && t.b->stats().peers_dead == 0; ++i) {
    while (uint16_t n = t.link.a().rx_burst(bufs, 32)) t.link.a().free(bufs, n);
    t.b->progress();
    t.clock.advance(1'000'000);
  }
  EXPECT_EQ(t.b->stats().peers_dead, 1u);
  c.leave_shared_matcher();
  t.b->leave_shared_matcher();
}

// A round's reading may be older than a time stored during the round: here a held message is
// delivered (drain_held) and its delivery answer queued, which reads the clock afresh and
// restarts the peer's silence (heard_ns) after the round's reading. The liveness check must not
// take 'reading - later time' for 584 years of silence and declare the peer dead.
TEST(Engine, ATimeStoredDuringARoundIsNoSilence) {
  EngineConfig cb;
  cb.max_unexpected_bytes = 2048;  // room for the small message only
  Pair t({}, {}, cb);
  std::vector<uint8_t> small(800, 1), big(3000, 7), in_small(800), in_big(3000);
  int ctx;
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, small.data(), small.size())), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, big.data(), big.size(), &ctx,
                                kOpCompletion | kOpDeliveryComplete)),
            Status::Ok);
  t.a->progress();
  // b gets the big message's segments first (held above the hole), then the small one, which
  // takes the unexpected room: the big one stays held at rcv_nxt, waiting for a receive.
  std::vector<PacketBuf> pkts;
  PacketBuf bufs[32];
  for (int i = 0; i < 1000 && pkts.size() < 4; ++i, t.clock.advance(1000))
    for (uint16_t n = t.link.b().rx_burst(bufs, 32), k = 0; k < n; ++k) pkts.push_back(bufs[k]);
  ASSERT_EQ(pkts.size(), 4u);
  for (size_t k = 1; k < pkts.size(); ++k) t.b->on_packet(pkts[k]);
  t.b->on_packet(pkts[0]);
  ASSERT_GT(t.b->held_packets(), 0u);
  ASSERT_EQ(t.b->recv(make_recv(in_small.data(), in_small.size())), Status::Ok);  // the small one
  ASSERT_EQ(t.b->recv(make_recv(in_big.data(), in_big.size())), Status::Ok);      // waits
  const uint64_t reading = t.clock.now_ns() + 1;  // the round's, taken before...
  t.clock.advance(1'000'000);                     // ...the delivery answer's own reading
  t.b->progress(reading);
  EXPECT_EQ(t.b->held_packets(), 0u);  // delivered in this round, the answer queued
  EXPECT_FALSE(t.b->peer_dead(t.b_to_a));
  EXPECT_EQ(t.b->stats().peers_dead, 0u);
  ASSERT_TRUE(t.run_until([&] { return t.sink_a.comps.size() == 2 && t.sink_b.comps.size() == 2; }));
  for (const Completion& c : t.sink_a.comps) EXPECT_EQ(c.status, Status::Ok);
  EXPECT_EQ(in_small, small);
  EXPECT_EQ(in_big, big);
}
