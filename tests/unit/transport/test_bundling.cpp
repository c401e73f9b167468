// Bundling (segmentation.cpp sends, reassembly.cpp receives; wire::kBundle): small whole
// messages posted to one peer while the packet of the message before them still waits in the
// tx queue ride in that packet: one PSN, one header, one acknowledgement for many. The packet
// leaves once it holds as many messages as the packets ahead of it, so a window of small sends
// goes as several packets (1, 2, 3, 6, 12, ... messages from an idle peer), not one that waits
// for the next progress round; an FI_MORE batch fills packets to the limit. What the
// application sees is unchanged: the same messages, in order, each with its own tag, CQ data
// and completion; what the link sees: fewer packets. A lost bundle is resent whole; a
// receiver that runs out of unexpected-message room part way through a bundle takes the rest
// from the retransmission, without duplicates.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "tests/unit/transport/harness.hpp"
#include "transport/packet_io_filter.hpp"

namespace pollfab::transport::test {
namespace {

using util::Status;

// The messages a data packet carries: 1, or for a bundle 1 + its entries (0 if malformed).
uint32_t msgs_in(const PacketBuf& pkt) {
  if (!(util::load_be16(pkt.data + 4) & wire::kBundle)) return 1;
  const uint32_t payload = util::load_be16(pkt.data + 6), msg_len = util::load_be32(pkt.data + 40);
  const uint8_t* q = pkt.data + wire::kHeaderBytes + msg_len;
  uint32_t left = payload - msg_len, n = 1;
  while (left) {
    const uint32_t used = wire::bundle_entry_span(q, left);
    if (!used) return 0;
    q += used;
    left -= used;
    ++n;
  }
  return n;
}

// Counts the packets that reach the link and the messages in each data packet; drops the
// first drop_bundles packets that carry a bundle.
struct TxTap final : PacketIoFilter {
  using PacketIoFilter::PacketIoFilter;
  uint16_t tx_burst(PacketBuf* pkts, uint16_t n) noexcept override {
    uint16_t i = 0;
    for (; i < n; ++i) {
      ++packets;
      if (pkts[i].data[3] == uint8_t(wire::Type::Data)) msgs.push_back(msgs_in(pkts[i]));
      const bool bundle = util::load_be16(pkts[i].data + 4) & wire::kBundle;
      if (bundle && drop_bundles) {
        --drop_bundles;
        inner_.free(&pkts[i], 1);  // lost on the wire
        ++dropped;
        continue;
      }
      if (inner_.tx_burst(&pkts[i], 1) != 1) break;
    }
    return i;
  }
  uint64_t packets = 0, dropped = 0;
  uint32_t drop_bundles = 0;
  std::vector<uint32_t> msgs;  // per data packet, in the order they left
};

struct Bundling : ::testing::Test {
  static EngineConfig cfg(uint16_t id) {
    EngineConfig c;
    c.ep_id = id;
    c.cc = false;
    return c;
  }
  ManualClock clock;
  MemLink link{MemLinkConfig{}, clock};
  TxTap tap{link.a()};
  RecordingSink sink_a, sink_b;
  std::unique_ptr<Engine> a, b;
  PeerId to_b = kNoPeer;

  void open(EngineConfig ca = cfg(1), EngineConfig cb = cfg(2)) {
    a = std::make_unique<Engine>(ca, tap, clock, sink_a);
    b = std::make_unique<Engine>(cb, link.b(), clock, sink_b);
    to_b = a->peer(PeerAddr{link.host(1), 2});
  }
  void SetUp() override { open(); }

  bool run_until(const std::function<bool()>& pred) {
    return drive_until(link, clock, *a, *b, pred);
  }
  // One-byte messages 0, 1, ...: out[i] to send, a receive posted at b for each into in[i].
  void one_byte_messages(std::vector<uint8_t>& in, std::vector<uint8_t>& out) {
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = uint8_t(i);
      ASSERT_EQ(b->recv(make_recv(&in[i], 1, &in[i])), Status::Ok);
    }
  }
  size_t ok_sends() const { return ok_completions(sink_a, kCompSend); }
};

TEST_F(Bundling, SmallPostsShareThePacketOfTheFirstQueuedOne) {
  char in[10][8] = {}, out[10][8] = {};
  for (int i = 0; i < 10; ++i) {
    out[i][0] = char('a' + i);
    out[i][7] = char('A' + i);
    ASSERT_EQ(b->recv(make_recv(in[i], sizeof in[i], in[i])), Status::Ok);
  }
  for (int i = 0; i < 10; ++i) ASSERT_EQ(a->send(make_send(to_b, out[i], 8, out[i])), Status::Ok);
  // The first post leaves at once (alone); the next two once the second joins the packet of
  // the first of them (as many as ahead of it), then three, then the last four wait for
  // progress() in one packet.
  EXPECT_EQ(tap.msgs, (std::vector<uint32_t>{1, 2, 3}));
  a->progress();
  EXPECT_EQ(tap.msgs, (std::vector<uint32_t>{1, 2, 3, 4})) << "ten 8-byte messages, four packets";
  EXPECT_EQ(a->stats().bundled_msgs, 6u);
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() == 10 && ok_sends() == 10; }));
  for (int i = 0; i < 10; ++i) {
    const Completion& c = sink_b.comps[size_t(i)];
    EXPECT_EQ(c.context, in[i]) << "in order";
    EXPECT_EQ(c.status, Status::Ok);
    EXPECT_EQ(c.len, 8u);
    EXPECT_EQ(in[i][0], char('a' + i));
    EXPECT_EQ(in[i][7], char('A' + i));
  }
  EXPECT_EQ(b->stats().rx_pkts, tap.packets) << "the receiver saw the four packets";
  EXPECT_EQ(a->sends_in_use(), 0u);
}

TEST_F(Bundling, EachMessageKeepsItsTagCqDataAndKind) {
  // Alternate tagged and untagged sends, some with CQ data; the receiver matches the tagged
  // ones by tag (posted in reverse order) and the untagged ones in order.
  constexpr int kN = 12;
  uint64_t out[kN], in[kN] = {};
  for (int i = 0; i < kN; ++i) out[i] = 0x1000 + uint64_t(i);
  for (int i = kN - 1; i >= 0; --i) {
    RecvOp r = make_recv(&in[i], 8, &in[i]);
    if (i % 2) {
      r.flags |= kOpTagged;
      r.tag = 700 + uint64_t(i);
    }
    ASSERT_EQ(b->recv(r), Status::Ok);
  }
  // Untagged receives were posted in reverse too: untagged message k lands in the receive
  // posted k-th among the untagged ones.
  for (int i = 0; i < kN; ++i) {
    SendOp s = make_send(to_b, &out[i], 8, &out[i]);
    if (i % 2) {
      s.flags |= kOpTagged;
      s.tag = 700 + uint64_t(i);
    }
    if (i % 3 == 0) {
      s.flags |= kOpCqData;
      s.cq_data = 0xC0DE0000 + uint64_t(i);
    }
    ASSERT_EQ(a->send(s), Status::Ok);
  }
  a->progress();
  EXPECT_EQ(tap.msgs, (std::vector<uint32_t>{1, 2, 3, 6}));
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() == size_t(kN); }));
  // The receive completions of a packet reach the sink in one call each.
  EXPECT_EQ(sink_b.recv_bursts, (std::vector<uint32_t>{1, 2, 3, 6}));
  int untagged_seen = 0;
  for (const Completion& c : sink_b.comps) {
    ASSERT_EQ(c.status, Status::Ok);
    EXPECT_NE(c.peer, kNoPeer);
    EXPECT_EQ(c.peer, sink_b.comps[0].peer);
    EXPECT_EQ(c.len, 8u);
    EXPECT_EQ(c.buf, c.context);
    const uint64_t v = *static_cast<uint64_t*>(c.context);
    const int i = int(v - 0x1000);
    ASSERT_GE(i, 0);
    ASSERT_LT(i, kN);
    EXPECT_EQ(bool(c.flags & kCompTagged), i % 2 == 1) << i;
    if (i % 2) {
      EXPECT_EQ(c.tag, 700u + uint64_t(i));
      EXPECT_EQ(c.context, &in[i]) << "a tagged message lands in the receive with its tag";
    } else {
      // untagged receives were posted for i = 10, 8, ..., 0: the k-th untagged message (i = 2k)
      // takes the k-th of them
      EXPECT_EQ(c.context, &in[kN - 2 - 2 * untagged_seen]);
      ++untagged_seen;
    }
    EXPECT_EQ(bool(c.flags & kCompRemoteCqData), i % 3 == 0) << i;
    if (i % 3 == 0) {
      EXPECT_EQ(c.cq_data, 0xC0DE0000u + uint64_t(i));
    }
  }
}

TEST_F(Bundling, APacketTakesWhatFitsAndMessagesAboveTheLimitGoAlone) {
  // 100-byte messages: 13 fit one 1400-byte segment (100 + a 104-byte entry each after the
  // first); 2000-byte ones are above bundle_max_bytes (1024) and take packets of their own.
  std::vector<std::vector<uint8_t>> out, in;
  std::vector<size_t> sizes;
  for (int i = 0; i < 31; ++i) sizes.push_back(100);
  sizes.push_back(2000);
  sizes.push_back(100);
  sizes.push_back(100);
  for (size_t i = 0; i < sizes.size(); ++i) {
    out.emplace_back(sizes[i]);
    fill_xorshift(out.back().data(), sizes[i], i + 1);
    in.emplace_back(sizes[i]);
    ASSERT_EQ(b->recv(make_recv(in.back().data(), sizes[i], in.back().data())), Status::Ok);
  }
  // One FI_MORE batch: packets fill to the segment (none leaves early), its last post sends
  // what is left.
  for (size_t i = 0; i < sizes.size(); ++i) {
    SendOp s = make_send(to_b, out[i].data(), sizes[i], out[i].data());
    if (i + 1 < sizes.size()) s.flags |= kOpMore;
    ASSERT_EQ(a->send(s), Status::Ok);
  }
  const uint32_t seg = a->segment_bytes();
  const uint32_t per = 1 + (seg - 100) / (100 + 4);  // messages per full packet
  ASSERT_GE(per, 2u);
  ASSERT_LT(per, 31u) << "the test needs the 31 to fill a packet";
  // The 31 in full packets of `per` and what is left, the 2000-byte one in 2 segments of its
  // own, the last two in one packet.
  std::vector<uint32_t> want;
  for (uint32_t left = 31; left; left -= std::min(left, per)) want.push_back(std::min(left, per));
  for (uint32_t x : {1u, 1u, 2u}) want.push_back(x);
  EXPECT_EQ(tap.msgs, want) << "segment " << seg << ", " << per << " a packet";
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() == sizes.size() && ok_sends() == sizes.size(); }));
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(sink_b.comps[i].context, in[i].data());
    EXPECT_EQ(in[i], out[i]) << "message " << i;
  }
}

TEST_F(Bundling, AtMost64MessagesShareAPacket) {
  constexpr int kN = 250;
  std::vector<uint8_t> in(kN), out(kN);
  ASSERT_NO_FATAL_FAILURE(one_byte_messages(in, out));
  for (int i = 0; i < kN; ++i) ASSERT_EQ(a->send(make_send(to_b, &out[size_t(i)], 1)), Status::Ok);
  // Packets grow to as many as ahead of them (1 + 2 + ... + 48 = 96), then fill to 64 and
  // leave full; the last 26 wait for progress().
  EXPECT_EQ(tap.msgs, (std::vector<uint32_t>{1, 2, 3, 6, 12, 24, 48, 64, 64}));
  a->progress();
  EXPECT_EQ(tap.msgs.back(), 26u);
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() == size_t(kN); }));
  EXPECT_EQ(in, out);
}

// An FI_MORE batch is not cut short: its posts fill packets to the limit, and its last post
// sends what is left.
TEST_F(Bundling, AnFiMoreBatchFillsPacketsToTheLimit) {
  constexpr int kN = 150;
  std::vector<uint8_t> in(kN), out(kN);
  ASSERT_NO_FATAL_FAILURE(one_byte_messages(in, out));
  for (int i = 0; i < kN; ++i) {
    SendOp s = make_send(to_b, &out[size_t(i)], 1);
    if (i + 1 < kN) s.flags |= kOpMore;
    ASSERT_EQ(a->send(s), Status::Ok);
  }
  EXPECT_EQ(tap.msgs, (std::vector<uint32_t>{64, 64, 22}));
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() == size_t(kN); }));
  EXPECT_EQ(in, out);
}

// Messages that waited behind a closed window leave together when it opens: only an
// application's post sends a bundle early, not the progress round that sends what waited.
TEST_F(Bundling, MessagesThatWaitedBehindAClosedWindowShareOnePacket) {
  EngineConfig ca = cfg(1);
  ca.window_pkts = 8;
  ca.reorder_window_pkts = 8;
  open(ca, cfg(2));
  constexpr int kBig = 8, kSmall = 30;
  std::vector<std::vector<uint8_t>> out, in;
  for (int i = 0; i < kBig + kSmall; ++i) {
    const size_t len = i < kBig ? 1100 : 8;  // above bundle_max_bytes: a packet each
    out.emplace_back(len);
    fill_xorshift(out.back().data(), len, uint64_t(i) + 1);
    in.emplace_back(len);
    ASSERT_EQ(b->recv(make_recv(in.back().data(), len, in.back().data())), Status::Ok);
  }
  for (int i = 0; i < kBig + kSmall; ++i)
    ASSERT_EQ(a->send(make_send(to_b, out[size_t(i)].data(), out[size_t(i)].size())), Status::Ok);
  a->progress();
  ASSERT_EQ(tap.msgs, std::vector<uint32_t>(kBig, 1u)) << "the window is full: the rest waits";
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() == size_t(kBig + kSmall); }));
  EXPECT_EQ(tap.msgs.size(), size_t(kBig + 1));
  EXPECT_EQ(tap.msgs.back(), uint32_t(kSmall)) << "one packet once the window opened";
  for (int i = 0; i < kBig + kSmall; ++i) EXPECT_EQ(in[size_t(i)], out[size_t(i)]) << i;
}

TEST_F(Bundling, ALostBundleIsResentWholeAndDeliveredOnce) {
  tap.drop_bundles = 2;  // the bundle, and its first retransmission
  char in[20][16] = {}, out[20][16] = {};
  for (int i = 0; i < 20; ++i) {
    std::snprintf(out[i], sizeof out[i], "msg %d", i);
    ASSERT_EQ(b->recv(make_recv(in[i], sizeof in[i], in[i])), Status::Ok);
  }
  for (int i = 0; i < 20; ++i) {  // one FI_MORE batch: one bundle of 20
    SendOp s = make_send(to_b, out[i], 16, out[i]);
    if (i + 1 < 20) s.flags |= kOpMore;
    ASSERT_EQ(a->send(s), Status::Ok);
  }
  EXPECT_EQ(tap.msgs, (std::vector<uint32_t>{20}));
  a->progress();
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() == 20 && ok_sends() == 20; }));
  EXPECT_EQ(tap.dropped, 2u);
  EXPECT_GE(a->stats().retx_pkts, 2u);
  EXPECT_EQ(tap.msgs[1], 20u) << "resent whole";
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(sink_b.comps[size_t(i)].context, in[i]);
    EXPECT_STREQ(in[i], out[i]);
  }
  // No duplicate completion later either.
  run_until([] { return false; });
  EXPECT_EQ(sink_b.comps.size(), 20u);
  EXPECT_EQ(ok_sends(), 20u);
}

TEST_F(Bundling, NoRoomPartWayThroughABundleResumesWithoutDuplicates) {
  // The receiver buffers unexpected messages in a small budget: bundles of six 200-byte
  // unexpected messages do not fit at once. The messages a bundle got in stay in; the rest come
  // with its retransmission, as receives take the buffered ones.
  EngineConfig cb = cfg(2);
  cb.max_unexpected_bytes = 2048;
  open(cfg(1), cb);
  constexpr int kN = 40;
  constexpr size_t kLen = 200;
  std::vector<std::vector<uint8_t>> out(kN, std::vector<uint8_t>(kLen));
  for (int i = 0; i < kN; ++i) fill_xorshift(out[size_t(i)].data(), kLen, uint64_t(i) + 7);
  for (int i = 0; i < kN; ++i)
    ASSERT_EQ(a->send(make_send(to_b, out[size_t(i)].data(), kLen)), Status::Ok);
  a->progress();
  std::vector<std::vector<uint8_t>> in(kN, std::vector<uint8_t>(kLen));
  int posted = 0;
  // Whenever a message waits unexpected, one receive takes it (at once, in arrival order).
  ASSERT_TRUE(run_until([&] {
    if (posted < kN && b->unexpected_in_use() > 0) {
      EXPECT_EQ(b->recv(make_recv(in[size_t(posted)].data(), kLen, in[size_t(posted)].data())),
                Status::Ok);
      ++posted;
    }
    return sink_b.comps.size() == size_t(kN) && ok_sends() == size_t(kN);
  }));
  EXPECT_GT(b->stats().drop_unexpected_full, 0u) << "the budget ran out part way";
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(sink_b.comps[size_t(i)].context, in[size_t(i)].data()) << "in order, once";
    EXPECT_EQ(in[size_t(i)], out[size_t(i)]) << "message " << i;
  }
  run_until([] { return false; });
  EXPECT_EQ(sink_b.comps.size(), size_t(kN));
  EXPECT_EQ(b->unexpected_in_use(), 0u);
}

// Bundled messages land as lone ones would: one in a receive too small for it is truncated
// (Truncated, olen), one with no receive posted waits unexpected for the next, and a
// multi-recv buffer takes several in turn.
TEST_F(Bundling, TruncationUnexpectedAndMultiRecvAsForLoneMessages) {
  char small[4] = {}, exact[8] = {}, later[8] = {}, multi[24] = {};
  ASSERT_EQ(b->recv(make_recv(small, sizeof small, small)), Status::Ok);
  ASSERT_EQ(b->recv(make_recv(exact, sizeof exact, exact)), Status::Ok);
  RecvOp mr = make_recv(multi, sizeof multi, multi, kAnyPeer, kOpCompletion | kOpMultiRecv);
  mr.min_multi_recv = 8;
  char out[6][8];
  for (int i = 0; i < 6; ++i) {
    for (int k = 0; k < 8; ++k) out[i][k] = char('a' + i);
  }
  // Message 0 leaves alone; 1-2 share a packet, 3-5 another. 0 -> small (truncated), 1 ->
  // exact, 2-4 -> the multi-recv buffer (24 bytes: three of 8; retired at less than 8 free),
  // 5 -> unexpected.
  for (int i = 0; i < 6; ++i) ASSERT_EQ(a->send(make_send(to_b, out[i], 8, out[i])), Status::Ok);
  ASSERT_EQ(b->recv(mr), Status::Ok);
  a->progress();
  EXPECT_EQ(tap.msgs, (std::vector<uint32_t>{1, 2, 3}));
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() >= 5 && ok_sends() == 6; }));
  ASSERT_EQ(b->recv(make_recv(later, sizeof later, later)), Status::Ok);  // takes message 5
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() == 6; }));
  const auto& c = sink_b.comps;
  EXPECT_EQ(c[0].context, small);
  EXPECT_EQ(c[0].status, Status::Truncated);
  EXPECT_EQ(c[0].olen, 4u);
  EXPECT_EQ(std::string(small, 4), "aaaa");
  EXPECT_EQ(c[1].context, exact);
  EXPECT_EQ(c[1].status, Status::Ok);
  EXPECT_EQ(std::string(exact, 8), std::string(8, 'b'));
  for (int i = 2; i <= 4; ++i) {
    EXPECT_EQ(c[size_t(i)].context, multi);
    EXPECT_EQ(c[size_t(i)].status, Status::Ok);
    EXPECT_EQ(c[size_t(i)].buf, multi + 8 * (i - 2));
  }
  EXPECT_TRUE(c[4].flags & kCompMultiRecv) << "the buffer retires with its last slice";
  EXPECT_EQ(std::string(multi, 24), std::string(8, 'c') + std::string(8, 'd') + std::string(8, 'e'));
  EXPECT_EQ(c[5].context, later);
  EXPECT_EQ(std::string(later, 8), std::string(8, 'f'));
  // Only message 1 took the burst path; the truncated, multi-recv and unexpected ones did not,
  // and it still came before the slices of the same packet (above).
  EXPECT_EQ(sink_b.recv_bursts, (std::vector<uint32_t>{1}));
}

TEST_F(Bundling, OffItIsOneMessageAPacket) {
  EngineConfig ca = cfg(1);
  ca.bundle_max_bytes = 0;
  open(ca, cfg(2));
  char in[5][8] = {}, out[5][8] = {"a", "b", "c", "d", "e"};
  for (auto& r : in) ASSERT_EQ(b->recv(make_recv(r, 8, r)), Status::Ok);
  for (auto& s : out) ASSERT_EQ(a->send(make_send(to_b, s, 8)), Status::Ok);
  a->progress();
  EXPECT_EQ(tap.packets, 5u);
  EXPECT_EQ(a->stats().bundled_msgs, 0u);
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() == 5; }));
}

// Only a plain copied send joins the bundle queued before it, and only such a packet takes
// more: a send with FI_DELIVERY_COMPLETE (answered by the target) and a zero-copy one
// (attached from the application's buffer) each go alone, and the send after either starts a
// packet of its own. One FI_MORE batch, so every packet waits in the queue until the last post.
TEST(BundlingRules, OnlyPlainCopiedSendsShareAPacket) {
  ManualClock clock;
  MemLinkConfig lc;
  lc.zero_copy_min_bytes = 512;
  MemLink link{lc, clock};
  TxTap tap{link.a()};
  RecordingSink sink_a, sink_b;
  EngineConfig ca = Bundling::cfg(1), cb = Bundling::cfg(2);
  Engine a(ca, tap, clock, sink_a), b(cb, link.b(), clock, sink_b);
  const PeerId to_b = a.peer(PeerAddr{link.host(1), 2});
  // 8 bytes each but the seventh, 600 bytes: under bundle_max_bytes, over zero_copy_min_bytes.
  const std::vector<size_t> sizes{8, 8, 8, 8, 8, 8, 600, 8, 8};
  const size_t dc = 3;  // the send with FI_DELIVERY_COMPLETE (the zero-copy one: the 600 bytes)
  std::vector<std::vector<uint8_t>> out, in;
  for (size_t i = 0; i < sizes.size(); ++i) {
    out.emplace_back(sizes[i]);
    fill_xorshift(out.back().data(), sizes[i], i + 1);
    in.emplace_back(sizes[i]);
    ASSERT_EQ(b.recv(make_recv(in.back().data(), sizes[i], in.back().data())), Status::Ok);
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    SendOp s = make_send(to_b, out[i].data(), sizes[i], out[i].data());
    if (i == dc) s.flags |= kOpDeliveryComplete;
    if (i + 1 < sizes.size()) s.flags |= kOpMore;
    ASSERT_EQ(a.send(s), Status::Ok);
  }
  EXPECT_EQ(tap.msgs, (std::vector<uint32_t>{3, 1, 2, 1, 2}))
      << "3 small; the FI_DELIVERY_COMPLETE one alone; 2 small; the zero-copy one alone; 2 small";
  EXPECT_EQ(a.stats().bundled_msgs, 4u);
  EXPECT_EQ(a.stats().zc_tx_pkts, 1u) << "the 600-byte send attached, not copied into a bundle";
  ASSERT_TRUE(drive_until(link, clock, a, b, [&] {
    return sink_b.comps.size() == sizes.size() && ok_completions(sink_a, kCompSend) == sizes.size();
  }));
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(sink_b.comps[i].context, in[i].data()) << "in order: " << i;
    EXPECT_EQ(in[i], out[i]) << "message " << i;
  }
}

}  // namespace
}  // namespace pollfab::transport::test
