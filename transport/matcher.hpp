// Matcher: receive matching of one endpoint, the one place msg and tagged receives meet
// arriving messages (fi_msg(3), fi_tagged(3)). It keeps
//   - posted receives, in posting order, in two classes (untagged, tagged), from a pool of
//     rx_size entries;
//   - unexpected messages (arrived before a matching receive), in arrival order, per class,
//     within a memory budget (max_unexpected_bytes counts every entry's bookkeeping and its
//     buffer, so endless small messages cannot grow memory without bound).
// A message from peer P with tag T matches the first posted receive of its class whose source
// is any or P and, tagged, whose (tag ^ T) & ~ignore == 0; a new receive matches the first
// unexpected message by the same rule. Completions are the engine's business
// (transport/receive.cpp); this class only finds, queues and frees.
// Issue "Open MPI on pollfab" grows this into full tag matching (peek/claim/discard,
// multi-recv, one order across classes where the spec asks for it).
// Thread-safety: none (the engine's owner serialises). Hot path: no allocation except the
// buffer of an unexpected message larger than kInlineBytes.
#pragma once
#include <cstdint>

#include "lib/util/intrusive_list.hpp"
#include "lib/util/pool.hpp"
#include "transport/ops.hpp"

namespace pollfab::transport {

// A posted receive.
struct RecvEntry {
  RecvOp op;
  uint64_t cap = 0;          // bytes the iov holds
  uint32_t received = 0;     // bytes of the current message seen (copied or truncated)
  RecvEntry* prev = nullptr;
  RecvEntry* next = nullptr;
};

// A message that arrived before a matching receive was posted.
struct UnexEntry {
  static constexpr uint32_t kInlineBytes = 256;  // messages up to this size need no malloc
  PeerId peer = kNoPeer;
  uint32_t flags = 0;        // wire flags of the first segment (kTagged, kCqData)
  uint64_t tag = 0, cq_data = 0;
  uint32_t msg_len = 0;
  uint32_t received = 0;
  bool complete = false;
  RecvEntry* claimed = nullptr;  // a receive posted while the message was still arriving
  uint8_t* buf = nullptr;        // msg_len bytes: inline_buf or malloc'd
  uint8_t inline_buf[kInlineBytes];
  UnexEntry* prev = nullptr;
  UnexEntry* next = nullptr;
  bool listed = false;           // in the unexpected queue (false once taken by a receive)
};

class Matcher {
 public:
  Matcher(uint32_t rx_size, uint64_t max_unexpected_bytes);
  ~Matcher();  // frees every unexpected message still held
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;

  // A free receive entry (op and cap set by the caller), nullptr when rx_size are in use.
  RecvEntry* new_recv() noexcept { return recv_pool_.get(); }
  // Gives an entry back (completed or never posted).
  void release(RecvEntry* r) noexcept { recv_pool_.put(r); }
  // Queues r behind the other posted receives of its class.
  void post(RecvEntry* r) noexcept { posted_[cls(r->op.flags)].push_back(r); }
  // The first posted receive a message from pid (tagged: with tag) matches, removed from its
  // queue; nullptr if none.
  RecvEntry* match_posted(PeerId pid, bool tagged, uint64_t tag) noexcept;
  // The first unexpected message the receive op matches, removed from its queue (listed =
  // false; the caller completes it, or claims it while it is still arriving); nullptr if none.
  UnexEntry* match_unexpected(const RecvOp& op) noexcept;
  // Removes the posted (not yet matched) receive with this context; nullptr if none.
  RecvEntry* cancel(void* context) noexcept;
  // Removes every posted receive for which pred(r) holds and calls done(r) for it.
  template <class Pred, class Done>
  void remove_posted_if(Pred&& pred, Done&& done) noexcept {
    for (auto& list : posted_) {
      for (RecvEntry* r = list.front(); r;) {
        RecvEntry* next = r->next;
        if (pred(*r)) {
          list.erase(r);
          done(r);
        }
        r = next;
      }
    }
  }
  bool has_posted() const noexcept { return !posted_[0].empty() || !posted_[1].empty(); }

  // A new unexpected message (queued at the end of its class), nullptr if the budget or
  // memory does not allow it (the caller leaves the packet unacknowledged).
  UnexEntry* new_unexpected(PeerId pid, uint32_t flags, uint64_t tag, uint64_t cq_data,
                            uint32_t msg_len) noexcept;
  // Frees an unexpected message (and removes it from its queue if it is still there).
  void free_unexpected(UnexEntry* u) noexcept;
  // Budget left for unexpected messages, bytes.
  uint64_t unexpected_free_bytes() const noexcept {
    return max_unexpected_bytes_ > unex_bytes_ ? max_unexpected_bytes_ - unex_bytes_ : 0;
  }
  uint32_t unexpected_count() const noexcept { return unex_count_; }
  // True (once) if budget was freed since the last call: throttled senders may be reopened.
  bool take_budget_freed() noexcept {
    const bool b = budget_freed_;
    budget_freed_ = false;
    return b;
  }
  uint32_t recvs_in_use() const noexcept { return recv_pool_.in_use(); }

 private:
  static int cls(uint32_t op_flags) noexcept { return (op_flags & kOpTagged) ? 1 : 0; }

  util::ObjectPool<RecvEntry> recv_pool_;
  util::IntrusiveList<RecvEntry> posted_[2];      // [0] untagged, [1] tagged
  util::IntrusiveList<UnexEntry> unexpected_[2];
  uint64_t max_unexpected_bytes_;
  uint64_t unex_bytes_ = 0;
  uint32_t unex_count_ = 0;
  bool budget_freed_ = false;
};

}  // namespace pollfab::transport
