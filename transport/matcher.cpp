#include "transport/matcher.hpp"

#include <cstdlib>
#include <new>

#include "transport/wire.hpp"

namespace pollfab::transport {

namespace {
int unex_cls(const UnexEntry& u) noexcept { return (u.flags & wire::kTagged) ? 1 : 0; }
}  // namespace

Matcher::Matcher(uint32_t rx_size, uint64_t max_unexpected_bytes)
    : recv_pool_(rx_size ? rx_size : 1), max_unexpected_bytes_(max_unexpected_bytes) {}

Matcher::~Matcher() {
  for (auto& l : unexpected_)
    while (UnexEntry* u = l.front()) free_unexpected(u);
}

RecvEntry* Matcher::match_posted(PeerId pid, bool tagged, uint64_t tag) noexcept {
  auto& list = posted_[tagged ? 1 : 0];
  for (RecvEntry* r = list.front(); r; r = r->next) {
    if (r->op.peer != kAnyPeer && r->op.peer != pid) continue;
    if (tagged && ((r->op.tag ^ tag) & ~r->op.ignore)) continue;
    list.erase(r);
    return r;
  }
  return nullptr;
}

UnexEntry* Matcher::match_unexpected(const RecvOp& op) noexcept {
  const int c = cls(op.flags);
  for (UnexEntry* u = unexpected_[c].front(); u; u = u->next) {
    if (op.peer != kAnyPeer && op.peer != u->peer) continue;
    if (c && ((u->tag ^ op.tag) & ~op.ignore)) continue;
    unexpected_[c].erase(u);
    u->listed = false;
    return u;
  }
  return nullptr;
}

RecvEntry* Matcher::cancel(void* context) noexcept {
  for (auto& list : posted_) {
    for (RecvEntry* r = list.front(); r; r = r->next) {
      if (r->op.context != context) continue;
      list.erase(r);
      return r;
    }
  }
  return nullptr;
}

UnexEntry* Matcher::new_unexpected(PeerId pid, uint32_t flags, uint64_t tag, uint64_t cq_data,
                                   uint32_t msg_len) noexcept {
  const bool inline_buf = msg_len <= UnexEntry::kInlineBytes;
  const uint64_t cost = sizeof(UnexEntry) + (inline_buf ? 0 : msg_len);
  if (unex_bytes_ + cost > max_unexpected_bytes_) return nullptr;
  UnexEntry* u = new (std::nothrow) UnexEntry;
  if (!u) return nullptr;
  u->buf = inline_buf ? u->inline_buf : static_cast<uint8_t*>(std::malloc(msg_len));
  if (!u->buf) {
    delete u;
    return nullptr;
  }
  unex_bytes_ += cost;
  u->peer = pid;
  u->flags = flags;
  u->tag = tag;
  u->cq_data = cq_data;
  u->msg_len = msg_len;
  unexpected_[unex_cls(*u)].push_back(u);
  u->listed = true;
  ++unex_count_;
  return u;
}

void Matcher::free_unexpected(UnexEntry* u) noexcept {
  if (u->listed) {
    unexpected_[unex_cls(*u)].erase(u);
    u->listed = false;
  }
  unex_bytes_ -= sizeof(UnexEntry);
  budget_freed_ = true;
  if (u->buf && u->buf != u->inline_buf) {
    std::free(u->buf);
    unex_bytes_ -= u->msg_len;
  }
  --unex_count_;
  delete u;
}

}  // namespace pollfab::transport
