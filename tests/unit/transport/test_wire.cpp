#include <gtest/gtest.h>

#include <cstring>

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
  ack.payload_len = 4;
  encode(ack, buf);
  EXPECT_EQ(decode(buf, sizeof buf, d), DecodeError::BadLength);
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
