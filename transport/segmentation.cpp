// Engine segmentation: posting a reliable send, cutting messages into segments of
// max_packet_bytes - header (zero copy: attached from the application's buffer when the I/O
// layer can), bundling small whole messages into one packet, building each segment's header.
// The receive side, reassembly, is reassembly.cpp.
#include <cstddef>
#include <new>
#include <type_traits>

#include "transport/engine_state.hpp"

namespace pollfab::transport {

// Inline in its two callers (both here): a call per post cost the sender ~15 instructions.
[[gnu::always_inline]] inline Status Engine::check_send(const SendOp& op,
                                                        uint64_t& len) const noexcept {
  if (op.iov_count > kMaxIov) return Status::Invalid;
  if (op.peer >= peers_.size()) return Status::Invalid;
  len = iov_bytes(op.iov, op.iov_count);
  if (len > cfg_.max_msg_size) return Status::TooBig;
  if ((op.flags & kOpInject) && len > cfg_.inject_size) return Status::TooBig;
  return Status::Ok;
}

Status Engine::send(const SendOp& op) noexcept {
  uint64_t len = 0;
  if (Status st = check_send(op, len); st != Status::Ok) return st;
  if (!cfg_.reliable) return send_dgram(op, len);
  if (send_pool_.in_use() >= cfg_.tx_size && dacks_pending_) apply_deferred_acks();
  if (send_pool_.in_use() >= cfg_.tx_size) return Status::NoResource;  // the rest is for answers
  if ((op.flags & kOpDeliveryComplete) && rma_free_.empty()) return Status::NoResource;
  SendMsg* m = send_pool_.get();
  if (!m) return Status::NoResource;
  m->start_app(op, len);
  return start_send(m);
}

SendOp* Engine::send_slot_slow() noexcept {
  static_assert(std::is_standard_layout_v<SendMsg> && offsetof(SendMsg, op) == 0,
                "send_slot() and post_send() cast between a slot and its op");
  // Slots held by sends whose ACK is deferred (Peer::dack) are freed before a post is refused.
  if (send_pool_.in_use() >= cfg_.tx_size && dacks_pending_) apply_deferred_acks();
  if (!cfg_.reliable || send_pool_.in_use() >= cfg_.tx_size) return nullptr;
  SendMsg* m = send_pool_.get();
  return m ? &m->op : nullptr;
}

Status Engine::post_send(SendOp* op) noexcept {
  static_assert(std::is_standard_layout_v<SendMsg> && offsetof(SendMsg, op) == 0);
  SendMsg* m = reinterpret_cast<SendMsg*>(op);  // op is the slot's first member
  uint64_t len = 0;
  Status st = check_send(*op, len);
  if (st == Status::Ok && (op->flags & kOpDeliveryComplete) && rma_free_.empty())
    st = Status::NoResource;
  if (st != Status::Ok) {
    send_pool_.put(m);
    return st;
  }
  m->start_app_in_place(len);
  return start_send(m);
}

// Inline in send() and post_send(): a call per post.
[[gnu::always_inline]] inline Status Engine::start_send(SendMsg* m) noexcept {
  const SendOp& op = m->op;
  const uint64_t len = m->len;
  if (op.flags & kOpInject) {
    copy_from_iov(op.iov, op.iov_count, 0, m->inject, len);
    m->op.iov[0] = {m->inject, static_cast<size_t>(len)};
    m->op.iov_count = 1;
  }
  Peer& p = P(op.peer);
  if (op.flags & kOpDeliveryComplete) {  // completes on the target's delivery answer (rma.cpp)
    RmaOp slot_op;
    slot_op.peer = op.peer;
    slot_op.context = op.context;
    slot_op.flags = op.flags;
    m->origin = SendMsg::Origin::Rma;
    m->rma_slot = open_slot(slot_op, len, true);
  }
  // Zero copy: segments are attached from the application's memory (pinned until the message
  // is acknowledged and the I/O layer has let go of it); injects are already copied.
  if (!(op.flags & kOpInject) && len >= zc_min_ && !p.dead) m->pin = io_.pin_open();
  if (p.dead) {  // fail fast: the completion reports the failure (FI_ETIMEDOUT)
    complete_send(m, Status::TimedOut);
    return Status::Ok;
  }
  const uint32_t flags = op.flags;  // m may complete (and be reused) inside enqueue
  flush_after_post(flags, enqueue(p, m));
  if (p.dack.valid) {  // the reply is out: now the request's ACK
    apply_deferred_ack(p);
    // A window, congestion window or credits that only the stale state closed: what waits
    // leaves now, not at the next progress round.
    if (p.sq_next) {
      pump(p, now_);
      if (!(flags & kOpMore)) flush();
    }
  }
  return Status::Ok;
}

bool Engine::queue_msg(Peer& p, SendMsg* m) noexcept { return enqueue(p, m); }

[[gnu::always_inline]] inline bool Engine::enqueue(Peer& p, SendMsg* m) noexcept {
  // The clock is read when the peer was idle: a new wait starts now, and this post's packet
  // may leave at once (the first post since a progress round to an idle peer flushes eagerly,
  // stamped by this reading). A post that only queues behind others uses the latest reading:
  // its packet is stamped when it leaves, and the timers it starts then (flush,
  // restart_timers).
  // A deferred ACK (Peer::dack) acknowledges everything sent to p: idle as once it is applied.
  const bool idle = !p.sq_head || p.dack.valid;
  const uint64_t now = idle ? advance_now(clock_.now_ns()) : now_;
  scan_due_ = true;  // p has a send queued: progress's peer walk looks at it
  if (idle) p.heard_ns = std::max(p.heard_ns, now);  // a new wait starts now
  m->next = nullptr;
  if (p.sq_tail) p.sq_tail->next = m; else p.sq_head = m;
  p.sq_tail = m;
  ++p.queued_msgs;
  if (!p.sq_next) p.sq_next = m;
  // The common case of a stream of small sends: m alone waits and joins p's packet still in
  // the queue. pump() would do the same after its window checks, which a message that takes no
  // PSN and no window slot does not need.
  const bool alone = p.sq_next == m;
  if (alone && bundle_into_tail(p, *m, /*post=*/true)) {
    if (!p.loss_deadline_ns) arm_probe(p);
    return idle;
  }
  // An application's send of 2..kTxBurst segments to an idle peer sends its first one alone,
  // so the receiver works on it while the rest are built (4 KiB: -10%, performance.md item
  // 66). Not an answer (queued inside progress(), whose one flush sends it) nor an RMA post
  // (its op.flags no longer hold FI_MORE).
  const bool lead = m->len > seg_bytes_ && idle && tx_eager_ && !more_batch_ &&
                    !(m->op.flags & kOpMore) && m->origin == SendMsg::Origin::App;
  pump(p, now, alone ? m : nullptr, lead);
  return idle;
}

uint32_t Engine::seg_cap(const SendMsg& m) const noexcept {
  return wire::is_rma(m.type) ? seg_bytes_ - uint32_t(wire::kRmaExtBytes) : seg_bytes_;
}

// The send ring starts at window_pkts slots; a peer whose send window spans more (the
// receiver's credits allow it, a hole is being repaired) gets reorder_window_pkts once. Slots
// keep their PSNs; a queued segment's restamp pointer follows its slot. False when the ring is
// at its largest or memory is short (the sender waits for ACKs, as before).
bool Engine::grow_send_ring(Peer& p) noexcept {
  const uint32_t old_slots = p.send_ring_slots(), slots = cfg_.reorder_window_pkts;
  if (old_slots >= slots) return false;
  std::unique_ptr<TxSlot[]> ring(new (std::nothrow) TxSlot[slots]);
  if (!ring || !p.sack_bits.grow(slots, p.snd_una)) return false;
  TxSlot* const old = p.txw.get();
  const auto in_old = [&](const TxSlot* t) {
    const auto a = reinterpret_cast<uintptr_t>(t), b = reinterpret_cast<uintptr_t>(old);
    return a >= b && a < b + old_slots * sizeof(TxSlot);
  };
  for (Seq32 s = p.snd_una; s < p.snd_nxt; ++s) ring[s.raw() & (slots - 1)] = p.slot(s);
  for (uint16_t i = 0; i < txq_len_; ++i) {
    TxSlot* t = txq_slot_[i];
    if (!t || !in_old(t)) continue;
    const Seq32 psn = p.snd_una + ((uint32_t(t - old) - p.snd_una.raw()) & p.txw_mask);
    txq_slot_[i] = &ring[psn.raw() & (slots - 1)];
  }
  p.txw = std::move(ring);
  p.txw_mask = slots - 1;
  return true;
}

void Engine::pump(Peer& p, uint64_t now, const SendMsg* bundle_tried, bool lead) noexcept {
  // What may be in flight is the pipe (not SACKed: RFC 6675), so packets that arrived above a
  // hole make room for new ones while the hole is repaired; the span of the send window is
  // bounded by the receiver's credits and by the send ring.
  uint32_t limit = cfg_.window_pkts;
  if (cfg_.cc) limit = std::min(limit, cc_window(p.cc, cc_));
  Block stop = Block::None;
  while (p.sq_next) {
    // A small whole message rides in the packet of the one before it, if that one has not
    // left yet: no PSN, no window, no header of its own.
    if (p.sq_next->next_offset == 0 && p.sq_next != bundle_tried && try_bundle(p, *p.sq_next))
      continue;
    if (p.pipe() >= limit) {
      stop = limit < cfg_.window_pkts ? Block::Cwnd : Block::Window;
      break;
    }
    if (!flow_window_open(p.flow, p.snd_nxt)) {  // the receiver's window is closed
      if (!p.flow.persist_probe) {
        if (!p.flow.credit_stalled) ++stats_.credit_stalls;
        p.flow.credit_stalled = true;
        stop = Block::Credits;
        break;
      }
      ++stats_.credit_probes;
    }
    if (p.inflight() >= p.send_ring_slots() && !grow_send_ring(p)) {
      stop = Block::Ring;
      break;
    }
    SendMsg& m = *p.sq_next;
    uint32_t off = m.next_offset;
    uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(seg_cap(m), m.len - off));
    Seq32 psn = p.snd_nxt;
    if (!emit_segment(p, m, off, len, psn, false)) {
      stop = Block::Tx;
      break;
    }
    if (off == 0 && m.origin == SendMsg::Origin::Rma && rma_slots_[m.rma_slot].message) {
      rma_slots_[m.rma_slot].first_psn = psn.raw();  // the delivery answer names it so
      rma_slots_[m.rma_slot].psn_known = true;
    }
    p.flow.persist_probe = false;
    TxSlot& s = p.slot(psn);
    s.msg = &m;
    s.offset = off;
    s.len = len;
    s.sent_ns = now;
    if (txq_len_) txq_slot_[txq_len_ - 1] = &s;  // still queued: restamped when it leaves
    s.tx_count = 1;
    s.n_msgs = 1;
    ++p.snd_nxt;
    m.next_offset = off + len;
    if (m.next_offset == m.len) {
      m.segmented = true;
      m.last_psn = psn;
      p.sq_next = m.next;
    }
    if (!p.rto_deadline_ns) p.rto_deadline_ns = now + p.rtt.rto_ns;
    if (lead) [[unlikely]] {  // (not past a burst: the post would outlast the first's probe)
      lead = false;
      if (off == 0 && !m.segmented && m.len <= uint64_t(kTxBurst) * seg_cap(m)) flush();
    }
  }
  if (stop != Block(p.blocked)) [[unlikely]] note_blocked(p, stop, now);
  // Window closed with nothing in flight: the RTO timer doubles as the persist timer (nothing
  // leaves to restart it: a clock reading of its own).
  if (p.sq_next && !p.inflight() && !p.rto_deadline_ns)
    p.rto_deadline_ns = advance_now(clock_.now_ns()) + p.rtt.rto_ns;
  // New data into an idle window: nothing is in flight to bring an ACK that would run loss
  // detection, so the tail probe is armed here (RFC 8985 7.2), not left to the RTO. A lost
  // single-packet message (an inject, a 0-byte reply) otherwise waited rto_min.
  arm_probe(p);
}

void Engine::note_blocked(Peer& p, Block b, uint64_t now) noexcept {
  if (p.blocked && now > p.blocked_since_ns)
    p.blocked_ns[p.blocked - 1] += now - p.blocked_since_ns;
  p.blocked = static_cast<uint8_t>(b);
  p.blocked_since_ns = now;
}

bool Engine::bundleable(const SendMsg& m) const noexcept {
  return m.type == wire::Type::Data && m.origin == SendMsg::Origin::App &&
         !(m.op.flags & kOpDeliveryComplete) && m.len <= cfg_.bundle_max_bytes &&
         !(m.pin != kNoPin && m.len >= zc_min_);  // never attached (zero copy)
}

// Inline in try_bundle (each bundled message) and the retransmit's re-bundling. Returns the
// bytes appended (entry and message), 0 if m does not fit.
[[gnu::always_inline]] inline uint32_t Engine::append_message(PacketBuf& pkt,
                                                              const SendMsg& m) noexcept {
  const uint16_t f = ((m.op.flags & kOpTagged) ? wire::kTagged : 0) |
                     ((m.op.flags & kOpCqData) ? wire::kCqData : 0);
  const uint32_t need = wire::bundle_entry_bytes(f) + static_cast<uint32_t>(m.len);
  if (pkt.ext_len || pkt.len + need > wire::kHeaderBytes + seg_bytes_ || pkt.len + need > pkt.cap)
    return 0;
  uint8_t* at = pkt.data + pkt.len;
  at += wire::encode_bundle_entry(at, f, static_cast<uint16_t>(m.len), m.op.tag, m.op.cq_data);
  copy_from_iov(m.op.iov, m.op.iov_count, 0, at, m.len);
  pkt.len += need;
  // The header's BUNDLE flag is set by the caller when a second message joins (mark_bundle),
  // its payload_len by flush(): not rewritten for every message.
  return need;
}

void Engine::mark_bundle(PacketBuf& pkt) noexcept {
  util::store_be16(pkt.data + 4, util::load_be16(pkt.data + 4) | wire::kBundle);  // flags
}

// Inline in enqueue (a stream of small posts: each one's path); pump's loop calls it through
// try_bundle.
[[gnu::always_inline]] inline bool Engine::bundle_into_tail(Peer& p, SendMsg& m,
                                                           bool post) noexcept {
  if (!cfg_.bundle_max_bytes || !txq_len_ || txq_sealed_ >= txq_len_ || p.snd_nxt == p.snd_una ||
      !bundleable(m))
    return false;
  // p's newest packet, still the tail of the queue (txq_slot_ points at its send slot only
  // while it waits there), holding whole messages only: m is the one after them in the FIFO.
  TxSlot& t = p.slot(p.snd_nxt - 1);
  if (txq_slot_[txq_len_ - 1] != &t || !t.msg) return false;
  // A packet that already holds a bundle passed these when its second message joined.
  if (t.n_msgs == 1 && (t.offset || t.len != t.msg->len || !bundleable(*t.msg))) return false;
  const uint32_t added =  // entry and message, as emit_segment counts them
      t.n_msgs < wire::kMaxBundleMsgs ? append_message(txq_[txq_len_ - 1], m) : 0;
  if (!added) {
    // The tail is full: it goes now (the receiver starts on it while the next one fills)
    // rather than waiting for the next progress() or a burst of kTxBurst packets.
    flush();
    return false;
  }
  if (t.n_msgs == 1) mark_bundle(txq_[txq_len_ - 1]);
  ++t.n_msgs;
  m.next_offset = static_cast<uint32_t>(m.len);
  m.segmented = true;
  m.last_psn = p.snd_nxt - 1;
  p.sq_next = m.next;
  ++stats_.bundled_msgs;
  stats_.tx_bytes += added;
  p.tx_bytes += added;
  // An application's post: the tail now holds as many messages as are ahead of it, sent and
  // not yet completed (queued_msgs counts p's messages not yet completed, these included; in
  // a post nothing waits behind the tail): it leaves now, and the receiver works on it while
  // the application posts the rest. A window of small sends no longer fits one packet that
  // waits for the next progress round while the sender then waits for its ACK (without this
  // the small-message rate moved 20-30% from build to build; performance.md item 72). From an
  // idle peer, packets so hold 1, 2, 3, 6, 12, ... messages, up to half of what the
  // application keeps in flight; a packet behind more than that fills as before. Not in an
  // FI_MORE batch: its last post flushes it. Not in pump (progress, or a window that opened):
  // the round's own flush follows, and messages waiting behind a closed window would lose
  // their place in the one packet that may leave. The packet may ask for its ACK
  // (request_ack): the application may post nothing more.
  if (post && 2u * t.n_msgs >= p.queued_msgs && !more_batch_ && !(m.op.flags & kOpMore))
    flush();
  return true;
}

bool Engine::try_bundle(Peer& p, SendMsg& m) noexcept {
  return bundle_into_tail(p, m, /*post=*/false);
}

// The header (and RMA extension) of segment [off, off + len) of m, with the ACK it piggybacks.
void Engine::encode_segment_header(Peer& p, const SendMsg& m, uint32_t off, uint32_t len, Seq32 psn,
                                   bool retransmit, uint8_t* out) noexcept {
  const uint32_t ext = wire::is_rma(m.type) ? uint32_t(wire::kRmaExtBytes) : 0;
  const uint32_t f = m.op.flags;
  const uint16_t flags =
      wire::kAckValid | (off == 0 ? wire::kFirst : 0) |
      (uint64_t(off) + len == m.len ? wire::kLast : 0) | ((f & kOpTagged) ? wire::kTagged : 0) |
      ((f & kOpCqData) ? wire::kCqData : 0) | (retransmit ? wire::kRetransmit : 0) |
      ((f & kOpDeliveryComplete) ? wire::kDeliveryReq : 0);
  uint16_t sack_over = 0;  // 1: the SACK outgrows the header (a standalone ACK stays pending)
  const wire::AckFields ack = take_ack(p, nullptr, sack_over);
  wire::encode_fields(out, m.type, flags, static_cast<uint16_t>(ext + len), cfg_.ep_id,
                      p.addr.ep_id, cfg_.epoch, p.remote_epoch, psn.raw(), ack,
                      (f & kOpDeliveryComplete) ? static_cast<uint16_t>(m.rma_slot) : 0,
                      static_cast<uint32_t>(m.len), off, m.op.tag, m.op.cq_data, 0);
  if (ext) wire::encode_rma(m.ext, out + wire::kHeaderBytes);
}

bool Engine::emit_segment(Peer& p, SendMsg& m, uint32_t off, uint32_t len, Seq32 psn,
                          bool retransmit, uint32_t n_msgs) noexcept {
  // The next segment of a message whose previous segment is the newest packet in the tx
  // queue, not sealed yet (pump's next step: nothing received, flushed or sealed in between):
  // its header is that one's but for four fields, the piggybacked ACK included (nothing that
  // take_ack reads has changed since).
  const PacketBuf* prev = nullptr;
  if (off && !retransmit && txq_len_ > txq_sealed_ && txq_slot_[txq_len_ - 1] == &p.slot(psn - 1)) {
    const TxSlot& t = p.slot(psn - 1);
    if (t.msg == &m && t.offset + t.len == off) prev = &txq_[txq_len_ - 1];
  }
  // Built in place in the tx queue (next_tx): no packet buffer is written aside and copied in.
  PacketBuf* const slot = next_tx();
  if (!slot) return false;
  PacketBuf& pkt = *slot;
  const uint32_t ext = wire::is_rma(m.type) ? uint32_t(wire::kRmaExtBytes) : 0;
  if (prev && prev + 1 == slot) {  // (a flush in next_tx would have moved the queue)
    const bool last = uint64_t(off) + len == m.len;
    const uint16_t kept = util::load_be16(prev->data + 4) & ~(wire::kFirst | wire::kLast);
    const uint16_t flags = static_cast<uint16_t>(kept | (last ? wire::kLast : 0));
    wire::encode_continuation(prev->data, pkt.data, ext, flags, static_cast<uint16_t>(ext + len),
                              psn.raw(), off);
  } else {
    encode_segment_header(p, m, off, len, psn, retransmit, pkt.data);
  }
  pkt.len = wire::kHeaderBytes + ext;
  const uint8_t* src = m.pin != kNoPin && len >= zc_min_
                           ? contiguous_in_iov(m.op.iov, m.op.iov_count, off, len)
                           : nullptr;
  if (src && io_.attach(pkt, src, len, m.pin)) {
    ++stats_.zc_tx_pkts;
  } else {  // copy (also when the I/O layer is out of references)
    copy_from_iov(m.op.iov, m.op.iov_count, off, pkt.data + wire::kHeaderBytes + ext, len);
    pkt.len = static_cast<uint32_t>(wire::kHeaderBytes + ext + len);
  }
  pkt.route = &p.route;
  // A bundle being resent: the same messages as the first time (they stay in the FIFO until
  // the packet is acknowledged, and fitted then).
  const SendMsg* b = &m;
  for (uint32_t i = 1; i < n_msgs && (b = b->next); ++i) {
    if (!append_message(pkt, *b)) break;
    if (i == 1) mark_bundle(pkt);
  }
  // tx_bytes: the payload after the header (RMA extension and bundle entries included), as the
  // receiver's rx_bytes counts it.
  const uint32_t payload = pkt.len - uint32_t(wire::kHeaderBytes);
  queue_tx();
  stats_.tx_bytes += payload;
  ++p.tx_pkts;
  p.tx_bytes += payload;
  if (retransmit) {
    ++stats_.retx_pkts;
    ++p.retx_pkts;
  }
  return true;
}

}  // namespace pollfab::transport
