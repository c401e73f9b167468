#include "transport/matcher.hpp"

#include <cstdlib>
#include <new>

#include "transport/iov.hpp"
#include "transport/wire.hpp"

namespace pollfab::transport {

namespace {
int unex_cls(const UnexEntry& u) noexcept { return (u.flags & wire::kTagged) ? 1 : 0; }
}  // namespace

Matcher::Matcher(uint32_t rx_size, uint64_t max_unexpected_bytes)
    : recv_pool_(rx_size ? rx_size : 1),
      slice_pool_(rx_size ? rx_size : 1),
      max_unexpected_bytes_(max_unexpected_bytes) {}

Matcher::~Matcher() {
  for (auto& l : unexpected_)
    while (UnexEntry* u = l.front()) free_unexpected(u);
  while (UnexEntry* u = claimed_.front()) free_unexpected(u);
  while (UnexEntry* u = spare_) {
    spare_ = u->next;
    delete u;
  }
}

UnexEntry* Matcher::alloc_unexpected() noexcept {
  UnexEntry* u = spare_;
  if (!u) return new (std::nothrow) UnexEntry;
  spare_ = u->next;
  --spare_n_;
  return new (u) UnexEntry;  // every field as new UnexEntry leaves it (the buffer uninitialised)
}

void Matcher::release_unexpected(UnexEntry* u) noexcept {
  if (spare_n_ >= kSpareUnexpected) {
    delete u;
    return;
  }
  u->next = spare_;
  spare_ = u;
  ++spare_n_;
}

RecvEntry* Matcher::new_recv() noexcept {
  RecvEntry* r = recv_pool_.get();
  if (r) *r = RecvEntry{};
  return r;
}

RecvEntry* Matcher::new_recv(const RecvOp& op) noexcept {
  RecvEntry* r = alloc_recv();
  if (!r) return nullptr;
  copy_op(r->op, op);
  prepare_recv(r);
  return r;
}

bool Matcher::release_slice(RecvEntry* r) noexcept {
  RecvEntry* b = r->parent;
  slice_pool_.put(r);
  if (--b->slices || !b->retired) return false;
  recv_pool_.put(b);
  return true;
}

bool Matcher::withdraw(RecvEntry* r) noexcept {
  if (!(r->op.flags & kOpMultiRecv) || !r->slices) return false;
  r->retired = true;
  return true;
}

RecvEntry* Matcher::lend(RecvEntry* b, uint64_t msg_len) noexcept {
  RecvEntry* s = slice_pool_.get();
  if (!s) return nullptr;
  *s = RecvEntry{};
  s->op = b->op;
  s->op.flags &= ~kOpMultiRecv;
  s->parent = b;
  const uint64_t len = std::min<uint64_t>(msg_len, b->cap - b->used);
  s->op.iov_count = slice_iov(b->op.iov, b->op.iov_count, b->used, len, s->op.iov);
  if (!s->op.iov_count) {  // an empty slice: its completion still points into the buffer
    s->op.iov_count = 1;
    s->op.iov[0] = {iov_addr(b->op.iov, b->op.iov_count, b->used), 0};
  }
  s->cap = len;
  b->used += len;
  ++b->slices;
  if (b->cap - b->used < b->op.min_multi_recv || b->used == b->cap) {
    if (!b->retired) posted_[cls(b->op.flags)].erase(b);
    b->retired = true;
  }
  return s;
}

RecvEntry* Matcher::match_posted_walk(PeerId pid, bool tagged, uint64_t tag,
                                      uint64_t msg_len) noexcept {
  auto& list = posted_[tagged ? 1 : 0];
  for (RecvEntry* r = list.front(); r; r = r->next) {
    if (!matches(r->op, pid, tagged, tag)) continue;
    if (r->op.flags & kOpMultiRecv) return lend(r, msg_len);
    list.erase(r);  // (not the head: match_posted takes a head that matches whole)
    return r;
  }
  return nullptr;
}

UnexEntry* Matcher::find_unexpected(const RecvOp& op) noexcept {
  const int c = cls(op.flags);
  for (UnexEntry* u = unexpected_[c].front(); u; u = u->next)
    if (matches(op, u->peer, c, u->tag)) return u;
  return nullptr;
}

UnexEntry* Matcher::match_unexpected_queued(const RecvOp& op) noexcept {
  UnexEntry* u = find_unexpected(op);
  if (u) take(u);
  return u;
}

void Matcher::take(UnexEntry* u) noexcept {
  if (u->queue == UnexEntry::Queue::Unexpected) unexpected_[unex_cls(*u)].erase(u);
  else if (u->queue == UnexEntry::Queue::Claimed) claimed_.erase(u);
  u->queue = UnexEntry::Queue::None;
}

void Matcher::claim(UnexEntry* u, void* context) noexcept {
  take(u);
  u->claim_context = context;
  claimed_.push_back(u);
  u->queue = UnexEntry::Queue::Claimed;
}

UnexEntry* Matcher::take_claimed(void* context) noexcept {
  for (UnexEntry* u = claimed_.front(); u; u = u->next) {
    if (u->claim_context != context) continue;
    take(u);
    return u;
  }
  return nullptr;
}

RecvEntry* Matcher::cancel(void* context) noexcept {
  for (auto& list : posted_) {
    for (RecvEntry* r = list.front(); r; r = r->next) {
      if (r->op.context != context) continue;
      list.erase(r);
      withdraw(r);
      return r;
    }
  }
  return nullptr;
}

UnexEntry* Matcher::new_unexpected(PeerId pid, uint32_t flags, uint64_t tag, uint64_t cq_data,
                                   uint32_t msg_len, const void* owner) noexcept {
  const bool inline_buf = msg_len <= UnexEntry::kInlineBytes;
  const uint64_t cost = sizeof(UnexEntry) + (inline_buf ? 0 : msg_len);
  if (unex_bytes_ + cost > max_unexpected_bytes_) return nullptr;
  UnexEntry* u = alloc_unexpected();
  if (!u) return nullptr;
  u->buf = inline_buf ? u->inline_buf : static_cast<uint8_t*>(std::malloc(msg_len));
  if (!u->buf) {
    release_unexpected(u);
    return nullptr;
  }
  unex_bytes_ += cost;
  u->peer = pid;
  u->owner = owner;
  u->flags = flags;
  u->tag = tag;
  u->cq_data = cq_data;
  u->msg_len = msg_len;
  unexpected_[unex_cls(*u)].push_back(u);
  u->queue = UnexEntry::Queue::Unexpected;
  ++unex_count_;
  return u;
}

void Matcher::free_unexpected(UnexEntry* u) noexcept {
  take(u);
  unex_bytes_ -= sizeof(UnexEntry);
  ++budget_epoch_;
  if (u->buf && u->buf != u->inline_buf) {
    std::free(u->buf);
    unex_bytes_ -= u->msg_len;
  }
  --unex_count_;
  release_unexpected(u);
}

void Matcher::free_owned(const void* owner) noexcept {
  auto sweep = [&](util::IntrusiveList<UnexEntry>& list) {
    for (UnexEntry* u = list.front(); u;) {
      UnexEntry* next = u->next;
      if (u->owner == owner) free_unexpected(u);
      u = next;
    }
  };
  for (auto& l : unexpected_) sweep(l);
  sweep(claimed_);
}

}  // namespace pollfab::transport
