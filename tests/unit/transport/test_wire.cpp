#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <vector>

#include "transport/wire.hpp"

using namespace pollfab::transport::wire;

namespace {

Header sample() {
  Header h;
  h.type = Type::Data;
  h.flags = kFirst | kTagged | kAckValid;
  h.payload_len = 100;
  h.src_ep = 7;
  h.dst_ep = 9;
  h.src_epoch = 0xdeadbeef;
  h.dst_epoch = 0x01020304;
  h.psn = 0xfffffff0;
  h.ack_psn = 42;
  h.sack = 0x8000000000000001ull;
  h.msg_len = 1000;
  h.offset = 0;
  h.tag = 0x1122334455667788ull;
  h.cq_data = 0x99;
  return h;
}

}  // namespace

TEST(Wire, RoundTrip) {
  uint8_t buf[kHeaderBytes + 100] = {};
  Header h = sample();
  encode(h, buf);
  Header d;
  ASSERT_EQ(decode(buf, sizeof buf, d), DecodeError::None);
  EXPECT_EQ(d.type, h.type);
  EXPECT_EQ(d.flags, h.flags);
  EXPECT_EQ(d.payload_len, h.payload_len);
  EXPECT_EQ(d.src_ep, 7);
  EXPECT_EQ(d.dst_ep, 9);
  EXPECT_EQ(d.src_epoch, h.src_epoch);
  EXPECT_EQ(d.dst_epoch, h.dst_epoch);
  EXPECT_EQ(d.psn, h.psn);
  EXPECT_EQ(d.ack_psn, 42u);
  EXPECT_EQ(d.sack, h.sack);
  EXPECT_EQ(d.msg_len, 1000u);
  EXPECT_EQ(d.tag, h.tag);
  EXPECT_EQ(d.cq_data, h.cq_data);
  // Big-endian on the wire: magic first, "PF".
  EXPECT_EQ(buf[0], 0x50);
  EXPECT_EQ(buf[1], 0x46);
  EXPECT_EQ(buf[2], kVersion);
}

TEST(Wire, RejectsMalformed) {
  uint8_t buf[kHeaderBytes + 100] = {};
  Header h = sample(), d;
  encode(h, buf);
  EXPECT_EQ(decode(buf, kHeaderBytes - 1, d), DecodeError::Short);
  EXPECT_EQ(decode(buf, kHeaderBytes + 50, d), DecodeError::BadLength);  // truncated payload
  uint8_t bad[sizeof buf];
  std::memcpy(bad, buf, sizeof buf);
  bad[0] ^= 1;
  EXPECT_EQ(decode(bad, sizeof bad, d), DecodeError::BadMagic);
  std::memcpy(bad, buf, sizeof buf);
  bad[2] = 2;
  EXPECT_EQ(decode(bad, sizeof bad, d), DecodeError::BadVersion);
  std::memcpy(bad, buf, sizeof buf);
  bad[3] = 99;
  EXPECT_EQ(decode(bad, sizeof bad, d), DecodeError::BadType);
  std::memcpy(bad, buf, sizeof buf);
  bad[4] = 0x80;
  EXPECT_EQ(decode(bad, sizeof bad, d), DecodeError::BadFlags);

  Header seg = sample();
  seg.flags = kLast;
  seg.offset = 950;  // 950 + 100 > 1000
  encode(seg, buf);
  EXPECT_EQ(decode(buf, sizeof buf, d), DecodeError::BadSegment);
  seg.offset = 10;
  seg.flags = kFirst;  // first segment must start at 0
  encode(seg, buf);
  EXPECT_EQ(decode(buf, sizeof buf, d), DecodeError::BadSegment);
  seg.offset = 800;
  seg.flags = kLast;  // last must end at msg_len
  encode(seg, buf);
  EXPECT_EQ(decode(buf, sizeof buf, d), DecodeError::BadSegment);

  Header ack;
  ack.type = Type::Ack;
  ack.payload_len = 4;  // an extended SACK bitmap
  encode(ack, buf);
  EXPECT_EQ(decode(buf, kHeaderBytes + 4, d), DecodeError::None);
  std::vector<uint8_t> big(kHeaderBytes + kMaxSackExtBytes + 8);
  ack.payload_len = static_cast<uint16_t>(kMaxSackExtBytes + 8);  // longer than any window
  encode(ack, big.data());
  EXPECT_EQ(decode(big.data(), big.size(), d), DecodeError::BadLength);
}

TEST(Wire, Crc32cKnownValuesAndHardwareMatchesTable) {
  using pollfab::util::crc32c;
  using pollfab::util::crc32c_sw;
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);  // RFC 3720 check value
  EXPECT_EQ(crc32c_sw("123456789", 9), 0xE3069283u);
  uint8_t zeros[32] = {};
  EXPECT_EQ(crc32c(zeros, 32), 0x8A9136AAu);       // RFC 3720 B.4: 32 bytes of zeros
  std::vector<uint8_t> v(3001);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i * 131 + 7);
  // Every length up to 2 KB (the hardware path's three-way rounds of 768 and 192 bytes and its
  // tails), at aligned and unaligned starts, with and without a seed.
  for (size_t len = 0; len <= 2048; ++len) {
    for (size_t off : {0, 1, 3}) {
      ASSERT_EQ(crc32c(v.data() + off, len), crc32c_sw(v.data() + off, len)) << len << "+" << off;
      ASSERT_EQ(crc32c(v.data() + off, len, 0x12345678u), crc32c_sw(v.data() + off, len, 0x12345678u))
          << len << "+" << off;
    }
  }
  EXPECT_EQ(crc32c(v.data(), 3001), crc32c_sw(v.data(), 3001));
  // Continuation: crc(a || b) == crc(b, seed = crc(a)).
  EXPECT_EQ(crc32c(v.data() + 100, 900, crc32c(v.data(), 100)), crc32c(v.data(), 1000));
}

TEST(Wire, SealVerifyDetectsEverySingleBitFlip) {
  uint8_t buf[kHeaderBytes + 40];
  Header h = sample();
  h.payload_len = 40;
  h.msg_len = 1000;
  h.offset = 0;
  h.flags = kFirst;
  encode(h, buf);
  for (int i = 0; i < 40; ++i) buf[kHeaderBytes + i] = static_cast<uint8_t>(i);
  seal(buf, sizeof buf);
  ASSERT_NE(pollfab::util::load_be32(buf + kChecksumOffset), 0u);
  uint8_t copy[sizeof buf];
  std::memcpy(copy, buf, sizeof buf);
  EXPECT_TRUE(verify(copy, sizeof copy));
  for (size_t byte = 0; byte < sizeof buf; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::memcpy(copy, buf, sizeof buf);
      copy[byte] ^= static_cast<uint8_t>(1u << bit);
      // Flipping a checksum bit to make the field 0 ("none") is impossible for a 1-bit flip
      // unless the CRC had one bit set; either way the packet must not verify as intact data.
      if (byte >= kChecksumOffset && byte < kChecksumOffset + 4 &&
          pollfab::util::load_be32(copy + kChecksumOffset) == 0)
        continue;
      EXPECT_FALSE(verify(copy, sizeof copy)) << byte << ":" << bit;
    }
  }
}

TEST(Wire, PeekDst) {
  uint8_t buf[kHeaderBytes] = {};
  Header h = sample();
  h.payload_len = 0;
  h.msg_len = 0;
  encode(h, buf);
  uint16_t ep = 0;
  ASSERT_TRUE(peek_dst_ep(buf, sizeof buf, ep));
  EXPECT_EQ(ep, 9);
  EXPECT_FALSE(peek_dst_ep(buf, 10, ep));
}

TEST(Wire, RmaExtensionRoundTripsAndFramesTheData) {
  RmaExt e;
  e.key = 0x0102030405060708ull;
  e.addr = 0xfffffffffffffff0ull;
  e.op_id = 0x00070003;
  e.len = 9;
  e.status = 13;
  e.atomic_op = 12;
  e.datatype = 11;
  e.atomic_kind = 2;
  uint8_t buf[kHeaderBytes + kRmaExtBytes + 64] = {};
  encode_rma(e, buf + kHeaderBytes);
  RmaExt d = decode_rma(buf + kHeaderBytes);
  EXPECT_EQ(d.key, e.key);
  EXPECT_EQ(d.addr, e.addr);
  EXPECT_EQ(d.op_id, e.op_id);
  EXPECT_EQ(d.len, e.len);
  EXPECT_EQ(d.status, e.status);
  EXPECT_EQ(d.atomic_op, e.atomic_op);
  EXPECT_EQ(d.datatype, e.datatype);
  EXPECT_EQ(d.atomic_kind, e.atomic_kind);

  Header h;
  h.type = Type::RmaWrite;
  h.flags = kFirst | kLast;
  h.msg_len = 64;
  h.payload_len = kRmaExtBytes + 64;  // msg_len counts the data after the extension
  encode(h, buf);
  Header out;
  EXPECT_EQ(decode(buf, sizeof buf, out), DecodeError::None);
  h.payload_len = 16;  // shorter than the extension header
  encode(h, buf);
  EXPECT_EQ(decode(buf, sizeof buf, out), DecodeError::BadLength);
  h.type = Type::RmaReadReq;  // requests are single packets
  h.flags = kFirst;
  h.msg_len = 0;
  h.payload_len = kRmaExtBytes;
  encode(h, buf);
  EXPECT_EQ(decode(buf, sizeof buf, out), DecodeError::BadSegment);
  buf[3] = 15;  // past Reset: no such type
  EXPECT_EQ(decode(buf, sizeof buf, out), DecodeError::BadType);
  buf[3] = 11;  // ConnReq with flags: connection packets carry none
  EXPECT_EQ(decode(buf, sizeof buf, out), DecodeError::BadFlags);
}

namespace {
// A bundle: message 0 (msg0 bytes), then entries of `lens` bytes, the odd ones tagged and the
// ones at multiples of 3 with CQ data. Returns the packet (header + payload).
std::vector<uint8_t> bundle_packet(uint32_t msg0, const std::vector<uint16_t>& lens) {
  std::vector<uint8_t> p(kHeaderBytes + msg0, 0xab);
  for (size_t i = 0; i < lens.size(); ++i) {
    const uint16_t f = uint16_t((i % 2 ? kTagged : 0) | (i % 3 == 0 ? kCqData : 0));
    const size_t at = p.size();
    p.resize(at + bundle_entry_bytes(f) + lens[i], uint8_t(i));
    encode_bundle_entry(p.data() + at, f, lens[i], 1000 + i, 2000 + i);
  }
  Header h;
  h.type = Type::Data;
  h.flags = kFirst | kLast | kAckValid | kBundle;
  h.msg_len = msg0;
  h.payload_len = uint16_t(p.size() - kHeaderBytes);
  encode(h, p.data());
  return p;
}
}  // namespace

TEST(Wire, BundleEntriesRoundTripAndEveryMalformedBundleIsRejected) {
  std::vector<uint8_t> p = bundle_packet(10, {5, 0, 7});
  Header h;
  ASSERT_EQ(decode(p.data(), p.size(), h), DecodeError::None);
  const uint8_t* q = p.data() + kHeaderBytes + h.msg_len;
  uint32_t left = h.payload_len - h.msg_len;
  const uint16_t want_len[] = {5, 0, 7};
  for (int i = 0; i < 3; ++i) {
    BundleMsg m;
    const uint32_t used = decode_bundle_entry(q, left, m);
    ASSERT_GT(used, 0u);
    EXPECT_EQ(bundle_entry_span(q, left), used);  // decode()'s walk takes the same steps
    EXPECT_EQ(bundle_entry_span(q, used - 1), 0u);  // and no entry past what is left
    BundleMsg r;
    EXPECT_EQ(read_bundle_entry(q, r), used);  // delivery's read of a walked entry
    EXPECT_EQ(r.tag, m.tag);
    EXPECT_EQ(m.len, want_len[i]);
    EXPECT_EQ(bool(m.flags & kTagged), i % 2 == 1);
    EXPECT_EQ(m.tag, (m.flags & kTagged) ? 1000u + uint64_t(i) : 0u);
    EXPECT_EQ(bool(m.flags & kCqData), i % 3 == 0);
    EXPECT_EQ(m.cq_data, (m.flags & kCqData) ? 2000u + uint64_t(i) : 0u);
    q += used;
    left -= used;
  }
  EXPECT_EQ(left, 0u);

  auto rejects = [](std::vector<uint8_t> bad, const char* why) {
    Header d;
    EXPECT_EQ(decode(bad.data(), bad.size(), d), DecodeError::BadSegment) << why;
  };
  {  // an entry whose data runs past the payload
    std::vector<uint8_t> bad = p;
    pollfab::util::store_be16(bad.data() + kHeaderBytes + 10 + 2, 500);
    rejects(bad, "entry longer than the payload");
  }
  {  // an unknown bit in an entry's flags
    std::vector<uint8_t> bad = p;
    pollfab::util::store_be16(bad.data() + kHeaderBytes + 10, kCqData | kFirst);
    rejects(bad, "entry flag other than TAGGED/CQ_DATA");
  }
  {  // payload_len cuts an entry's header short
    std::vector<uint8_t> bad = bundle_packet(10, {5});
    pollfab::util::store_be16(bad.data() + 6, uint16_t(10 + 2));
    rejects(bad, "entry header cut short");
  }
  {  // payload_len cuts a tagged entry's tag short (its flags and length are there)
    std::vector<uint8_t> bad = bundle_packet(10, {5, 3});  // entry 1 is tagged: 12 + 3 bytes
    const uint32_t entry1 = 10 + bundle_entry_bytes(kCqData) + 5;
    pollfab::util::store_be16(bad.data() + 6, uint16_t(entry1 + 7));  // its 4 + 3 bytes fit
    rejects(bad, "entry's tag cut short");
  }
  for (uint16_t drop : {kFirst, kLast}) {  // a bundle is whole messages
    std::vector<uint8_t> bad = p;
    pollfab::util::store_be16(bad.data() + 4, uint16_t(kFirst | kLast | kBundle | kAckValid) & ~drop);
    rejects(bad, "bundle without FIRST and LAST");
  }
  {
    std::vector<uint8_t> bad = p;
    pollfab::util::store_be16(bad.data() + 4, kFirst | kLast | kBundle | kDeliveryReq);
    rejects(bad, "bundle with DELIVERY_REQ");
  }
  {  // message 0 takes the whole payload: nothing to bundle
    std::vector<uint8_t> bad = p;
    pollfab::util::store_be32(bad.data() + 40, uint32_t(bad.size() - kHeaderBytes));
    rejects(bad, "no entry after message 0");
  }
  {  // 65 messages
    std::vector<uint8_t> bad = bundle_packet(1, std::vector<uint16_t>(kMaxBundleMsgs, 1));
    rejects(bad, "more than kMaxBundleMsgs messages");
    EXPECT_EQ(decode(bundle_packet(1, std::vector<uint16_t>(kMaxBundleMsgs - 1, 1)).data(),
                     bundle_packet(1, std::vector<uint16_t>(kMaxBundleMsgs - 1, 1)).size(), h),
              DecodeError::None);
  }
  {  // only DATA packets bundle
    std::vector<uint8_t> bad = p;
    bad[3] = uint8_t(Type::Dgram);
    rejects(bad, "a DGRAM with BUNDLE");
  }
}

namespace {

// Every field decode() fills, compared.
void expect_same_header(const Header& a, const Header& b) {
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.payload_len, b.payload_len);
  EXPECT_EQ(a.src_ep, b.src_ep);
  EXPECT_EQ(a.dst_ep, b.dst_ep);
  EXPECT_EQ(a.src_epoch, b.src_epoch);
  EXPECT_EQ(a.dst_epoch, b.dst_epoch);
  EXPECT_EQ(a.psn, b.psn);
  EXPECT_EQ(a.ack_psn, b.ack_psn);
  EXPECT_EQ(a.credits, b.credits);
  EXPECT_EQ(a.op_slot, b.op_slot);
  EXPECT_EQ(a.sack, b.sack);
  EXPECT_EQ(a.msg_len, b.msg_len);
  EXPECT_EQ(a.offset, b.offset);
  EXPECT_EQ(a.tag, b.tag);
  EXPECT_EQ(a.cq_data, b.cq_data);
  EXPECT_EQ(a.checksum, b.checksum);
  EXPECT_EQ(a.ack_delay_ns, b.ack_delay_ns);
}

}  // namespace

// decode_continuation: the segments after a message's first, built as the sender builds them
// (encode_continuation, or afresh with a newer ACK), decode by comparison to what decode()
// gives; a header that differs anywhere else, or whose own fields fail decode()'s checks, is
// left to decode().
TEST(Wire, AContinuationDecodesByComparisonAsDecodeDoesAndAnythingElseIsLeftToDecode) {
  for (const Type type : {Type::Data, Type::RmaWrite, Type::RmaResp}) {
    SCOPED_TRACE(static_cast<int>(type));
    const size_t ext = is_rma(type) ? kRmaExtBytes : 0;
    uint8_t first[kHeaderBytes + kRmaExtBytes + 1400] = {};
    Header h0 = sample();
    h0.type = type;
    h0.flags = kFirst | kTagged | kCqData | kAckValid;
    h0.credits = 512;
    h0.op_slot = 3;
    h0.ack_delay_ns = 777;
    h0.msg_len = 5000;
    h0.payload_len = static_cast<uint16_t>(ext + 1400);
    encode(h0, first);
    Header prev;
    ASSERT_EQ(decode(first, sizeof first, prev), DecodeError::None);

    struct Case {
      uint16_t flags;
      uint16_t payload;
      uint32_t offset;
      bool ok;
    };
    const uint16_t mid = h0.flags & ~kFirst;
    const Case cases[] = {
        {mid, 1400, 1400, true},                         // a middle segment
        {uint16_t(mid | kAckReq), 1400, 2800, true},     // the burst's last asks for an ACK
        {uint16_t(mid | kAckReq | kAckQuick), 1400, 2800, true},  // QUICK
        {uint16_t(mid | kRetransmit), 1400, 1400, true}, // resent
        {uint16_t(mid | kLast), 800, 4200, true},        // the message's last
        {uint16_t(mid | kLast), 800, 4100, false},       // LAST not at the message's end
        {mid, 1400, 4200, false},                        // past the message's end
        {h0.flags, 1400, 0, false},                      // FIRST: not a continuation
        {uint16_t(mid | kBundle), 1400, 1400, false},    // a bundle
        {uint16_t(mid | 0x400), 1400, 1400, false},      // an unknown flag
        {uint16_t(mid & ~kTagged), 1400, 1400, false},   // another message's flags
    };
    for (const Case& c : cases) {
      SCOPED_TRACE(testing::Message() << "flags " << c.flags << " offset " << c.offset);
      uint8_t pkt[sizeof first] = {};
      encode_continuation(first, pkt, ext, c.flags, static_cast<uint16_t>(ext + c.payload),
                          h0.psn + 1, c.offset);
      const size_t len = kHeaderBytes + ext + c.payload;
      Header by_cmp = prev, by_decode;
      const bool cont = decode_continuation(pkt, len, first, by_cmp);
      EXPECT_EQ(cont, c.ok);
      if (c.ok) {
        ASSERT_EQ(decode(pkt, len, by_decode), DecodeError::None);
        expect_same_header(by_cmp, by_decode);
      }
      by_cmp = prev;
      EXPECT_FALSE(decode_continuation(pkt, len - 1, first, by_cmp))
          << "payload past the bytes received";
    }

    // The ACK it carries is its own: a later segment may carry a newer one.
    {
      uint8_t pkt[sizeof first];
      encode_continuation(first, pkt, ext, mid, static_cast<uint16_t>(ext + 1400), h0.psn + 1,
                          1400);
      pollfab::util::store_be32(pkt + 24, 43);                    // ack_psn
      pollfab::util::store_be16(pkt + 28, 100);                   // credits
      pollfab::util::store_be64(pkt + 32, 0x5ull);                // sack
      pollfab::util::store_be32(pkt + 68, 123456);                // ack_delay_ns
      const size_t len = kHeaderBytes + ext + 1400;
      Header by_cmp = prev, by_decode;
      ASSERT_TRUE(decode_continuation(pkt, len, first, by_cmp));
      ASSERT_EQ(decode(pkt, len, by_decode), DecodeError::None);
      expect_same_header(by_cmp, by_decode);
      EXPECT_EQ(by_cmp.ack_psn, 43u);
      EXPECT_EQ(by_cmp.ack_delay_ns, 123456u);
    }
    // As the receiver uses it: the first segment's bytes stay prev while h follows each packet
    // taken in (free flags set on one and gone on the next, the message's last, a duplicate).
    {
      const uint16_t seq_flags[] = {uint16_t(mid | kAckReq | kRetransmit), mid,
                                    uint16_t(mid | kLast), mid, uint16_t(mid | kAckReq)};
      const uint32_t seq_offset[] = {1400, 2800, 4200, 1400, 2800};
      const uint16_t seq_payload[] = {1400, 1400, 800, 1400, 1400};
      Header h = prev;
      for (size_t k = 0; k < std::size(seq_flags); ++k) {
        SCOPED_TRACE(testing::Message() << "packet " << k + 1);
        uint8_t pkt[sizeof first] = {};
        encode_continuation(first, pkt, ext, seq_flags[k],
                            static_cast<uint16_t>(ext + seq_payload[k]),
                            h0.psn + 1 + uint32_t(k), seq_offset[k]);
        const size_t len = kHeaderBytes + ext + seq_payload[k];
        Header by_decode;
        ASSERT_TRUE(decode_continuation(pkt, len, first, h));
        ASSERT_EQ(decode(pkt, len, by_decode), DecodeError::None);
        expect_same_header(h, by_decode);
      }
    }
    if (ext) {  // an RMA segment too short for its extension: decode() says BadLength
      uint8_t pkt[sizeof first] = {};
      encode_continuation(first, pkt, ext, mid, static_cast<uint16_t>(ext - 1), h0.psn + 1, 1400);
      Header h = prev, d;
      EXPECT_FALSE(decode_continuation(pkt, sizeof pkt, first, h));
      EXPECT_EQ(decode(pkt, sizeof pkt, d), DecodeError::BadLength);
    }
    // Any other byte changed (another message, endpoint or incarnation): decode() decides.
    uint8_t good[sizeof first] = {};
    encode_continuation(first, good, ext, mid, static_cast<uint16_t>(ext + 1400), h0.psn + 1,
                        1400);
    const size_t len = kHeaderBytes + ext + 1400;
    Header out = prev;
    ASSERT_TRUE(decode_continuation(good, len, first, out));
    for (size_t i = 0; i < kHeaderBytes; ++i) {
      // flags, payload_len; psn, ack_psn, credits; sack; offset; checksum, ack_delay_ns
      const bool own = (i >= 4 && i < 8) || (i >= 20 && i < 30) || (i >= 32 && i < 40) ||
                       (i >= 44 && i < 48) || (i >= 64 && i < 72);
      if (own) continue;
      uint8_t pkt[sizeof first];
      std::memcpy(pkt, good, sizeof pkt);
      pkt[i] ^= 0x10;
      out = prev;
      EXPECT_FALSE(decode_continuation(pkt, len, first, out)) << "byte " << i;
    }
    // The checksum is the packet's own (verify() checks it): it may differ.
    good[64] ^= 0x5a;
    out = prev;
    EXPECT_TRUE(decode_continuation(good, len, first, out));
    EXPECT_EQ(out.checksum, pollfab::util::load_be32(good + kChecksumOffset));
    out = prev;
    EXPECT_FALSE(decode_continuation(good, kHeaderBytes - 1, first, out)) << "too short";
  }
}
