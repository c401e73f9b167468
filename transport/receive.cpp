// Engine receives: posting, peeking, claiming and cancelling them against the Matcher
// (transport/matcher.hpp), and the receive completions (the one place they are generated).
// Semantics: fi_tagged(3) (FI_PEEK, FI_CLAIM, FI_DISCARD), fi_msg(3) (FI_MULTI_RECV),
// fi_endpoint(3) (fi_cancel).
#include "transport/engine_state.hpp"

namespace pollfab::transport {

// Inline in its two callers (both below): a call per receive post.
[[gnu::always_inline]] inline Status Engine::start_recv(RecvEntry* r) noexcept {
  const RecvOp& op = r->op;
  if (op.flags & kOpMultiRecv) {
    post_multi_recv(r);
    return Status::Ok;
  }
  if (UnexEntry* u = matcher_->match_unexpected(op)) {
    receive_unexpected(u, r);
    return Status::Ok;
  }
  // A receive only a dead peer could satisfy fails at once (what it sent before dying was
  // matched above), as sends to it do: fi_endpoint(3) leaves it to the provider; waiting
  // forever for a peer we gave up on is the one wrong answer.
  if (op.peer != kAnyPeer && P(op.peer).dead) {
    finish_recv(r, op.peer, 0, (op.flags & kOpTagged) ? wire::kTagged : 0, op.tag, 0,
                Status::TimedOut);
    return Status::Ok;
  }
  matcher_->post(r);
  return Status::Ok;
}

Status Engine::recv(const RecvOp& op) noexcept {
  if (op.iov_count > kMaxIov) return Status::Invalid;
  if (op.peer != kAnyPeer && op.peer >= peers_.size()) return Status::Invalid;
  if (op.flags & kOpPeek) return peek(op);
  if (op.flags & kOpClaim) return recv_claimed(op);
  RecvEntry* r = matcher_->new_recv(op);
  if (!r) return Status::NoResource;
  return start_recv(r);
}

Status Engine::post_recv(RecvEntry* r) noexcept {
  const RecvOp& op = r->op;
  if (op.iov_count > kMaxIov || (op.peer != kAnyPeer && op.peer >= peers_.size()) ||
      (op.flags & (kOpPeek | kOpClaim))) {
    matcher_->release(r);
    return Status::Invalid;
  }
  matcher_->prepare_recv(r);
  return start_recv(r);
}

void Engine::post_multi_recv(RecvEntry* b) noexcept {
  matcher_->post(b);
  // Messages already waiting fill the buffer first, in arrival order. (If the slice pool
  // runs dry, the rest stay unexpected for a later receive.)
  while (!b->retired) {
    UnexEntry* u = matcher_->find_unexpected(b->op);
    if (!u) break;
    RecvEntry* s = matcher_->lend(b, u->msg_len);
    if (!s) break;
    matcher_->take(u);
    receive_unexpected(u, s);
  }
}

Status Engine::peek(const RecvOp& op) noexcept {
  UnexEntry* u = matcher_->find_unexpected(op);
  if (!u) {
    finish_probe(op, nullptr, 0, Status::NoMessage);
    return Status::Ok;
  }
  finish_probe(op, u, u->msg_len, Status::Ok);
  if (op.flags & kOpDiscard) discard(u);
  else if (op.flags & kOpClaim) matcher_->claim(u, op.context);
  return Status::Ok;
}

Status Engine::recv_claimed(const RecvOp& op) noexcept {
  UnexEntry* u = matcher_->take_claimed(op.context);
  if (!u) return Status::Invalid;  // no FI_PEEK|FI_CLAIM under this context
  if (op.flags & kOpDiscard) {
    finish_probe(op, u, 0, Status::Ok);
    discard(u);
    return Status::Ok;
  }
  RecvEntry* r = matcher_->new_recv(op);
  if (!r) {
    matcher_->claim(u, op.context);  // still claimed: the caller retries after progress
    return Status::NoResource;
  }
  receive_unexpected(u, r);
  return Status::Ok;
}

void Engine::discard(UnexEntry* u) noexcept {
  if (Engine* o = owner_of(u); o != this) return o->discard(u);
  matcher_->take(u);
  if (u->complete) {
    answer_delivery(u);  // processed by the target: FI_DELIVERY_COMPLETE holds
    matcher_->free_unexpected(u);
  } else {
    u->discard = true;  // still arriving: freed when its last segment is in
  }
}

void Engine::answer_delivery(UnexEntry* u) noexcept {
  if (!u->answer) return;
  auto* a = static_cast<SendMsg*>(u->answer);
  u->answer = nullptr;
  Peer& p = P(u->peer);
  if (p.dead) send_pool_.put(a);
  else queue_msg(p, a);
}

void Engine::receive_unexpected(UnexEntry* u, RecvEntry* r) noexcept {
  if (Engine* o = owner_of(u); o != this) return o->receive_unexpected(u, r);
  if (!u->complete) {
    u->claimed = r;  // the rest of the message is still arriving
    return;
  }
  copy_to_iov(r->op.iov, r->op.iov_count, 0, u->buf, std::min<uint64_t>(u->msg_len, r->cap));
  finish_recv(r, u->peer, u->msg_len, u->flags, u->tag, u->cq_data,
              u->msg_len > r->cap ? Status::Truncated : Status::Ok);
  answer_delivery(u);
  matcher_->free_unexpected(u);
}

bool Engine::cancel_recv(void* context) noexcept {
  RecvEntry* r = matcher_->cancel(context);
  if (!r) return false;
  if (r->retired) return true;  // a multi-recv buffer: its last open slice releases it
  finish_recv(r, kNoPeer, 0, (r->op.flags & kOpTagged) ? wire::kTagged : 0, r->op.tag, 0,
              Status::Canceled);
  return true;
}

void Engine::finish_recv(RecvEntry* r, PeerId pid, uint32_t msg_len, uint32_t flags,
                         uint64_t tag, uint64_t data, Status st) noexcept {
  flush_recv_done();  // completions already delivered come first
  Completion c;
  c.context = r->op.context;
  c.flags = kCompRecv | ((flags & wire::kTagged) ? kCompTagged : 0) |
            ((flags & wire::kCqData) ? kCompRemoteCqData : 0) |
            ((r->op.flags & kOpMultiRecv) ? kCompMultiRecv : 0);  // a whole buffer ends
  c.cq_entry = st != Status::Ok || (r->op.flags & kOpCompletion);
  c.status = st;
  c.len = std::min<uint64_t>(msg_len, r->cap);
  c.buf = r->op.iov_count ? r->op.iov[0].iov_base : nullptr;
  c.cq_data = data;
  c.tag = tag;
  c.peer = pid;
  c.peer_user = pid < peers_.size() ? peers_[pid]->user : ~0ull;
  c.olen = msg_len > r->cap ? msg_len - r->cap : 0;
  if (matcher_->release(r)) c.flags |= kCompMultiRecv;  // the buffer's last slice
  sink_.on_completion(c);
}

void Engine::finish_probe(const RecvOp& op, const UnexEntry* u, uint64_t len, Status st) noexcept {
  if (u && owner_of(u) != this) return owner_of(u)->finish_probe(op, u, len, st);
  Completion c;
  c.context = op.context;
  c.flags = kCompRecv | ((op.flags & kOpTagged) ? kCompTagged : 0);
  c.cq_entry = true;  // a peek without its answer is useless: always reported
  c.status = st;
  c.len = len;
  c.tag = op.tag;
  if (u) {
    if (u->flags & wire::kCqData) c.flags |= kCompRemoteCqData;
    c.cq_data = u->cq_data;
    c.tag = u->tag;
    c.peer = u->peer;
    c.peer_user = u->peer < peers_.size() ? peers_[u->peer]->user : ~0ull;
  }
  sink_.on_completion(c);
}

void Engine::finish_unexpected(UnexEntry* u) noexcept {
  if (u->discard) {
    answer_delivery(u);
    matcher_->free_unexpected(u);
    return;
  }
  if (!u->claimed) return;  // stays queued until a receive matches it
  RecvEntry* r = u->claimed;
  u->claimed = nullptr;
  receive_unexpected(u, r);
}

}  // namespace pollfab::transport
