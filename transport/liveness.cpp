// Engine liveness: incarnations (epochs) and peer failure.
//
// Epochs: each engine has a random incarnation number. A peer whose epoch changes restarted:
// its state is reset and its pending sends fail with IoError; packets of the incarnation it
// replaced, and packets addressed to an earlier incarnation of this engine, are dropped (the
// latter answered with an ACK carrying our epoch, so the sender learns at once).
// Peer failure: a peer silent for peer_timeout_ns while we wait on it (unacknowledged sends, a
// half-received message, an unanswered probe) is dead: its pending sends, the message being
// received from it and receives directed at it complete with TimedOut (and, once no live peer
// is left, every posted receive); it comes back only as a new incarnation. While receives are
// posted, a peer silent for a quarter of the timeout is probed (ACK_REQ). docs/transport.md
// ("Peer failure").
#include "transport/engine_state.hpp"

namespace pollfab::transport {

bool Engine::check_epoch(Peer& p, PeerId pid, uint32_t src_epoch) noexcept {
  if (p.remote_epoch != src_epoch) {
    if (src_epoch == p.retired_epoch) {  // a late packet of an incarnation already replaced
      ++stats_.drop_stale_epoch;
      return false;
    }
    if (p.remote_epoch != 0) {  // the peer restarted: what we had with it is void
      ++stats_.peer_resets;
      if (!p.dead) reset_peer(p, pid, Status::IoError);
      p.retired_epoch = p.remote_epoch;
    }
    p.remote_epoch = src_epoch;
    p.dead = false;  // a new incarnation is a live peer
  }
  if (p.dead) {  // only a new incarnation (handled above) brings a dead peer back
    ++stats_.drop_dead_peer;
    return false;
  }
  return true;
}

void Engine::on_stale_epoch(const PeerAddr& a, const wire::Header& h) noexcept {
  // Tell the sender we restarted (an ACK with our epoch resets its state for us), so its
  // pending sends fail at once instead of being retransmitted forever.
  if (!wire::carries_psn(h.type)) return;
  PeerId sp = find_peer(a);
  if (sp == kNoPeer) {
    try { sp = create_peer(a); } catch (...) { sp = kNoPeer; }
  }
  if (sp == kNoPeer) return;
  Peer& q = P(sp);
  if (q.remote_epoch != h.src_epoch) {
    if (q.remote_epoch) q.retired_epoch = q.remote_epoch;
    q.remote_epoch = h.src_epoch;
  }
  send_ack(q);
}

void Engine::reset_peer(Peer& p, PeerId pid, Status st) noexcept {
  rx_cont_.valid = false;
  while (SendMsg* m = p.sq_head) {
    p.sq_head = m->next;
    complete_send(m, st);
  }
  p.sq_tail = p.sq_next = nullptr;
  p.queued_msgs = 0;
  note_blocked(p, Block::None, now_);  // nothing waits now
  if (p.txw) {
    for (uint32_t i = 0; i < p.send_ring_slots(); ++i) p.txw[i] = TxSlot{};
    p.sack_bits.clear_all();
  }
  p.held.clear([this](PacketBuf& pkt) { io_.free(&pkt, 1); });
  close_hole(p);  // the hole is gone with the packets held above it
  restart_protocol(p);
  fail_current(p, pid, st);
  if (p.rma_answer) {  // a write was being received: its answer is moot
    send_pool_.put(p.rma_answer);
    p.rma_answer = nullptr;
  }
  fail_rma(pid, st);
}

// We wait on the peer while our sends to it are unacknowledged, while a message from it is
// half received, or while our probe is unanswered: dead after peer_timeout of silence.
bool Engine::waiting_on(const Peer& p) const noexcept {
  return p.sq_head || p.cur_recv || p.cur_unex || p.probe_ns || p.rma_pending;
}

// Receivers wait too: while receives are posted, a peer silent for a quarter of the timeout is
// probed; its engine answers at once (ACK_REQ), or the timeout declares it dead.
bool Engine::probe_due_to(const Peer& p) const noexcept {
  return !p.probe_ns && !p.sq_head && matcher_->has_posted();
}

uint64_t Engine::liveness_deadline(const Peer& p) const noexcept {
  uint64_t d = UINT64_MAX;
  if (waiting_on(p)) d = p.heard_ns + cfg_.peer_timeout_ns;
  if (probe_due_to(p)) d = std::min(d, p.heard_ns + cfg_.peer_timeout_ns / 4);
  return d;
}

void Engine::check_liveness(Peer& p, PeerId pid, uint64_t now) noexcept {
  if (waiting_on(p) && now - p.heard_ns >= cfg_.peer_timeout_ns) {
    declare_dead(p, pid);
    return;
  }
  if (probe_due_to(p) && now - p.heard_ns >= cfg_.peer_timeout_ns / 4) {
    p.ack_now = true;
    if (!p.ack_pending) note_ack_pending(p);
    p.probe_ns = now;
    p.heard_ns = now;  // the timeout runs from the probe
    send_ack(p);
    ++stats_.probes_tx;
  }
}

void Engine::declare_dead(Peer& p, PeerId pid) noexcept {
  ++stats_.peers_dead;
  p.dead = true;
  p.probe_ns = 0;
  reset_peer(p, pid, Status::TimedOut);
  // Receives that only this peer could satisfy fail; once no live peer is left, all do.
  bool any_live = false;
  for (auto& q : peers_) any_live |= !q->dead;
  fail_posted(pid, !any_live);
}

void Engine::fail_posted(PeerId pid, bool all) noexcept {
  if (!own_matcher_) return;  // a shared context's receives belong to every sharer
  matcher_->remove_posted_if(
      [&](const RecvEntry& r) { return all || r.op.peer == pid; },
      [&](RecvEntry* r) {
        finish_recv(r, pid, 0, (r->op.flags & kOpTagged) ? wire::kTagged : 0, r->op.tag, 0,
                    Status::TimedOut);
      });
}

}  // namespace pollfab::transport
