// Engine receives: posting and cancelling them against the Matcher (transport/matcher.hpp),
// and the receive completions (the one place they are generated).
#include "transport/engine_state.hpp"

namespace pollfab::transport {

Status Engine::recv(const RecvOp& op) noexcept {
  if (op.iov_count > kMaxIov) return Status::Invalid;
  if (op.peer != kAnyPeer && op.peer >= peers_.size()) return Status::Invalid;
  RecvEntry* r = matcher_.new_recv();
  if (!r) return Status::NoResource;
  r->op = op;
  r->cap = iov_bytes(op.iov, op.iov_count);
  r->received = 0;
  if (UnexEntry* u = matcher_.match_unexpected(op)) {
    if (u->complete) {
      copy_to_iov(r->op.iov, r->op.iov_count, 0, u->buf, std::min<uint64_t>(u->msg_len, r->cap));
      finish_recv(r, u->peer, u->msg_len, u->flags, u->tag, u->cq_data,
                  u->msg_len > r->cap ? Status::Truncated : Status::Ok);
      matcher_.free_unexpected(u);
    } else {
      u->claimed = r;  // the rest of the message is still arriving
    }
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
  matcher_.post(r);
  return Status::Ok;
}

bool Engine::cancel_recv(void* context) noexcept {
  RecvEntry* r = matcher_.cancel(context);
  if (!r) return false;
  finish_recv(r, kNoPeer, 0, (r->op.flags & kOpTagged) ? wire::kTagged : 0, r->op.tag, 0,
              Status::Canceled);
  return true;
}

void Engine::finish_recv(RecvEntry* r, PeerId pid, uint32_t msg_len, uint32_t flags,
                         uint64_t tag, uint64_t data, Status st) noexcept {
  Completion c;
  c.context = r->op.context;
  c.flags = kCompRecv | ((flags & wire::kTagged) ? kCompTagged : 0) |
            ((flags & wire::kCqData) ? kCompRemoteCqData : 0);
  c.cq_entry = st != Status::Ok || (r->op.flags & kOpCompletion);
  c.status = st;
  c.len = std::min<uint64_t>(msg_len, r->cap);
  c.buf = r->op.iov_count ? r->op.iov[0].iov_base : nullptr;
  c.cq_data = data;
  c.tag = tag;
  c.peer = pid;
  c.peer_user = pid < peers_.size() ? peers_[pid]->user : ~0ull;
  c.olen = msg_len > r->cap ? msg_len - r->cap : 0;
  matcher_.release(r);
  sink_.on_completion(c);
}

void Engine::finish_unexpected(UnexEntry* u) noexcept {
  if (!u->claimed) return;  // stays queued until a receive matches it
  RecvEntry* r = u->claimed;
  u->claimed = nullptr;
  copy_to_iov(r->op.iov, r->op.iov_count, 0, u->buf, std::min<uint64_t>(u->msg_len, r->cap));
  finish_recv(r, u->peer, u->msg_len, u->flags, u->tag, u->cq_data,
              u->msg_len > r->cap ? Status::Truncated : Status::Ok);
  matcher_.free_unexpected(u);
}

}  // namespace pollfab::transport
