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
//  |             credits           |            op_slot            | 28
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
// A Data packet with kBundle carries more than one whole message (small messages queued behind
// each other to one peer share a packet: one PSN, one header, one acknowledgement). The header
// describes message 0 (msg_len, tag, cq_data, kTagged/kCqData; FIRST and LAST, offset 0); the
// payload is message 0's msg_len bytes, then one entry per further message:
//   flags (16)  kTagged | kCqData of this message (other bits zero)
//   len (16)    its bytes
//   tag (64)    if kTagged
//   cq_data (64) if kCqData
//   len bytes of data
// ending exactly at payload_len; at least one entry, at most kMaxBundleMsgs messages in all.
//
// RMA and atomic packets (types RmaWrite .. AtomicResp) carry the 32-byte RMA extension header
// (RmaExt below) at the start of every segment's payload; for them msg_len and offset count the
// data bytes after it (payload_len = kRmaExtBytes + data bytes). They travel in the same PSN
// stream as Data packets (same reliability, flow and congestion control).
//
// checksum: CRC-32C over the whole packet (header with this field zero, then payload); 0
// means the sender did not compute one. Receivers verify every non-zero checksum.
// All fields are big-endian. No bitfields. Reserved fields are sent as zero and ignored.
// Type codes and flag bits are never reused once assigned (reserved ones are listed).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

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
  Rts = 4, Cts = 5,
  // RMA and atomics (fi_rma(3), fi_atomic(3)); payload starts with RmaExt:
  RmaWrite = 6,    // write segment: data for [addr + offset, ...) of region key; cq_data if kCqData
  RmaReadReq = 7,  // read request: ext.len bytes at addr of region key (no data; one packet)
  RmaResp = 8,     // answer to a write (status) or a read (status, then the data, segmented)
  Atomic = 9,      // atomic request: ext.count elements; data = operand [+ compare]; one packet
  AtomicResp = 10, // answer to an atomic: status [+ the target's previous values]; one packet
  // Connection management (FI_EP_MSG, transport/connection.hpp); payload starts with CmExt:
  ConnReq = 11,    // connect request to a listener: conn_id, CM data
  ConnResp = 12,   // kind kCmAccept (from the accepting endpoint), kCmReject (from the
                   // listener) or kCmConfirm (the connecting endpoint's answer to an accept)
  Disconnect = 13, // kind kCmRequest (fi_shutdown) or kCmAck
  Reset = 14,      // the named connection does not exist here (any state: it is over)
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
constexpr uint16_t kDeliveryReq = 1u << 7;// Data: answer (RmaResp, op_id = op_slot) once placed
constexpr uint16_t kBundle = 1u << 8;     // Data: more whole messages follow message 0 (above)
constexpr uint16_t kAckQuick = 1u << 9;   // Data with kAckReq: acknowledge at the end of the
                                          // receive round that brought it (few in flight)
constexpr uint16_t kKnownFlags = 0x3ff;
// RmaExt::atomic_kind of an RmaResp that answers a kDeliveryReq message: op_id = the message's
// op_slot, addr = its first PSN (the sender checks both).
constexpr uint8_t kAnswerDelivery = 3;

// Connection management packets: the CM extension header, 8 bytes, big-endian, first in the
// payload, then data_len bytes of CM data (fi_cm(3) param; payload_len = kCmExtBytes +
// data_len). flags are 0; psn and the fields after it are 0.
//   0 conn_id (32)  the connecting side's id of this connection (random, non-zero)
//   4 kind (8)      ConnResp: kCmAccept / kCmReject / kCmConfirm; Disconnect: kCmRequest /
//                   kCmAck; 0 for ConnReq and Reset
//   5 reserved (8)
//   6 data_len (16) <= kMaxCmData
constexpr size_t kCmExtBytes = 8;
constexpr size_t kMaxCmData = 256;
constexpr uint8_t kCmAccept = 1, kCmReject = 2, kCmConfirm = 3, kCmRequest = 4, kCmAck = 5;
constexpr bool is_cm(Type t) noexcept { return t >= Type::ConnReq && t <= Type::Reset; }

// True for the types that travel in the PSN stream (Data and the RMA/atomic types).
constexpr bool carries_psn(Type t) noexcept {
  return t == Type::Data || (t >= Type::RmaWrite && t <= Type::AtomicResp);
}
constexpr bool is_rma(Type t) noexcept { return t >= Type::RmaWrite && t <= Type::AtomicResp; }

// The RMA extension header, 32 bytes, big-endian, first in the payload of RMA/atomic packets.
//   0  key (64)        target region's key (requests)
//   8  addr (64)       target address of data byte 0: a virtual address (FI_MR_VIRT_ADDR) or an
//                      offset into the region (requests)
//  16  op_id (32)      the initiator's operation id, echoed in the answer
//  20  len (32)        RmaReadReq: bytes to read; Atomic: element count
//  24  status (8)      answers: the target's util::Status for the operation (0 = ok)
//  25  atomic_op (8)   Atomic: transport::AtomicOp
//  26  datatype (8)    Atomic: transport::AtomicType
//  27  atomic_kind (8) Atomic: 0 plain, 1 fetch, 2 compare
//  28  reserved (32)
constexpr size_t kRmaExtBytes = 32;
struct RmaExt {
  uint64_t key = 0;
  uint64_t addr = 0;
  uint32_t op_id = 0;
  uint32_t len = 0;
  uint8_t status = 0;
  uint8_t atomic_op = 0;
  uint8_t datatype = 0;
  uint8_t atomic_kind = 0;
};
inline void encode_rma(const RmaExt& e, uint8_t* p) noexcept {
  util::store_be64(p, e.key);
  util::store_be64(p + 8, e.addr);
  util::store_be32(p + 16, e.op_id);
  util::store_be32(p + 20, e.len);
  p[24] = e.status;
  p[25] = e.atomic_op;
  p[26] = e.datatype;
  p[27] = e.atomic_kind;
  util::store_be32(p + 28, 0);
}
inline RmaExt decode_rma(const uint8_t* p) noexcept {
  RmaExt e;
  e.key = util::load_be64(p);
  e.addr = util::load_be64(p + 8);
  e.op_id = util::load_be32(p + 16);
  e.len = util::load_be32(p + 20);
  e.status = p[24];
  e.atomic_op = p[25];
  e.datatype = p[26];
  e.atomic_kind = p[27];
  return e;
}

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
  uint16_t op_slot = 0;      // DELIVERY_REQ: the sender's operation slot, echoed in the answer
  uint64_t sack = 0;         // bit i set: PSN ack_psn + 1 + i was received
  uint32_t msg_len = 0;      // total message length, bytes
  uint32_t offset = 0;       // offset of this segment in the message, bytes
  uint64_t tag = 0;
  uint64_t cq_data = 0;
  uint32_t checksum = 0;
  uint32_t ack_delay_ns = 0; // time the receiver held this ACK after its newest data packet
};

// The ACK a packet carries (Header's ack_psn, credits, sack and ack_delay_ns), as the engine
// takes it from a peer's receive state for each packet it sends.
struct AckFields {
  uint32_t ack_psn = 0;
  uint16_t credits = 0;
  uint64_t sack = 0;
  uint32_t ack_delay_ns = 0;
};

// Stores a header's fields at p (kHeaderBytes) in the wire layout (docs/wire-format.md): the
// layout's one definition, used by encode() and by the engine, which builds a segment's header
// straight into its packet from the values it has at hand (no Header written and read back:
// ~27 instructions a packet).
inline void encode_fields(uint8_t* p, Type type, uint16_t flags, uint16_t payload_len,
                          uint16_t src_ep, uint16_t dst_ep, uint32_t src_epoch,
                          uint32_t dst_epoch, uint32_t psn, const AckFields& ack,
                          uint16_t op_slot, uint32_t msg_len, uint32_t offset, uint64_t tag,
                          uint64_t cq_data, uint32_t checksum) noexcept {
  using namespace pollfab::util;
  store_be16(p + 0, kMagic);
  p[2] = kVersion;
  p[3] = static_cast<uint8_t>(type);
  store_be16(p + 4, flags);
  store_be16(p + 6, payload_len);
  store_be16(p + 8, src_ep);
  store_be16(p + 10, dst_ep);
  store_be32(p + 12, src_epoch);
  store_be32(p + 16, dst_epoch);
  store_be32(p + 20, psn);
  store_be32(p + 24, ack.ack_psn);
  store_be16(p + 28, ack.credits);
  store_be16(p + 30, op_slot);
  store_be64(p + 32, ack.sack);
  store_be32(p + 40, msg_len);
  store_be32(p + 44, offset);
  store_be64(p + 48, tag);
  store_be64(p + 56, cq_data);
  store_be32(p + 64, checksum);
  store_be32(p + 68, ack.ack_delay_ns);
}

inline void encode(const Header& h, uint8_t* p) noexcept {
  encode_fields(p, h.type, h.flags, h.payload_len, h.src_ep, h.dst_ep, h.src_epoch, h.dst_epoch,
                h.psn, AckFields{h.ack_psn, h.credits, h.sack, h.ack_delay_ns}, h.op_slot,
                h.msg_len, h.offset, h.tag, h.cq_data, h.checksum);
}

// The header of the next segment of a message whose previous segment's header (unsealed:
// checksum field 0) is at prev, built back to back with nothing received in between: every
// field is the previous one's (addressing, epochs, the piggybacked ACK, message length, tag,
// data) but flags, payload_len, psn and offset, which are stored here. ext_bytes of extension
// after the header (RMA) are the message's, copied too. One copy and four stores where encode()
// stores twenty fields.
inline void encode_continuation(const uint8_t* prev, uint8_t* p, size_t ext_bytes, uint16_t flags,
                                uint16_t payload_len, uint32_t psn, uint32_t offset) noexcept {
  using namespace pollfab::util;
  std::memcpy(p, prev, kHeaderBytes);  // a constant size: a few vector moves, not a call
  if (ext_bytes) std::memcpy(p + kHeaderBytes, prev + kHeaderBytes, ext_bytes);
  store_be16(p + 4, flags);
  store_be16(p + 6, payload_len);
  store_be32(p + 20, psn);
  store_be32(p + 44, offset);
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

// Bundles (kBundle): the entry of each message after the first, and the most messages a packet
// carries (the sender's limit; more is bad_segment).
constexpr size_t kBundleEntryBytes = 4;  // flags, len; then tag and cq_data if flagged
constexpr uint32_t kMaxBundleMsgs = 64;
constexpr uint16_t kBundleEntryFlags = kTagged | kCqData;
// Bytes an entry's header takes for a message with these flags (kTagged, kCqData).
constexpr uint32_t bundle_entry_bytes(uint16_t flags) noexcept {
  return uint32_t(kBundleEntryBytes) + ((flags & kTagged) ? 8u : 0u) + ((flags & kCqData) ? 8u : 0u);
}
// Writes an entry's header at p; returns the bytes written (bundle_entry_bytes(flags)). Always
// inline, as copy_from_iov: a post's bundle append.
[[gnu::always_inline]] inline uint32_t encode_bundle_entry(uint8_t* p, uint16_t flags,
                                                           uint16_t len, uint64_t tag,
                                                           uint64_t cq_data) noexcept {
  util::store_be16(p, flags);
  util::store_be16(p + 2, len);
  uint32_t at = kBundleEntryBytes;
  if (flags & kTagged) { util::store_be64(p + at, tag); at += 8; }
  if (flags & kCqData) { util::store_be64(p + at, cq_data); at += 8; }
  return at;
}
// One message of a bundle as the receiver walks it.
struct BundleMsg {
  uint16_t flags = 0;  // kTagged | kCqData
  uint32_t len = 0;
  uint64_t tag = 0, cq_data = 0;
  const uint8_t* data = nullptr;
};
// The bytes the entry at p and its data take (of at most `left`), or 0 if malformed (short,
// unknown flag bits, data past `left`): decode()'s walk, which reads nothing else.
inline uint32_t bundle_entry_span(const uint8_t* p, uint32_t left) noexcept {
  if (left < kBundleEntryBytes) return 0;
  const uint16_t flags = util::load_be16(p);
  if (flags & ~kBundleEntryFlags) return 0;
  const uint32_t span = bundle_entry_bytes(flags) + util::load_be16(p + 2);  // <= 65555
  return span <= left ? span : 0;
}
// Reads the entry at p of a bundle decode() accepted (its walk checked every entry); returns
// the bytes it and its data take (at least kBundleEntryBytes).
inline uint32_t read_bundle_entry(const uint8_t* p, BundleMsg& m) noexcept {
  m.flags = util::load_be16(p);
  m.len = util::load_be16(p + 2);
  uint32_t at = kBundleEntryBytes;
  m.tag = 0;
  m.cq_data = 0;
  if (m.flags & kTagged) { m.tag = util::load_be64(p + at); at += 8; }
  if (m.flags & kCqData) { m.cq_data = util::load_be64(p + at); at += 8; }
  m.data = p + at;
  return at + m.len;
}
// Reads the entry at p (at most `left` bytes); returns the bytes it and its data take, or 0 if
// malformed (as bundle_entry_span).
inline uint32_t decode_bundle_entry(const uint8_t* p, uint32_t left, BundleMsg& m) noexcept {
  return bundle_entry_span(p, left) ? read_bundle_entry(p, m) : 0;
}

enum class DecodeError : uint8_t {
  None = 0, Short, BadMagic, BadVersion, BadType, BadFlags, BadLength, BadSegment,
  Count
};

const char* to_string(DecodeError e) noexcept;

// Reads the fields of the header at p that are each packet's own, not its message's (a
// message's segments differ in them): psn, offset, checksum, and the ACK it carries. decode()
// and decode_continuation read them so; flags and payload_len they read and check themselves.
inline void read_packet_fields(const uint8_t* p, Header& h) noexcept {
  using namespace pollfab::util;
  h.psn = load_be32(p + 20);
  h.ack_psn = load_be32(p + 24);
  h.credits = load_be16(p + 28);
  h.sack = load_be64(p + 32);
  h.offset = load_be32(p + 44);
  h.checksum = load_be32(p + 64);
  h.ack_delay_ns = load_be32(p + 68);
}

// decode()'s checks of a Data, Dgram or RMA packet's segment (a bundle's are decode()'s own):
// the payload holds the RMA extension, the segment lies inside the message, kFirst is at
// offset 0 and kLast ends the message, and single-packet types are one packet.
inline DecodeError check_segment(const Header& h) noexcept {
  const size_t ext = is_rma(h.type) ? kRmaExtBytes : 0;
  if (h.payload_len < ext) return DecodeError::BadLength;
  const uint32_t data = static_cast<uint32_t>(h.payload_len - ext);
  if (uint64_t(h.offset) + data > h.msg_len) return DecodeError::BadSegment;
  if ((h.flags & kFirst) && h.offset != 0) return DecodeError::BadSegment;
  if ((h.flags & kLast) && uint64_t(h.offset) + data != h.msg_len) return DecodeError::BadSegment;
  // Requests and atomic answers are single packets.
  if ((h.type == Type::RmaReadReq || h.type == Type::Atomic || h.type == Type::AtomicResp) &&
      (h.flags & (kFirst | kLast)) != (kFirst | kLast))
    return DecodeError::BadSegment;
  if (h.type == Type::Dgram && (h.flags & (kFirst | kLast)) != (kFirst | kLast))
    return DecodeError::BadSegment;
  return DecodeError::None;
}

// Decodes and validates a header from `len` received bytes at p. On success the payload is
// p[kHeaderBytes .. kHeaderBytes + h.payload_len). Every field is checked: magic, version,
// type, unknown flag bits, payload_len against the bytes received, and for Data and RMA packets
// that the segment lies inside the message (offset + data bytes <= msg_len; RMA payloads start
// with the kRmaExtBytes extension header).
inline DecodeError decode(const uint8_t* p, size_t len, Header& h) noexcept {
  using namespace pollfab::util;
  if (len < kHeaderBytes) return DecodeError::Short;
  if (load_be16(p) != kMagic) return DecodeError::BadMagic;
  if (p[2] != kVersion) return DecodeError::BadVersion;
  uint8_t t = p[3];
  if (t != static_cast<uint8_t>(Type::Ack) && t != static_cast<uint8_t>(Type::Dgram) &&
      !carries_psn(static_cast<Type>(t)) && !is_cm(static_cast<Type>(t)))
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
  h.op_slot = load_be16(p + 30);
  h.msg_len = load_be32(p + 40);
  h.tag = load_be64(p + 48);
  h.cq_data = load_be64(p + 56);
  read_packet_fields(p, h);
  if (h.type == Type::Ack && h.payload_len > kMaxSackExtBytes) return DecodeError::BadLength;
  if (is_cm(h.type)) {
    if (h.flags) return DecodeError::BadFlags;
    if (h.payload_len < kCmExtBytes) return DecodeError::BadLength;
    const uint16_t data_len = load_be16(p + kHeaderBytes + 6);
    if (data_len > kMaxCmData || data_len + kCmExtBytes != h.payload_len)
      return DecodeError::BadLength;
  }
  if (h.flags & kBundle) {  // message 0, then whole entries to the end of the payload
    if (h.type != Type::Data || (h.flags & (kFirst | kLast)) != (kFirst | kLast) ||
        (h.flags & kDeliveryReq) || h.offset != 0 || h.msg_len >= h.payload_len)
      return DecodeError::BadSegment;
    const uint8_t* q = p + kHeaderBytes + h.msg_len;
    uint32_t left = h.payload_len - h.msg_len, msgs = 1;
    while (left) {
      const uint32_t used = bundle_entry_span(q, left);
      if (!used || ++msgs > kMaxBundleMsgs) return DecodeError::BadSegment;
      q += used;
      left -= used;
    }
    return DecodeError::None;
  }
  if (h.type == Type::Data || h.type == Type::Dgram || is_rma(h.type)) return check_segment(h);
  return DecodeError::None;
}

// Decodes the header at p (len received bytes) of a packet that may continue the one whose
// header bytes (after verify()) are at prev: a Data or RMA segment, not its message's last, no
// bundle, which decode() took in; h holds its header, or the header of a packet this function
// accepted after it. True if every header byte is prev's but the segment's own fields (flags,
// payload_len, psn, offset, checksum) and the ACK it carries (ack_psn, credits, sack,
// ack_delay_ns), the flags differ only as a later segment's may (no kFirst; kLast, kAckReq,
// kAckQuick, kRetransmit free), and the segment passes decode()'s checks: h is then what
// decode() would give (those fields read, the rest as they were). Such a packet is a later
// segment of the same message, or of another with the same type, length, tag and data: either
// way decode() would read the same. False otherwise (h then unspecified): decode() decides. A
// comparison and nine fields where decode() reads twenty (a large message's segments, one
// after another).
inline bool decode_continuation(const uint8_t* p, size_t len, const uint8_t* prev,
                                Header& h) noexcept {
  using namespace pollfab::util;
  if (len < kHeaderBytes) return false;
  // Bytes 0-3: magic, version, type; 8-19: endpoints and epochs; 30-31: op_slot; 40-43:
  // msg_len; 48-63: tag and cq_data.
  if (std::memcmp(p, prev, 4) != 0 || std::memcmp(p + 8, prev + 8, 12) != 0 ||
      std::memcmp(p + 30, prev + 30, 2) != 0 || std::memcmp(p + 40, prev + 40, 4) != 0 ||
      std::memcmp(p + 48, prev + 48, 16) != 0)
    return false;
  constexpr uint16_t kFree = kLast | kAckReq | kAckQuick | kRetransmit;
  const uint16_t flags = load_be16(p + 4);
  if ((flags & ~kFree) != (h.flags & ~(kFree | kFirst))) return false;
  h.flags = flags;
  h.payload_len = load_be16(p + 6);
  if (size_t(h.payload_len) + kHeaderBytes > len) return false;
  read_packet_fields(p, h);
  return check_segment(h) == DecodeError::None;
}

// Destination endpoint id of a packet whose header is at least 12 bytes long (demux before
// full decode). Returns false if too short or not a pollfab packet.
inline bool peek_dst_ep(const uint8_t* p, size_t len, uint16_t& dst_ep) noexcept {
  if (len < kHeaderBytes || util::load_be16(p) != kMagic) return false;
  dst_ep = util::load_be16(p + 10);
  return true;
}

}  // namespace pollfab::transport::wire
