// Engine send side: posting sends, segmentation, ACK processing, RTT estimation (RFC 6298),
// SACK-driven and timeout-driven retransmission, transmit batching.
#include "transport/engine_impl.hpp"

namespace pollfab::transport {

namespace {
// A hole is retransmitted on SACK evidence when at least this many packets above it arrived
// (the classic duplicate-ACK threshold, tolerating mild reordering).
constexpr uint32_t kDupThresh = 3;
}  // namespace

Status Engine::send(const SendOp& op) noexcept {
  if (op.iov_count > kMaxIov) return Status::Invalid;
  if (op.peer >= peers_.size()) return Status::Invalid;
  uint64_t len = iov_bytes(op.iov, op.iov_count);
  if (len > cfg_.max_msg_size) return Status::TooBig;
  if ((op.flags & kOpInject) && len > cfg_.inject_size) return Status::TooBig;
  if (!cfg_.reliable) return send_dgram(op, len);

  SendMsg* m = send_pool_.get();
  if (!m) return Status::NoResource;
  m->op = op;
  m->len = len;
  m->next_offset = 0;
  m->segmented = false;
  m->next = nullptr;
  if (op.flags & kOpInject) {
    copy_from_iov(op.iov, op.iov_count, 0, m->inject, len);
    m->op.iov[0] = {m->inject, static_cast<size_t>(len)};
    m->op.iov_count = 1;
  }
  Peer& p = P(op.peer);
  if (p.dead) {  // fail fast: the completion reports the failure (FI_ETIMEDOUT)
    complete_send(m, Status::TimedOut);
    return Status::Ok;
  }
  if (!p.sq_head) p.heard_ns = std::max(p.heard_ns, clock_.now_ns());  // a new wait starts now
  if (p.sq_tail) p.sq_tail->next = m; else p.sq_head = m;
  p.sq_tail = m;
  if (!p.sq_next) p.sq_next = m;
  pump(p);
  flush();
  return Status::Ok;
}

Status Engine::send_dgram(const SendOp& op, uint64_t len) noexcept {
  if (len > seg_bytes_) return Status::TooBig;
  Peer& p = P(op.peer);
  PacketBuf pkt;
  if (!alloc_pkt(pkt)) return Status::NoResource;
  wire::Header h;
  h.type = wire::Type::Dgram;
  h.flags = wire::kFirst | wire::kLast | ((op.flags & kOpTagged) ? wire::kTagged : 0) |
            ((op.flags & kOpCqData) ? wire::kCqData : 0);
  h.payload_len = static_cast<uint16_t>(len);
  h.src_ep = cfg_.ep_id;
  h.dst_ep = p.addr.ep_id;
  h.src_epoch = cfg_.epoch;
  h.msg_len = static_cast<uint32_t>(len);
  h.tag = op.tag;
  h.cq_data = op.cq_data;
  wire::encode(h, pkt.data);
  copy_from_iov(op.iov, op.iov_count, 0, pkt.data + wire::kHeaderBytes, len);
  pkt.len = static_cast<uint32_t>(wire::kHeaderBytes + len);
  pkt.route = &p.route;
  if (!enqueue_tx(pkt)) {
    io_.free(&pkt, 1);
    return Status::NoResource;
  }
  flush();
  Completion c;
  c.context = op.context;
  c.flags = kCompSend | ((op.flags & kOpTagged) ? kCompTagged : 0);
  c.cq_entry = (op.flags & kOpCompletion) != 0;
  c.len = len;
  sink_.on_completion(c);
  return Status::Ok;
}

void Engine::pump(Peer& p) noexcept {
  uint64_t now = clock_.now_ns();
  while (p.sq_next && p.inflight() < cfg_.window_pkts) {
    SendMsg& m = *p.sq_next;
    uint32_t off = m.next_offset;
    uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(seg_bytes_, m.len - off));
    Seq32 psn = p.snd_nxt;
    if (!emit_segment(p, m, off, len, psn, false)) break;
    TxSlot& s = p.txw[psn.raw() & wmask_];
    s.msg = &m;
    s.offset = off;
    s.len = len;
    s.sent_ns = now;
    s.tx_count = 1;
    s.sacked = false;
    ++p.snd_nxt;
    m.next_offset = off + len;
    if (m.next_offset == m.len) {
      m.segmented = true;
      m.last_psn = psn;
      p.sq_next = m.next;
    }
    if (!p.rto_deadline_ns) p.rto_deadline_ns = now + p.rto_ns;
  }
}

bool Engine::emit_segment(Peer& p, SendMsg& m, uint32_t off, uint32_t len, Seq32 psn,
                          bool retransmit) noexcept {
  PacketBuf pkt;
  if (!alloc_pkt(pkt)) return false;
  wire::Header h;
  h.type = wire::Type::Data;
  h.flags = (off == 0 ? wire::kFirst : 0) | (uint64_t(off) + len == m.len ? wire::kLast : 0) |
            ((m.op.flags & kOpTagged) ? wire::kTagged : 0) |
            ((m.op.flags & kOpCqData) ? wire::kCqData : 0) | (retransmit ? wire::kRetransmit : 0);
  h.payload_len = static_cast<uint16_t>(len);
  h.src_ep = cfg_.ep_id;
  h.dst_ep = p.addr.ep_id;
  h.src_epoch = cfg_.epoch;
  h.dst_epoch = p.remote_epoch;
  h.psn = psn.raw();
  h.msg_len = static_cast<uint32_t>(m.len);
  h.offset = off;
  h.tag = m.op.tag;
  h.cq_data = m.op.cq_data;
  fill_ack(p, h);
  wire::encode(h, pkt.data);
  copy_from_iov(m.op.iov, m.op.iov_count, off, pkt.data + wire::kHeaderBytes, len);
  pkt.len = static_cast<uint32_t>(wire::kHeaderBytes + len);
  pkt.route = &p.route;
  if (!enqueue_tx(pkt)) {
    io_.free(&pkt, 1);
    return false;
  }
  stats_.tx_bytes += len;
  ++p.tx_pkts;
  p.tx_bytes += len;
  if (retransmit) {
    ++stats_.retx_pkts;
    ++p.retx_pkts;
  }
  return true;
}

void Engine::fill_ack(Peer& p, wire::Header& h) noexcept {
  h.flags |= wire::kAckValid;
  h.ack_psn = p.rcv_nxt.raw();
  uint64_t sack = 0;
  if (p.held_count) {
    uint32_t span = std::min<uint32_t>(64, cfg_.window_pkts - 1);
    for (uint32_t i = 0; i < span; ++i)
      if (p.held[(p.rcv_nxt + 1 + i).raw() & wmask_].data) sack |= 1ull << i;
  }
  h.sack = sack;
  p.ack_pending = 0;
  p.ack_now = false;
}

void Engine::send_ack(Peer& p) noexcept {
  PacketBuf pkt;
  if (!alloc_pkt(pkt)) return;  // retried at the next progress (ack stays pending)
  wire::Header h;
  h.type = wire::Type::Ack;
  h.src_ep = cfg_.ep_id;
  h.dst_ep = p.addr.ep_id;
  h.src_epoch = cfg_.epoch;
  h.dst_epoch = p.remote_epoch;
  uint32_t pending = p.ack_pending;
  bool now = p.ack_now;
  if (p.probe_ns) h.flags |= wire::kAckReq;  // a liveness probe: the peer answers at once
  fill_ack(p, h);
  wire::encode(h, pkt.data);
  pkt.len = wire::kHeaderBytes;
  pkt.route = &p.route;
  if (!enqueue_tx(pkt)) {
    io_.free(&pkt, 1);
    p.ack_pending = pending;
    p.ack_now = now;
    return;
  }
  ++stats_.acks_tx;
}

static void update_rtt(uint64_t sample, uint64_t& srtt, uint64_t& rttvar, bool& valid) noexcept {
  if (!valid) {
    srtt = sample;
    rttvar = sample / 2;
    valid = true;
  } else {
    uint64_t delta = srtt > sample ? srtt - sample : sample - srtt;
    rttvar = (3 * rttvar + delta) / 4;
    srtt = (7 * srtt + sample) / 8;
  }
}

void Engine::on_ack(Peer& p, const wire::Header& h) noexcept {
  Seq32 ack(h.ack_psn);
  if (ack > p.snd_nxt || ack < p.snd_una) return;  // stale or bogus
  uint64_t now = clock_.now_ns();
  if (ack > p.snd_una) {
    bool have = false;
    uint64_t sample = 0;
    for (Seq32 s = p.snd_una; s < ack; ++s) {
      TxSlot& t = p.txw[s.raw() & wmask_];
      // Karn: no samples from retransmitted packets; nor from SACKed ones (their ACK came
      // long before this cumulative one, the gap would count recovery time as RTT).
      if (t.tx_count == 1 && !t.sacked) {
        sample = now - t.sent_ns;
        have = true;
      }
      t.msg = nullptr;
      t.sacked = false;
    }
    p.snd_una = ack;
    if (have) {
      update_rtt(sample, p.srtt_ns, p.rttvar_ns, p.rtt_valid);
      stats_.srtt_ns = p.srtt_ns;
    }
    p.backoff = 0;
    if (p.rtt_valid) {
      uint64_t rto = p.srtt_ns + std::max<uint64_t>(1000, 4 * p.rttvar_ns);
      p.rto_ns = std::clamp(rto, cfg_.rto_min_ns, cfg_.rto_max_ns);
    }
    while (p.sq_head && p.sq_head->segmented && p.sq_head->last_psn < p.snd_una) {
      SendMsg* m = p.sq_head;
      p.sq_head = m->next;
      if (!p.sq_head) p.sq_tail = nullptr;
      complete_send(m, Status::Ok);
    }
    p.rto_deadline_ns = p.inflight() ? now + p.rto_ns : 0;
  }
  if (!h.sack || !p.inflight()) return;
  // SACK scoreboard: mark, then retransmit holes with enough evidence of loss.
  Seq32 highest = ack;
  for (uint32_t i = 0; i < 64; ++i) {
    if (!((h.sack >> i) & 1)) continue;
    Seq32 s = ack + 1 + i;
    if (s >= p.snd_nxt) break;
    p.txw[s.raw() & wmask_].sacked = true;
    highest = s;
  }
  uint32_t above = 0;
  uint64_t rtt_wait = p.rtt_valid ? p.srtt_ns + p.srtt_ns / 4 : cfg_.rto_min_ns;
  for (Seq32 s = highest; s >= p.snd_una; s = s - 1) {
    TxSlot& t = p.txw[s.raw() & wmask_];
    if (t.sacked) { ++above; continue; }
    if (!t.msg || above < kDupThresh) continue;
    // Lost: retransmit unless the last (re)transmission is younger than one RTT.
    if (t.tx_count > 1 && now - t.sent_ns < rtt_wait) continue;
    if (!emit_segment(p, *t.msg, t.offset, t.len, s, true)) break;
    ++t.tx_count;
    t.sent_ns = now;
    ++stats_.fast_retx_events;
    if (s == p.snd_una) break;
  }
}

void Engine::retransmit(Peer& p, Seq32 from, Seq32 to) noexcept {
  uint64_t now = clock_.now_ns();
  for (Seq32 s = from; s < to; ++s) {
    TxSlot& t = p.txw[s.raw() & wmask_];
    if (t.sacked || !t.msg) continue;
    if (!emit_segment(p, *t.msg, t.offset, t.len, s, true)) break;
    ++t.tx_count;
    t.sent_ns = now;
  }
}

void Engine::on_rto(Peer& p, uint64_t now) noexcept {
  if (!p.inflight()) {
    p.rto_deadline_ns = 0;
    return;
  }
  ++stats_.rto_events;
  ++p.rto_events;
  // A timeout voids SACK information (RFC 2018: the receiver may renege): clear it, so the
  // oldest packet is always resent, then resend what SACK could vouch for (the first 65);
  // the ACKs that follow reveal later holes.
  for (Seq32 s = p.snd_una; s < p.snd_nxt; ++s) p.txw[s.raw() & wmask_].sacked = false;
  Seq32 to = p.snd_una + 65;
  if (to > p.snd_nxt) to = p.snd_nxt;
  retransmit(p, p.snd_una, to);
  if (p.backoff < 16) ++p.backoff;
  p.rto_ns = std::min(p.rto_ns * 2, cfg_.rto_max_ns);
  p.rto_deadline_ns = now + p.rto_ns;
}

void Engine::complete_send(SendMsg* m, Status st) noexcept {
  Completion c;
  c.context = m->op.context;
  c.flags = kCompSend | ((m->op.flags & kOpTagged) ? kCompTagged : 0);
  // Success: an entry only if asked for (fi_inject calls never ask). Failure: always an error
  // entry, so the application learns of it (an inject's entry carries its null context).
  c.cq_entry = st != Status::Ok || (m->op.flags & kOpCompletion);
  c.status = st;
  c.len = m->len;
  send_pool_.put(m);
  sink_.on_completion(c);
}

bool Engine::alloc_pkt(PacketBuf& out) noexcept {
  if (alloc_cache_len_ == 0) {
    alloc_cache_len_ = io_.alloc(alloc_cache_, 32);
    if (alloc_cache_len_ == 0) return false;
  }
  out = alloc_cache_[--alloc_cache_len_];
  return true;
}

bool Engine::enqueue_tx(PacketBuf& pkt) noexcept {
  if (txq_len_ == kTxQueue) {
    flush();
    if (txq_len_ == kTxQueue) return false;
  }
  txq_[txq_len_++] = pkt;
  return true;
}

void Engine::flush() noexcept {
  if (!txq_len_) return;
  uint16_t n = io_.tx_burst(txq_, txq_len_);
  stats_.tx_pkts += n;
  if (n < txq_len_) {
    for (uint16_t i = n; i < txq_len_; ++i) txq_[i - n] = txq_[i];
  }
  txq_len_ = static_cast<uint16_t>(txq_len_ - n);
}

void Engine::reset_peer(Peer& p, PeerId pid, Status st) noexcept {
  while (SendMsg* m = p.sq_head) {
    p.sq_head = m->next;
    complete_send(m, st);
  }
  p.sq_tail = p.sq_next = nullptr;
  for (uint32_t i = 0; i < cfg_.window_pkts; ++i) {
    p.txw[i] = TxSlot{};
    if (p.held[i].data) {
      io_.free(&p.held[i], 1);
      p.held[i].data = nullptr;
    }
  }
  p.held_count = 0;
  p.snd_una = p.snd_nxt = p.rcv_nxt = Seq32(0);
  p.rto_deadline_ns = 0;
  p.rto_ns = cfg_.rto_initial_ns;
  p.rtt_valid = false;
  p.backoff = 0;
  p.ack_pending = 0;
  p.ack_now = false;
  if (p.cur_recv) {
    RecvEntry* r = p.cur_recv;
    p.cur_recv = nullptr;
    finish_recv(r, pid, p.cur_msg_len, p.cur_flags, p.cur_tag,
                p.cur_data, st);
  }
  if (p.cur_unex) {
    UnexEntry* u = p.cur_unex;
    p.cur_unex = nullptr;
    if (u->claimed) {
      RecvEntry* r = u->claimed;
      u->claimed = nullptr;
      finish_recv(r, u->peer, u->msg_len, u->flags, u->tag, u->cq_data, st);
    }
    free_unexpected(u);
  }
}

void Engine::check_liveness(Peer& p, PeerId pid, uint64_t now) noexcept {
  // We wait on the peer while our sends to it are unacknowledged, while a message from it is
  // half received, or while our probe is unanswered.
  const bool waiting = p.sq_head || p.cur_recv || p.cur_unex || p.probe_ns;
  if (waiting && now - p.heard_ns >= cfg_.peer_timeout_ns) {
    declare_dead(p, pid);
    return;
  }
  // Receivers wait too: while receives are posted, probe a peer silent for a quarter of the
  // timeout; its engine answers at once (ACK_REQ), or the timeout above declares it dead.
  if (!p.probe_ns && !p.sq_head && now - p.heard_ns >= cfg_.peer_timeout_ns / 4 &&
      (!posted_[0].empty() || !posted_[1].empty())) {
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
  for (auto& list : posted_) {
    for (RecvEntry* r = list.front(); r;) {
      RecvEntry* next = r->next;
      if (all || r->op.peer == pid) {
        list.erase(r);
        finish_recv(r, pid, 0, (r->op.flags & kOpTagged) ? wire::kTagged : 0, r->op.tag, 0,
                    Status::TimedOut);
      }
      r = next;
    }
  }
}

}  // namespace pollfab::transport
