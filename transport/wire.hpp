// The pollfab wire header (version 1), shared by the dpdk and udp providers.
//
// A pollfab packet is  Ethernet / IPv4 / UDP / pollfab header / payload  on DPDK, and
// UDP payload = pollfab header / payload on kernel sockets. The transport sees only the
// pollfab header and payload; the I/O layer adds and strips the lower headers.
// docs/wire-format.md documents every field; this file is the single definition.
//
//   0               1               2               3
//   0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7
//  +---------------+---------------+---------------+---------------+
//  |          magic 0x5046         |   version=1   |     type      |  0
//  +---------------+---------------+---------------+---------------+
//  |             flags             |          payload_len          |  4
//  +---------------+---------------+---------------+---------------+
//  |            src_ep             |            dst_ep             |  8
//  +---------------+---------------+---------------+---------------+
//  |                           src_epoch                           | 12
//  |                           dst_epoch                           | 16
//  |                              psn                              | 20
//  |                            ack_psn                            | 24
//  |             credits           |           reserved            | 28
//  |                       sack (64-bit bitmap)                    | 32
//  |                            msg_len                            | 40
//  |                            offset                             | 44
//  |                           tag (64)                            | 48
//  |                         cq_data (64)                          | 56
//  |                      checksum (0 = none)                      | 64
//  |                         ack_delay_ns                          | 68
//  +---------------------------------------------------------------+ 72
//
// An Ack packet's payload, if any, is the extended SACK bitmap (sack continued beyond 64
// packets): bit j (byte j/8, bit j%8, least significant first) set means PSN ack_psn + 65 + j
// was received. At most kMaxSackExtBytes.
//
// checksum: CRC-32C over the whole packet (header with this field zero, then payload); 0
// means the sender did not compute one. Receivers verify every non-zero checksum.
// All fields are big-endian. No bitfields. Reserved fields are sent as zero and ignored.
// Type codes and flag bits are never reused once assigned (reserved ones are listed).
#pragma once
#include <cstddef>
#include <cstdint>

#include "lib/util/bits.hpp"
#include "lib/util/crc32c.hpp"

namespace pollfab::transport::wire {

constexpr uint16_t kMagic = 0x5046;  // "PF"
constexpr uint8_t kVersion = 1;
constexpr size_t kHeaderBytes = 72;
constexpr size_t kMaxSackExtBytes = 512;  // 4096-packet window: (4096 - 65) bits, rounded up
constexpr size_t kChecksumOffset = 64;

enum class Type : uint8_t {
  Data = 1,     // reliable (RDM) message segment: psn, msg_len, offset, tag, cq_data
  Ack = 2,      // standalone acknowledgement: ack_psn, sack, credits
  Dgram = 3,    // unreliable datagram (FI_EP_DGRAM): one packet per message
  // Reserved for later protocol features; never reuse:
  Rts = 4, Cts = 5, RmaWrite = 6, RmaReadReq = 7, RmaReadResp = 8, Atomic = 9, AtomicResp = 10,
  ConnReq = 11, ConnResp = 12, Disconnect = 13, Reset = 14,
  Max = 15,
};

// flags
constexpr uint16_t kFirst = 1u << 0;      // first segment of a message
constexpr uint16_t kLast = 1u << 1;       // last segment of a message
constexpr uint16_t kTagged = 1u << 2;     // tagged message (tag field valid)
constexpr uint16_t kCqData = 1u << 3;     // remote CQ data present (cq_data valid)
constexpr uint16_t kAckValid = 1u << 4;   // ack_psn (and sack) valid
constexpr uint16_t kAckReq = 1u << 5;     // receiver should acknowledge at once
constexpr uint16_t kRetransmit = 1u << 6; // this is a retransmission (statistics only)
constexpr uint16_t kKnownFlags = 0x7f;

struct Header {
  Type type = Type::Data;
  uint16_t flags = 0;
  uint16_t payload_len = 0;  // bytes after the header
  uint16_t src_ep = 0;
  uint16_t dst_ep = 0;
  uint32_t src_epoch = 0;
  uint32_t dst_epoch = 0;    // 0 = sender does not know the receiver's epoch yet
  uint32_t psn = 0;
  uint32_t ack_psn = 0;      // cumulative: every PSN before ack_psn was received
  uint16_t credits = 0;      // receive window: PSNs below ack_psn + credits may be sent
  uint64_t sack = 0;         // bit i set: PSN ack_psn + 1 + i was received
  uint32_t msg_len = 0;      // total message length, bytes
  uint32_t offset = 0;       // offset of this segment in the message, bytes
  uint64_t tag = 0;
  uint64_t cq_data = 0;
  uint32_t checksum = 0;
  uint32_t ack_delay_ns = 0; // time the receiver held this ACK after its newest data packet
};

inline void encode(const Header& h, uint8_t* p) noexcept {
  using namespace pollfab::util;
  store_be16(p + 0, kMagic);
  p[2] = kVersion;
  p[3] = static_cast<uint8_t>(h.type);
  store_be16(p + 4, h.flags);
  store_be16(p + 6, h.payload_len);
  store_be16(p + 8, h.src_ep);
  store_be16(p + 10, h.dst_ep);
  store_be32(p + 12, h.src_epoch);
  store_be32(p + 16, h.dst_epoch);
  store_be32(p + 20, h.psn);
  store_be32(p + 24, h.ack_psn);
  store_be16(p + 28, h.credits);
  store_be16(p + 30, 0);
  store_be64(p + 32, h.sack);
  store_be32(p + 40, h.msg_len);
  store_be32(p + 44, h.offset);
  store_be64(p + 48, h.tag);
  store_be64(p + 56, h.cq_data);
  store_be32(p + 64, h.checksum);
  store_be32(p + 68, h.ack_delay_ns);
}

// Computes the CRC-32C of the len-byte packet at p (header + payload, checksum field zero)
// and stores it in the checksum field. A computed CRC of 0 is stored as 0xffffffff, so that 0
// keeps meaning "no checksum"; verify() accepts that spelling.
// The last ext_len bytes may be elsewhere (zero copy): the CRC runs over the head_len
// contiguous bytes at p, then over ext.
inline void seal(uint8_t* p, size_t head_len, const uint8_t* ext, size_t ext_len) noexcept {
  util::store_be32(p + kChecksumOffset, 0);
  uint32_t c = util::crc32c(p, head_len);
  if (ext_len) c = util::crc32c(ext, ext_len, c);
  util::store_be32(p + kChecksumOffset, c ? c : 0xffffffffu);
}
inline void seal(uint8_t* p, size_t len) noexcept { seal(p, len, nullptr, 0); }

// Verifies the checksum of the len-byte packet at p (len >= kHeaderBytes). Returns true if the
// checksum field is 0 (none) or matches. Clears the field (the buffer is the receiver's).
inline bool verify(uint8_t* p, size_t len) noexcept {
  uint32_t want = util::load_be32(p + kChecksumOffset);
  if (want == 0) return true;
  util::store_be32(p + kChecksumOffset, 0);
  uint32_t c = util::crc32c(p, len);
  return c == want || (c == 0 && want == 0xffffffffu);
}

enum class DecodeError : uint8_t {
  None = 0, Short, BadMagic, BadVersion, BadType, BadFlags, BadLength, BadSegment,
  Count
};

const char* to_string(DecodeError e) noexcept;

// Decodes and validates a header from `len` received bytes at p. On success the payload is
// p[kHeaderBytes .. kHeaderBytes + h.payload_len). Every field is checked: magic, version,
// type, unknown flag bits, payload_len against the bytes received, and for Data packets that
// the segment lies inside the message (offset + payload_len <= msg_len).
inline DecodeError decode(const uint8_t* p, size_t len, Header& h) noexcept {
  using namespace pollfab::util;
  if (len < kHeaderBytes) return DecodeError::Short;
  if (load_be16(p) != kMagic) return DecodeError::BadMagic;
  if (p[2] != kVersion) return DecodeError::BadVersion;
  uint8_t t = p[3];
  if (t != static_cast<uint8_t>(Type::Data) && t != static_cast<uint8_t>(Type::Ack) &&
      t != static_cast<uint8_t>(Type::Dgram))
    return DecodeError::BadType;
  h.type = static_cast<Type>(t);
  h.flags = load_be16(p + 4);
  if (h.flags & ~kKnownFlags) return DecodeError::BadFlags;
  h.payload_len = load_be16(p + 6);
  if (size_t(h.payload_len) + kHeaderBytes > len) return DecodeError::BadLength;
  h.src_ep = load_be16(p + 8);
  h.dst_ep = load_be16(p + 10);
  h.src_epoch = load_be32(p + 12);
  h.dst_epoch = load_be32(p + 16);
  h.psn = load_be32(p + 20);
  h.ack_psn = load_be32(p + 24);
  h.credits = load_be16(p + 28);
  h.sack = load_be64(p + 32);
  h.msg_len = load_be32(p + 40);
  h.offset = load_be32(p + 44);
  h.tag = load_be64(p + 48);
  h.cq_data = load_be64(p + 56);
  h.checksum = load_be32(p + 64);
  h.ack_delay_ns = load_be32(p + 68);
  if (h.type == Type::Ack && h.payload_len > kMaxSackExtBytes) return DecodeError::BadLength;
  if (h.type == Type::Data || h.type == Type::Dgram) {
    if (uint64_t(h.offset) + h.payload_len > h.msg_len) return DecodeError::BadSegment;
    if ((h.flags & kFirst) && h.offset != 0) return DecodeError::BadSegment;
    if ((h.flags & kLast) && uint64_t(h.offset) + h.payload_len != h.msg_len)
      return DecodeError::BadSegment;
    if (h.type == Type::Dgram && (h.flags & (kFirst | kLast)) != (kFirst | kLast))
      return DecodeError::BadSegment;
  }
  return DecodeError::None;
}

// Destination endpoint id of a packet whose header is at least 12 bytes long (demux before
// full decode). Returns false if too short or not a pollfab packet.
inline bool peek_dst_ep(const uint8_t* p, size_t len, uint16_t& dst_ep) noexcept {
  if (len < kHeaderBytes || util::load_be16(p) != kMagic) return false;
  dst_ep = util::load_be16(p + 10);
  return true;
}

}  // namespace pollfab::transport::wire
