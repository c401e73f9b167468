// The headers of a message's segments (segmentation.cpp, emit_segment): the first segment's
// header is built field by field; each next segment built right behind it copies that header
// and changes flags, payload_len, psn and offset (wire::encode_continuation). What the peer
// must see either way: every segment names the same message (length, tag, data), its own PSN
// and offset, FIRST on the first only, LAST on the last only, the same piggybacked ACK, and a
// checksum of its own when checksums are on; a resent segment carries RETRANSMIT and the ACK
// of the moment it is resent.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "tests/unit/transport/harness.hpp"
#include "transport/packet_io_filter.hpp"

namespace pollfab::transport::test {
namespace {

using util::Status;

// Records the header of every data packet that leaves, with whether its checksum verifies
// (in checksum), then passes the packets on (to harness.hpp's DropPsn, which may lose one).
struct HeaderTap final : PacketIoFilter {
  using PacketIoFilter::PacketIoFilter;
  uint16_t tx_burst(PacketBuf* pkts, uint16_t n) noexcept override {
    for (uint16_t i = 0; i < n; ++i) {
      wire::Header h;
      if (wire::decode(pkts[i].data, pkts[i].len, h) != wire::DecodeError::None ||
          h.type != wire::Type::Data)
        continue;
      std::vector<uint8_t> copy(pkts[i].data, pkts[i].data + pkts[i].len);
      h.checksum = wire::verify(copy.data(), copy.size()) ? 1 : 0;  // 1: checks out
      headers.push_back(h);
    }
    return inner_.tx_burst(pkts, n);
  }
  std::vector<wire::Header> headers;
};

// Changes the bytes of one data packet (PSN psn, the first `times` times it leaves) with edit,
// then seals it again, as if a sender had built it so.
struct Tamper final : PacketIoFilter {
  using PacketIoFilter::PacketIoFilter;
  uint16_t tx_burst(PacketBuf* pkts, uint16_t n) noexcept override {
    for (uint16_t i = 0; i < n; ++i) {
      wire::Header h;
      PacketBuf& b = pkts[i];
      if (times && edit && wire::decode(b.data, b.len, h) == wire::DecodeError::None &&
          h.type == wire::Type::Data && h.psn == psn) {
        --times;
        edit(b.data);
        wire::seal(b.data, b.len - b.ext_len, b.ext, b.ext_len);
      }
    }
    return inner_.tx_burst(pkts, n);
  }
  uint32_t psn = 0, times = 0;
  std::function<void(uint8_t*)> edit;
};

// Makes one received data packet (PSN psn, the first `times` times) look as if it came from
// another host: its header unchanged, its source address (PacketBuf::src) `from`.
struct SourceSwap final : PacketIoFilter {
  using PacketIoFilter::PacketIoFilter;
  uint16_t rx_burst(PacketBuf* out, uint16_t n) noexcept override {
    const uint16_t got = inner_.rx_burst(out, n);
    for (uint16_t i = 0; i < got; ++i) {
      wire::Header h;
      if (times && wire::decode(out[i].data, out[i].len, h) == wire::DecodeError::None &&
          h.type == wire::Type::Data && h.psn == psn) {
        --times;
        out[i].src = from;
      }
    }
    return got;
  }
  uint32_t psn = 0, times = 0;
  HostAddr from;
};

struct SegmentHeaders : ::testing::Test {
  static EngineConfig cfg(uint16_t ep) {
    EngineConfig c;
    c.ep_id = ep;
    c.checksum = true;
    return c;
  }
  ManualClock clock;
  MemLink link{MemLinkConfig{}, clock};
  DropPsn drop{link.a()};  // nothing lost unless a test asks (times set below)
  Tamper tamper{drop};     // nothing changed unless a test asks
  HeaderTap tap{tamper};
  RecordingSink sink_a, sink_b;
  Engine a{cfg(1), tap, clock, sink_a};
  SourceSwap swap{link.b()};  // nothing changed unless a test asks
  Engine b{cfg(2), swap, clock, sink_b};
  PeerId to_b = a.peer(PeerAddr{link.host(1), 2});
  PeerId to_a = b.peer(PeerAddr{link.host(0), 1});

  SegmentHeaders() { drop.times = 0; }

  bool run_until(const std::function<bool()>& pred) {
    return drive_until(link, clock, a, b, pred, 100000);
  }
  // b sends a a small message first, so a's data packets carry an ACK with news (ack_psn 1).
  void give_a_something_to_ack() {
    static char in[8], out[8] = "hello";
    ASSERT_EQ(a.recv(make_recv(in, sizeof in)), Status::Ok);
    ASSERT_EQ(b.send(make_send(to_a, out, sizeof out)), Status::Ok);
    ASSERT_TRUE(run_until([&] { return !sink_a.comps.empty() && !sink_b.comps.empty(); }));
    sink_a.comps.clear();
    sink_b.comps.clear();
    tap.headers.clear();
  }
};

TEST_F(SegmentHeaders, EverySegmentOfAMessageNamesItAndCarriesItsOwnPsnOffsetAndFlags) {
  give_a_something_to_ack();
  const size_t len = 5000;  // four segments of 1,400 bytes or less
  std::vector<uint8_t> out(len), in(len);
  fill_xorshift(out.data(), len, 7);
  RecvOp r = make_recv(in.data(), len);
  r.flags |= kOpTagged;
  r.tag = 0x1234;
  ASSERT_EQ(b.recv(r), Status::Ok);
  SendOp s = make_send(to_b, out.data(), len, nullptr, kOpCompletion | kOpTagged | kOpCqData);
  s.tag = 0x1234;
  s.cq_data = 0xabcdef;
  ASSERT_EQ(a.send(s), Status::Ok);
  ASSERT_TRUE(run_until([&] { return !sink_b.comps.empty() && !sink_a.comps.empty(); }));
  ASSERT_EQ(sink_b.comps[0].status, Status::Ok);
  EXPECT_EQ(in, out);

  ASSERT_GE(tap.headers.size(), 4u);
  const auto& h0 = tap.headers[0];
  uint32_t offset = 0;
  for (size_t i = 0; i < tap.headers.size(); ++i) {
    const auto& h = tap.headers[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(h.psn, h0.psn + i);
    EXPECT_EQ(h.offset, offset);
    EXPECT_EQ(bool(h.flags & wire::kFirst), i == 0);
    EXPECT_EQ(bool(h.flags & wire::kLast), i + 1 == tap.headers.size());
    EXPECT_TRUE(h.flags & wire::kTagged);
    EXPECT_TRUE(h.flags & wire::kCqData);
    EXPECT_TRUE(h.flags & wire::kAckValid);
    EXPECT_FALSE(h.flags & wire::kRetransmit);
    EXPECT_EQ(h.msg_len, len);
    EXPECT_EQ(h.tag, 0x1234u);
    EXPECT_EQ(h.cq_data, 0xabcdefu);
    EXPECT_EQ(h.ack_psn, 1u);  // b's message, acknowledged on every segment
    EXPECT_EQ(h.ack_psn, h0.ack_psn);
    EXPECT_EQ(h.credits, h0.credits);
    EXPECT_EQ(h.src_ep, 1);
    EXPECT_EQ(h.dst_ep, 2);
    EXPECT_EQ(h.checksum, 1u) << "checksum does not verify";
    offset += h.payload_len;
  }
  EXPECT_EQ(offset, len);
}

TEST_F(SegmentHeaders, AResentMiddleSegmentIsBuiltAfreshWithRetransmitAndTheAckOfTheMoment) {
  give_a_something_to_ack();
  const size_t len = 5000;
  std::vector<uint8_t> out(len), in(len);
  fill_xorshift(out.data(), len, 11);
  ASSERT_EQ(b.recv(make_recv(in.data(), len)), Status::Ok);
  drop.drop_psn = 1;  // a's second data packet (PSNs start at 0): the message's second segment
  drop.times = 1;
  // b's second message reaches a before a resends: the resent segment acknowledges it too.
  static char in2[8], out2[8] = "again";
  ASSERT_EQ(a.recv(make_recv(in2, sizeof in2)), Status::Ok);
  ASSERT_EQ(a.send(make_send(to_b, out.data(), len)), Status::Ok);
  ASSERT_EQ(b.send(make_send(to_a, out2, sizeof out2)), Status::Ok);
  ASSERT_TRUE(run_until([&] { return sink_b.comps.size() == 2 && sink_a.comps.size() == 2; }));
  EXPECT_EQ(in, out);

  std::vector<wire::Header> resent;
  for (const auto& h : tap.headers)
    if (h.psn == 1 && (h.flags & wire::kRetransmit)) resent.push_back(h);
  ASSERT_FALSE(resent.empty());
  const auto& h = resent[0];
  EXPECT_FALSE(h.flags & wire::kFirst);
  EXPECT_FALSE(h.flags & wire::kLast);
  EXPECT_EQ(h.offset, tap.headers[0].payload_len);
  EXPECT_EQ(h.msg_len, len);
  EXPECT_EQ(h.ack_psn, 2u);  // both of b's messages
  EXPECT_EQ(h.checksum, 1u);
}

// The receiver takes in a message's later segments by comparing each header with the one
// before (RxContinuation in transport/rx_continuation.hpp, wire::decode_continuation). A later segment that differs
// where a continuation may not goes through every check, as any packet does: one addressed to
// another incarnation is dropped as stale, one whose offset runs past the message as malformed,
// and the resent copy completes the message.
TEST_F(SegmentHeaders, LaterSegmentsAreTakenInByComparisonAndADifferentOneByEveryCheck) {
  give_a_something_to_ack();
  const size_t len = 5000;  // four segments: PSNs 0-3
  std::vector<uint8_t> out(len), in(len);
  fill_xorshift(out.data(), len, 5);
  ASSERT_EQ(b.recv(make_recv(in.data(), len)), Status::Ok);
  ASSERT_EQ(a.send(make_send(to_b, out.data(), len)), Status::Ok);
  ASSERT_TRUE(run_until([&] { return !sink_b.comps.empty() && !sink_a.comps.empty(); }));
  EXPECT_EQ(in, out);
  EXPECT_EQ(b.stats().rx_continued, 3u);  // the three after the first

  struct Edit {
    const char* what;
    std::function<void(uint8_t*)> edit;
    uint64_t EngineStats::*drop;
  };
  const Edit edits[] = {
      {"another incarnation", [](uint8_t* p) { p[19] ^= 1; }, &EngineStats::drop_stale_epoch},
      {"offset past the message",
       [](uint8_t* p) { util::store_be32(p + 44, 4900); }, &EngineStats::drop_protocol},
  };
  uint32_t psn = 4;  // the next message's first PSN
  for (const Edit& e : edits) {
    SCOPED_TRACE(e.what);
    sink_a.comps.clear();
    sink_b.comps.clear();
    const EngineStats before = b.stats();
    const uint64_t resent = a.stats().retx_pkts;
    fill_xorshift(out.data(), len, psn);
    ASSERT_EQ(b.recv(make_recv(in.data(), len)), Status::Ok);
    tamper.psn = psn + 2;  // the message's third segment
    tamper.times = 1;
    tamper.edit = e.edit;
    ASSERT_EQ(a.send(make_send(to_b, out.data(), len)), Status::Ok);
    ASSERT_TRUE(run_until([&] { return !sink_b.comps.empty() && !sink_a.comps.empty(); }));
    EXPECT_EQ(tamper.times, 0u);
    ASSERT_EQ(sink_b.comps[0].status, Status::Ok);
    EXPECT_EQ(in, out);
    EXPECT_EQ(b.stats().*e.drop, before.*e.drop + 1);
    EXPECT_GT(a.stats().retx_pkts, resent);  // the dropped segment, sent again
    psn += 4;
  }
}

// The comparison holds only for the sender of the packet before: a later segment with the same
// header from another host is that host's packet (a new peer, here one whose PSNs start
// elsewhere), taken in by the full path; the real sender's segment is resent.
TEST_F(SegmentHeaders, ASegmentWithTheSameHeaderFromAnotherHostIsThatHostsPacket) {
  const size_t len = 5000;  // four segments: PSNs 0-3
  std::vector<uint8_t> out(len), in(len);
  fill_xorshift(out.data(), len, 9);
  ASSERT_EQ(b.recv(make_recv(in.data(), len)), Status::Ok);
  swap.psn = 2;  // the third segment
  swap.times = 1;
  swap.from = link.host(0);
  swap.from.bytes[0] ^= 1;
  ASSERT_EQ(a.send(make_send(to_b, out.data(), len)), Status::Ok);
  ASSERT_TRUE(drive_until(
      link, clock, a, b, [&] { return !sink_b.comps.empty() && !sink_a.comps.empty(); }, 100000,
      &swap));  // b receives through the swap
  EXPECT_EQ(swap.times, 0u);
  ASSERT_EQ(sink_b.comps[0].status, Status::Ok);
  EXPECT_EQ(in, out);
  EXPECT_EQ(b.peer_count(), 2u);  // a, and the host the third segment seemed to come from
  // Only the second segment followed its sender's packet before; the swapped one, the fourth
  // (after another sender's) and the resent third went the full way.
  EXPECT_EQ(b.stats().rx_continued, 1u);
  EXPECT_GT(a.stats().retx_pkts, 0u);
}

}  // namespace
}  // namespace pollfab::transport::test
