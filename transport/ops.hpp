// Operations the transport accepts and the completions it reports (no libfabric types).
#pragma once
#include <sys/uio.h>

#include <cstdint>

#include "lib/util/status.hpp"
#include "transport/atomic.hpp"

namespace pollfab::transport {

using PeerId = uint32_t;
constexpr PeerId kAnyPeer = 0xffffffffu;
constexpr PeerId kNoPeer = 0xffffffffu;
constexpr uint32_t kMaxIov = 4;

// Operation flags (transport-level; the provider maps FI_* flags to these).
constexpr uint32_t kOpTagged = 1u << 0;      // tagged send / receive
constexpr uint32_t kOpCqData = 1u << 1;      // send carries remote CQ data
constexpr uint32_t kOpCompletion = 1u << 2;  // report a CQ entry on success
constexpr uint32_t kOpInject = 1u << 3;      // copy the payload now (buffer reusable at return)
constexpr uint32_t kOpMore = 1u << 8;        // FI_MORE: more posts follow; the flush can wait
// FI_DELIVERY_COMPLETE (send): complete once the target has placed the message in a receive
// buffer (or discarded it), not when it is acknowledged (FI_TRANSMIT_COMPLETE, the default).
constexpr uint32_t kOpDeliveryComplete = 1u << 9;
// Receive-only flags (fi_tagged(3), fi_msg(3)):
constexpr uint32_t kOpMultiRecv = 1u << 4;   // FI_MULTI_RECV: the buffer takes many messages
constexpr uint32_t kOpPeek = 1u << 5;        // FI_PEEK: report a matching unexpected message
constexpr uint32_t kOpClaim = 1u << 6;       // FI_CLAIM: with kOpPeek reserve it; alone take it
constexpr uint32_t kOpDiscard = 1u << 7;     // FI_DISCARD: drop the peeked / claimed message

// iov entries from iov_count on are unspecified (left uninitialised: zeroing the array was a
// rep stos on every post).
struct SendOp {
  PeerId peer = kNoPeer;
  iovec iov[kMaxIov];
  uint32_t iov_count = 0;
  uint64_t tag = 0;
  uint64_t cq_data = 0;
  uint32_t flags = 0;
  void* context = nullptr;
};

// iov as SendOp's. What matching reads (peer, flags, tag, ignore) comes first, with context: in
// a RecvEntry they share its first cache line with the list links (matcher.hpp).
struct RecvOp {
  PeerId peer = kAnyPeer;  // kAnyPeer: from anyone
  uint32_t flags = 0;
  uint64_t tag = 0;
  uint64_t ignore = 0;     // tag bits that do not take part in matching
  void* context = nullptr;  // kOpClaim: the context of the earlier kOpPeek|kOpClaim
  uint32_t iov_count = 0;
  uint64_t min_multi_recv = 0;  // kOpMultiRecv: retire the buffer when less than this is free
  iovec iov[kMaxIov];
};

// Field-by-field copies for the post paths, which copy operations built moments before with
// narrow stores (a trampoline's iovec, a provider's SendOp on its stack). An aggregate copy
// compiles to 16-byte loads spanning several such stores, and the CPU cannot forward one of
// those from its store buffer: it waits for the stores to reach the cache (store-to-load
// forwarding; on the 64-byte memif stream these stalls were about 10% of the sender's samples).
// Only the iov entries in use are copied.
inline void copy_iov(iovec* dst, const iovec* src, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i) {
    dst[i].iov_base = src[i].iov_base;
    dst[i].iov_len = src[i].iov_len;
  }
}
inline void copy_op(SendOp& d, const SendOp& s) noexcept {
  d.peer = s.peer;
  copy_iov(d.iov, s.iov, s.iov_count < kMaxIov ? s.iov_count : kMaxIov);
  d.iov_count = s.iov_count;
  d.tag = s.tag;
  d.cq_data = s.cq_data;
  d.flags = s.flags;
  d.context = s.context;
}
inline void copy_op(RecvOp& d, const RecvOp& s) noexcept {
  d.peer = s.peer;
  copy_iov(d.iov, s.iov, s.iov_count < kMaxIov ? s.iov_count : kMaxIov);
  d.iov_count = s.iov_count;
  d.tag = s.tag;
  d.ignore = s.ignore;
  d.flags = s.flags;
  d.context = s.context;
  d.min_multi_recv = s.min_multi_recv;
}
static_assert(sizeof(SendOp) == 4 + 4 + kMaxIov * sizeof(iovec) + 4 + 4 + 8 + 8 + 4 + 4 + 8,
              "SendOp changed: copy_op copies it field by field");
static_assert(sizeof(RecvOp) == 4 + 4 + 8 + 8 + 8 + 8 + 8 + kMaxIov * sizeof(iovec),
              "RecvOp changed: copy_op copies it field by field");

// An RMA or atomic operation (fi_rma(3), fi_atomic(3)) on the memory region `key` of `peer`.
enum class RmaKind : uint8_t {
  Write,          // iov -> [addr, addr + len) at the target
  Read,           // [addr, addr + len) at the target -> iov
  Atomic,         // op(target, operand = iov): count elements of datatype
  FetchAtomic,    // ... and the previous values -> result
  CompareAtomic,  // op(target, operand = iov, compare) and the previous values -> result
};
struct RmaOp {
  RmaKind kind = RmaKind::Write;
  PeerId peer = kNoPeer;
  iovec iov[kMaxIov] = {};    // Write: source; Read: destination; atomics: the operand
  uint32_t iov_count = 0;
  uint64_t addr = 0;          // target address (virtual or offset, as the target's MR mode)
  uint64_t key = 0;           // target region key
  uint64_t cq_data = 0;       // Write with kOpCqData: remote CQ data
  uint32_t flags = 0;         // kOpCompletion, kOpInject, kOpCqData (Write)
  void* context = nullptr;
  // Atomics: count elements (count * atomic_size(datatype) bytes in iov, compare, result).
  AtomicOp atomic_op = AtomicOp::Sum;
  AtomicType datatype = AtomicType::Uint64;
  uint32_t count = 0;
  iovec compare[kMaxIov] = {};  // CompareAtomic
  uint32_t compare_count = 0;
  iovec result[kMaxIov] = {};   // FetchAtomic, CompareAtomic
  uint32_t result_count = 0;
};
// Largest atomic operand (and result), bytes: one packet carries operand and compare.
constexpr uint32_t kMaxAtomicBytes = 256;

// Completion flags
constexpr uint32_t kCompSend = 1u << 0;
constexpr uint32_t kCompRecv = 1u << 1;
constexpr uint32_t kCompTagged = 1u << 2;
constexpr uint32_t kCompRemoteCqData = 1u << 3;
constexpr uint32_t kCompMultiRecv = 1u << 4;  // this completion releases a multi-recv buffer
constexpr uint32_t kCompRma = 1u << 5;        // an RMA operation of ours (with kCompRead/Write)
constexpr uint32_t kCompAtomic = 1u << 6;     // an atomic of ours (kCompRead: fetch/compare)
constexpr uint32_t kCompRead = 1u << 7;
constexpr uint32_t kCompWrite = 1u << 8;
// Target side: a peer's operation reached our memory (counters; a CQ entry only with
// kCompRemoteCqData). With kCompRma or kCompAtomic.
constexpr uint32_t kCompRemoteRead = 1u << 9;
constexpr uint32_t kCompRemoteWrite = 1u << 10;

struct Completion {
  void* context = nullptr;
  uint32_t flags = 0;          // kComp*
  bool cq_entry = true;        // false: count it (counters) but write no CQ entry
  util::Status status = util::Status::Ok;
  uint64_t len = 0;            // bytes transferred (recv: bytes placed in the buffer; peek:
                               // the message's length)
  void* buf = nullptr;         // recv: where the data starts (multi-recv: inside the buffer)
  uint64_t cq_data = 0;
  uint64_t tag = 0;
  PeerId peer = kNoPeer;       // recv: the sender
  uint64_t peer_user = ~0ull;  // recv: the provider's tag for the sender (fi_addr), ~0 unknown
  uint64_t olen = 0;           // truncation: bytes that did not fit
  int32_t prov_errno = 0;
};

// A send that completed successfully (kCompSend, Status::Ok): what on_sends_completed hands
// over for each, in completion order.
struct SendDone {
  void* context;
  uint64_t len;    // bytes sent
  uint32_t flags;  // kCompSend, | kCompTagged for a tagged send
  bool cq_entry;   // false: count it (counters) but write no CQ entry (an fi_inject call)
};

// A receive that completed successfully into a posted buffer (kCompRecv, Status::Ok, not
// truncated, not a multi-recv buffer): what on_recvs_completed hands over for each.
struct RecvDone {
  void* context;
  uint64_t len;        // bytes placed (the whole message)
  void* buf;           // where the data starts
  uint64_t cq_data;
  uint64_t tag;
  uint64_t peer_user;  // the provider's tag for the sender (fi_addr), ~0 unknown
  PeerId peer;         // the sender
  uint32_t flags;      // kCompRecv | kCompTagged | kCompRemoteCqData
  bool cq_entry;       // false: count it (counters) but write no CQ entry
};

// The Completion on_completion would get for a burst's entry.
inline Completion to_completion(const SendDone& s) noexcept {
  Completion c;
  c.context = s.context;
  c.flags = s.flags;
  c.cq_entry = s.cq_entry;
  c.len = s.len;
  return c;
}
inline Completion to_completion(const RecvDone& r) noexcept {
  Completion c;
  c.context = r.context;
  c.flags = r.flags;
  c.cq_entry = r.cq_entry;
  c.len = r.len;
  c.buf = r.buf;
  c.cq_data = r.cq_data;
  c.tag = r.tag;
  c.peer = r.peer;
  c.peer_user = r.peer_user;
  return c;
}

class CompletionSink {
 public:
  virtual ~CompletionSink() = default;
  virtual void on_completion(const Completion& c) noexcept = 0;
  // n (>= 1) sends that completed successfully, oldest first, in one call: the engine passes
  // the sends one ACK completes this way (completions in bursts). Equivalent to one
  // on_completion each (this default), which a sink may do with less work per send.
  virtual void on_sends_completed(const SendDone* s, uint32_t n) noexcept {
    for (uint32_t i = 0; i < n; ++i) on_completion(to_completion(s[i]));
  }
  // n (>= 1) receives that completed successfully, in delivery order, in one call (the
  // messages of one packet). Equivalent to one on_completion each (this default).
  virtual void on_recvs_completed(const RecvDone* r, uint32_t n) noexcept {
    for (uint32_t i = 0; i < n; ++i) on_completion(to_completion(r[i]));
  }
};

}  // namespace pollfab::transport
