// Matcher: receive matching of one endpoint, the one place msg and tagged receives meet
// arriving messages (fi_msg(3), fi_tagged(3)). It keeps
//   - posted receives, in posting order, in two classes (untagged, tagged), from a pool of
//     rx_size entries;
//   - unexpected messages (arrived before a matching receive), in arrival order, per class,
//     within a memory budget (max_unexpected_bytes counts every entry's bookkeeping and its
//     buffer, so endless small messages cannot grow memory without bound);
//   - claimed messages (FI_PEEK|FI_CLAIM): taken out of matching, found again by the claiming
//     receive's context (FI_CLAIM).
// Matching rule (fi_tagged(3) "tag matching"): a message from peer P with tag T matches the
// first posted receive of its class whose source is any or P and, tagged, whose
// (tag ^ T) & ~ignore == 0; a new receive (or a peek) matches the first unexpected message of
// its class by the same rule. Messages are matched in the order the transport delivers them
// (per peer: send order).
// Multi-recv (FI_MULTI_RECV, fi_msg(3)): a buffer entry stays posted and lends each message a
// slice (a child entry, from a second pool of rx_size) starting where the previous one
// ended; a message longer than the free space gets the free space (truncated). Once less
// than min_multi_recv bytes are free the buffer leaves the posted queue (retired); the
// completion of its last slice releases it (release() returns true: FI_MULTI_RECV).
// Completions are the engine's business (transport/receive.cpp); this class only finds,
// queues and frees.
// Shared receive contexts (fi_srx_context, fi_endpoint(3) "Shared Contexts"): one Matcher may
// serve several engines (Engine::share_matcher). Its posted receives then match any engine's
// messages (they name no peer), and every unexpected message remembers the engine it arrived
// on (UnexEntry::owner), which completes it.
// Thread-safety: none (the engines' owner serialises; engines sharing a matcher share that
// serialisation). Hot path: no allocation except the buffer of an unexpected message larger
// than kInlineBytes.
#pragma once
#include <cstddef>
#include <cstdint>

#include "lib/util/intrusive_list.hpp"
#include "lib/util/pool.hpp"
#include "transport/iov.hpp"
#include "transport/ops.hpp"

namespace pollfab::transport {

// A posted receive, a multi-recv buffer, or a slice of one (parent set). Laid out for the walk
// of the posted list (with many receives posted the entry that matches is cold): the links, cap,
// parent and the op's peer, flags, tag, ignore and context fill the first cache line, which is
// all that matching, unlinking and completing a whole message read besides iov[0].
struct RecvEntry {
  RecvEntry* prev = nullptr;
  RecvEntry* next = nullptr;
  uint64_t cap = 0;          // bytes the iov holds
  RecvEntry* parent = nullptr;  // slice: the multi-recv buffer it belongs to
  RecvOp op;
  uint32_t received = 0;     // bytes of the current message seen (copied or truncated)
  uint32_t slices = 0;       // multi-recv buffer: slices not yet released
  uint64_t used = 0;         // multi-recv buffer: bytes lent to slices
  bool retired = false;      // multi-recv buffer: out of the posted queue, awaiting its slices
};
static_assert(offsetof(RecvEntry, op) + offsetof(RecvOp, context) + sizeof(void*) <= 64,
              "matching's fields left the entry's first cache line");
// Matcher::prepare_recv sets every field by hand (the receive post's fast path): a new field
// must be set there too.
static_assert(sizeof(RecvEntry) == sizeof(RecvOp) + 56, "RecvEntry changed: see Matcher::prepare_recv");

// A message that arrived before a matching receive was posted.
struct UnexEntry {
  static constexpr uint32_t kInlineBytes = 256;  // messages up to this size need no malloc
  enum class Queue : uint8_t { None, Unexpected, Claimed };
  PeerId peer = kNoPeer;     // in the owner's peer table
  const void* owner = nullptr;  // the engine the message arrived on
  uint32_t flags = 0;        // wire flags of the first segment (kTagged, kCqData)
  uint64_t tag = 0, cq_data = 0;
  uint32_t msg_len = 0;
  uint32_t received = 0;
  bool complete = false;
  bool discard = false;          // FI_DISCARD while still arriving: freed once complete
  RecvEntry* claimed = nullptr;  // a receive taken while the message was still arriving
  void* claim_context = nullptr; // Queue::Claimed: the FI_PEEK|FI_CLAIM operation's context
  void* answer = nullptr;        // the engine's delivery answer, sent when a receive takes it
  uint8_t* buf = nullptr;        // msg_len bytes: inline_buf or malloc'd
  uint8_t inline_buf[kInlineBytes];
  UnexEntry* prev = nullptr;
  UnexEntry* next = nullptr;
  Queue queue = Queue::None;     // None once a receive or a discard took it
};

class Matcher {
 public:
  Matcher(uint32_t rx_size, uint64_t max_unexpected_bytes);
  ~Matcher();  // frees every unexpected and claimed message still held
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;

  // A free receive entry (op and cap set by the caller), nullptr when rx_size are in use.
  RecvEntry* new_recv() noexcept;
  // The same for op: op copied, cap = the bytes its iov holds.
  RecvEntry* new_recv(const RecvOp& op) noexcept;
  // An entry whose op the caller writes in place (iov_count <= kMaxIov) before
  // prepare_recv(r) sets the rest as new_recv(op) does; release() takes it back unprepared.
  // nullptr when rx_size are in use.
  // (Inline, as prepare_recv and release: every receive post and completion runs them, and a
  // call each was ~40 instructions of a receive's ~800 at 64 bytes.)
  RecvEntry* alloc_recv() noexcept {
    RecvEntry* r = recv_pool_.get();
    if (r) r->parent = nullptr;  // release() may take it back before prepare_recv()
    return r;
  }
  void prepare_recv(RecvEntry* r) noexcept {
    // Field by field, as new_recv() would leave them: the post's fast path (a whole-entry
    // clear then a copy of op wrote the entry twice).
    r->cap = iov_bytes(r->op.iov, r->op.iov_count);
    r->received = 0;
    r->parent = nullptr;
    r->used = 0;
    r->slices = 0;
    r->retired = false;
    r->prev = r->next = nullptr;
  }
  // Gives an entry back (completed, or never posted). For a multi-recv slice it returns true
  // if this was the last slice of a retired buffer: the buffer is given back too and the
  // slice's completion is the one that carries FI_MULTI_RECV.
  bool release(RecvEntry* r) noexcept {
    if (!r->parent) [[likely]] {
      recv_pool_.put(r);
      return false;
    }
    return release_slice(r);
  }
  // Queues r behind the other posted receives of its class.
  void post(RecvEntry* r) noexcept {
    if (posted_[0].empty() && posted_[1].empty()) ++posted_epoch_;  // has_posted() turns true
    posted_[cls(r->op.flags)].push_back(r);
  }
  // The receive a message of msg_len bytes from pid (tagged: with tag) goes to: the first
  // posted receive it matches (removed from its queue), or a slice of the first matching
  // multi-recv buffer; nullptr if none (or no slice entry is free). Inline when the first
  // posted receive of the class takes it whole (receives posted in the order messages come:
  // the common case); match_posted_walk looks further.
  RecvEntry* match_posted(PeerId pid, bool tagged, uint64_t tag, uint64_t msg_len) noexcept {
    auto& list = posted_[tagged ? 1 : 0];
    RecvEntry* r = list.front();
    if (r && matches(r->op, pid, tagged, tag) && !(r->op.flags & kOpMultiRecv)) [[likely]] {
      prefetch_next(r);
      list.erase(r);
      return r;
    }
    return match_posted_walk(pid, tagged, tag, msg_len);
  }
  RecvEntry* match_posted_walk(PeerId pid, bool tagged, uint64_t tag, uint64_t msg_len) noexcept;
  // The next message most likely matches the entry after r, the new head, posted long ago (a
  // receiver keeps many posted: out of L1 by now): it is fetched while r is placed.
  static void prefetch_next(const RecvEntry* r) noexcept {
    if (r->next) {
      __builtin_prefetch(r->next);
      __builtin_prefetch(reinterpret_cast<const char*>(r->next) + 64);  // op.iov
    }
  }
  // A slice of multi-recv buffer b for a msg_len-byte message (b retires if less than
  // min_multi_recv stays free); nullptr if no slice entry is free.
  RecvEntry* lend(RecvEntry* b, uint64_t msg_len) noexcept;
  // The first unexpected message the receive op matches; nullptr if none.
  //   find_unexpected leaves it queued (peek); match_unexpected removes it (queue = None;
  //   the caller completes it, or claims it while it is still arriving).
  UnexEntry* find_unexpected(const RecvOp& op) noexcept;
  UnexEntry* match_unexpected(const RecvOp& op) noexcept {
    if (unexpected_[cls(op.flags)].empty()) [[likely]] return nullptr;  // the common post
    return match_unexpected_queued(op);
  }
  // Removes u from the unexpected queue (a receive or a discard took it).
  void take(UnexEntry* u) noexcept;
  // FI_PEEK|FI_CLAIM: moves u from the unexpected queue to the claimed set under context.
  void claim(UnexEntry* u, void* context) noexcept;
  // FI_CLAIM: the message claimed under context, removed from the claimed set; nullptr if none.
  UnexEntry* take_claimed(void* context) noexcept;
  // Removes the posted (not yet matched) receive or multi-recv buffer with this context;
  // nullptr if none. A buffer with slices still open comes back marked retired (its last
  // slice's completion releases it); the caller completes the entries that are not.
  RecvEntry* cancel(void* context) noexcept;
  // Removes every posted receive for which pred(r) holds and calls done(r) for it (a
  // multi-recv buffer with open slices is retired instead, as in cancel()).
  template <class Pred, class Done>
  void remove_posted_if(Pred&& pred, Done&& done) noexcept {
    for (auto& list : posted_) {
      for (RecvEntry* r = list.front(); r;) {
        RecvEntry* next = r->next;
        if (pred(*r)) {
          list.erase(r);
          if (!withdraw(r)) done(r);
        }
        r = next;
      }
    }
  }
  bool has_posted() const noexcept { return !posted_[0].empty() || !posted_[1].empty(); }
  // Counts the times has_posted() turned true: an engine that sees it change since it last
  // looked walks its peers (a peer silent while receives wait is probed: Engine::probe_due_to),
  // whichever engine sharing the matcher posted. (Each post would make every sharer walk.)
  uint64_t posted_epoch() const noexcept { return posted_epoch_; }

  // A new unexpected message from peer pid of engine owner (queued at the end of its class),
  // nullptr if the budget or memory does not allow it (the caller leaves the packet
  // unacknowledged).
  UnexEntry* new_unexpected(PeerId pid, uint32_t flags, uint64_t tag, uint64_t cq_data,
                            uint32_t msg_len, const void* owner = nullptr) noexcept;
  // Frees an unexpected message (and removes it from its queue or the claimed set).
  void free_unexpected(UnexEntry* u) noexcept;
  // Frees every queued or claimed unexpected message of engine owner (an engine leaving a
  // shared matcher; messages still arriving are the engine's to free).
  void free_owned(const void* owner) noexcept;
  // True if nothing is posted, queued or claimed (a matcher an engine may leave for a shared
  // one without losing anything).
  bool empty() const noexcept {
    return !has_posted() && !unex_count_ && !recvs_in_use();
  }
  // Budget left for unexpected messages, bytes.
  uint64_t unexpected_free_bytes() const noexcept {
    return max_unexpected_bytes_ > unex_bytes_ ? max_unexpected_bytes_ - unex_bytes_ : 0;
  }
  uint32_t unexpected_count() const noexcept { return unex_count_; }
  // Counts the frees of unexpected messages: an engine that sees it change since it last
  // looked reopens throttled senders (each engine sharing the matcher keeps its own mark).
  uint64_t budget_epoch() const noexcept { return budget_epoch_; }
  // Receives, buffers and slices in use.
  uint32_t recvs_in_use() const noexcept { return recv_pool_.in_use() + slice_pool_.in_use(); }

 private:
  static int cls(uint32_t op_flags) noexcept { return (op_flags & kOpTagged) ? 1 : 0; }
  static bool matches(const RecvOp& op, PeerId pid, bool tagged, uint64_t tag) noexcept {
    return (op.peer == kAnyPeer || op.peer == pid) && (!tagged || !((op.tag ^ tag) & ~op.ignore));
  }
  bool release_slice(RecvEntry* r) noexcept;                  // release()'s multi-recv half
  UnexEntry* match_unexpected_queued(const RecvOp& op) noexcept;  // match_unexpected's walk
  // r left the posted queue: true if it is a buffer with open slices (retired, kept).
  bool withdraw(RecvEntry* r) noexcept;
  // Unexpected-message entries come from a list of spares (a freed entry goes there, up to
  // kSpareUnexpected; beyond, back to the heap): a malloc and a free per unexpected message
  // were about 370 instructions of its ~1,300. Spares are not counted against
  // max_unexpected_bytes (they hold no message); ~Matcher frees them.
  static constexpr uint32_t kSpareUnexpected = 256;
  UnexEntry* alloc_unexpected() noexcept;  // nullptr if memory is short
  void release_unexpected(UnexEntry* u) noexcept;
  UnexEntry* spare_ = nullptr;  // linked through next
  uint32_t spare_n_ = 0;

  util::ObjectPool<RecvEntry> recv_pool_;
  util::ObjectPool<RecvEntry> slice_pool_;
  util::IntrusiveList<RecvEntry> posted_[2];      // [0] untagged, [1] tagged
  util::IntrusiveList<UnexEntry> unexpected_[2];
  util::IntrusiveList<UnexEntry> claimed_;
  uint64_t max_unexpected_bytes_;
  uint64_t unex_bytes_ = 0;
  uint32_t unex_count_ = 0;
  uint64_t budget_epoch_ = 0;
  uint64_t posted_epoch_ = 0;
};

}  // namespace pollfab::transport
