// Engine transmit: packet buffers (allocated in bursts and cached), the tx queue flushed as one
// burst per progress, sealing (CRC-32C, as packets leave), and send completions, which wait until the I/O layer
// holds no reference to zero-copy memory (the pinned list).
// Batching across posts: the first post after a progress() goes out at once (a ping-pong's
// one message pays no wait); the posts after it, until the next progress(), queue and leave
// as one tx burst at that progress() or when kTxBurst packets are queued, or as soon as a
// bundle holds as many messages as are ahead of it (segmentation.cpp, bundle_into_tail). One
// tx_burst per message cost a 64-byte stream half its rate over memif (docs/performance.md).
#include "transport/engine_state.hpp"

namespace pollfab::transport {

void Engine::seal(PacketBuf& pkt) noexcept {
  if (cfg_.checksum) wire::seal(pkt.data, pkt.len - pkt.ext_len, pkt.ext, pkt.ext_len);
}

void Engine::complete_send(SendMsg* m, Status st) noexcept {
  if (m->pin != kNoPin) {
    if (io_.pinned(m->pin)) {  // a packet still references the application's memory
      m->status = st;
      m->next = nullptr;
      if (pinned_tail_) pinned_tail_->next = m; else pinned_head_ = m;
      pinned_tail_ = m;
      return;
    }
    io_.pin_close(m->pin);
    m->pin = kNoPin;
  }
  finish_send(m, st);
}

void Engine::complete_acked(Peer& p) noexcept {
  // An application's send with no memory pinned completes in a burst with the others of this
  // ACK (one sink call); the rest, in order, as before (a pending burst goes first).
  SendDone done[kSendDoneBurst];
  uint32_t n_done = 0;
  while (p.sq_head && p.sq_head->segmented && p.sq_head->last_psn < p.snd_una) {
    SendMsg* m = p.sq_head;
    p.sq_head = m->next;
    if (!p.sq_head) p.sq_tail = nullptr;
    --p.queued_msgs;
    if (m->origin == SendMsg::Origin::App && m->pin == kNoPin) {
      done[n_done++] = {m->op.context, m->len,
                        kCompSend | ((m->op.flags & kOpTagged) ? kCompTagged : 0u),
                        (m->op.flags & kOpCompletion) != 0};
      send_pool_.put(m);
      if (n_done == kSendDoneBurst) {
        sink_.on_sends_completed(done, n_done);
        n_done = 0;
      }
      continue;
    }
    if (n_done) sink_.on_sends_completed(done, n_done);
    n_done = 0;
    complete_send(m, Status::Ok);
  }
  if (n_done) sink_.on_sends_completed(done, n_done);
}

void Engine::release_pinned() noexcept {
  SendMsg** link = &pinned_head_;
  SendMsg* prev = nullptr;
  while (SendMsg* m = *link) {
    if (io_.pinned(m->pin)) {
      prev = m;
      link = &m->next;
      continue;
    }
    *link = m->next;
    if (pinned_tail_ == m) pinned_tail_ = prev;
    io_.pin_close(m->pin);
    m->pin = kNoPin;
    finish_send(m, m->status);
  }
}

void Engine::finish_send(SendMsg* m, Status st) noexcept {
  if (m->origin == SendMsg::Origin::Answer) {  // the engine's own: no completion
    send_pool_.put(m);
    return;
  }
  if (m->origin == SendMsg::Origin::Rma) {
    rma_request_done(m, st);
    return;
  }
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

void Engine::rx_free(PacketBuf& pkt) noexcept {
  copy_pkt(rx_free_[rx_free_len_++], pkt);  // field by field: pkt may be freshly written
  if (rx_free_len_ == kRxFree) flush_rx_free();
}

void Engine::flush_rx_free() noexcept {
  if (rx_free_len_) io_.free(rx_free_, rx_free_len_);
  rx_free_len_ = 0;
}

bool Engine::alloc_pkt(PacketBuf& out) noexcept {
  if (alloc_cache_len_ == 0) {
    alloc_cache_len_ = io_.alloc(alloc_cache_, 32);
    if (alloc_cache_len_ == 0) return false;
  }
  out = alloc_cache_[--alloc_cache_len_];
  return true;
}

PacketBuf* Engine::next_tx() noexcept {
  if (txq_len_ == kTxQueue) {
    flush();
    if (txq_len_ == kTxQueue) return nullptr;
  }
  PacketBuf& out = txq_[txq_len_];
  return alloc_pkt(out) ? &out : nullptr;
}

void Engine::queue_tx() noexcept { txq_slot_[txq_len_++] = nullptr; }

bool Engine::enqueue_tx(PacketBuf& pkt) noexcept {
  if (txq_len_ == kTxQueue) {
    flush();
    if (txq_len_ == kTxQueue) return false;
  }
  txq_slot_[txq_len_] = nullptr;
  copy_pkt(txq_[txq_len_++], pkt);
  return true;
}

void Engine::flush_after_post_slow(uint32_t op_flags, bool idle) noexcept {
  if (op_flags & kOpMore) {
    more_batch_ = true;
    return;
  }
  const bool batch_end = more_batch_;  // the last post of an FI_MORE batch
  more_batch_ = false;
  if (tx_eager_ && (idle || batch_end)) {
    // A post to an idle peer read the clock (enqueue): its packet is stamped by that
    // reading. A batch's posts behind sends in flight read none, so the batch is stamped now.
    flush(/*restamp=*/batch_end);
    tx_eager_ = false;  // until the next progress(), posts batch up
    return;
  }
  // Behind sends in flight the post waits, and tx_eager_ stays: a later post to an idle peer
  // still leaves at once.
  if (txq_len_ >= kTxBurst) flush();
}

// A sender holding many sends' completions and nothing more to send asks for its ACK at once
// (ACK_REQ on its newest data packet in the burst) rather than after the receiver's ACK delay:
// a window of small messages fits a few packets, fewer than ack_coalesce_pkts, and each window
// would otherwise wait ack_delay_ns for its completions. A request-response peer (a message or
// two in flight) keeps the piggyback on its reply, unless its ACKs show it sends none
// (Peer::ack_waited): then one message waiting is enough to ask. Every peer of the burst is
// looked at (an application waiting on sends to several peers), not only the last packet's.
// Inline in flush(), for each packet leaving for the first time (unsealed).
[[gnu::always_inline]] inline void Engine::request_ack(PacketBuf& pkt, const TxSlot* t) noexcept {
  if (!t || !t->msg) return;  // not a fresh data packet (an ACK, a resend)
  const Peer& p = P(t->msg->op.peer);
  // Only p's newest packet asks, and only when nothing is left behind: the sender now waits,
  // or (a bundle that left in a post, bundle_into_tail) may, if its application posts nothing
  // more. Or when what is left behind waits for the window (window_pkts or the congestion
  // window, pump's last stop): the receiver's ACK every ack_coalesce_pkts would not come
  // before its ACK delay if the window is smaller (a congestion window after a loss).
  if (t != &p.slot(p.snd_nxt - 1)) return;
  if (p.sq_next ? p.blocked != uint8_t(Block::Window) && p.blocked != uint8_t(Block::Cwnd)
                : p.queued_msgs < (p.ack_waited ? 1u : ack_req_msgs_))
    return;
  // QUICK when nothing is left behind and fewer than 2 * ack_coalesce_msgs messages wait: the
  // receiver's own ACKs (every ack_coalesce_msgs) would come less than twice a window, so it
  // answers at the end of the round that brought the request rather than at its first round
  // without more data, which comes only after its application re-posted and polled again
  // (64-byte windows over memif, in-run pairs: +19% at 4 in flight, +14% at 16, +6% at 24;
  // docs/performance.md item 77). A larger window is paced by the receiver's own ACKs, and its
  // requests stay lazy: still made, so that its last packets do not wait out the ACK delay (a
  // window of 33 did, unasked), and not each answered at once (a stream of 4 KiB sends asks
  // with every post: -3 to -7% with QUICK).
  const uint16_t quick = !p.sq_next && p.queued_msgs < ack_req_max_msgs_ ? wire::kAckQuick : 0;
  util::store_be16(pkt.data + 4, util::load_be16(pkt.data + 4) | wire::kAckReq | quick);
}

// The oldest packet in flight leaves for the first time only now (it waited in the queue): the
// RTO and the probe timer, armed when it was queued, time it from now (RFC 6298 5.1: the
// timer starts when the packet is sent).
void Engine::restart_timers(Peer& p, uint64_t now) noexcept {
  p.rto_deadline_ns = now + p.rtt.rto_ns;
  p.loss_deadline_ns = 0;
  arm_probe(p);
}

void Engine::flush(bool restamp) noexcept {
  if (!txq_len_) return;
  // Finished here, as they leave: a queued packet may still take more messages (bundles), so
  // its ACK request and payload_len are written now, and then the checksum over them. A packet
  // reaches the link only through here.
  for (uint16_t i = txq_sealed_; i < txq_len_; ++i) {
    PacketBuf& pkt = txq_[i];
    request_ack(pkt, txq_slot_[i]);
    util::store_be16(pkt.data + 6, static_cast<uint16_t>(pkt.len - wire::kHeaderBytes));
    if (cfg_.checksum) seal(pkt);
  }
  uint16_t n = io_.tx_burst(txq_, txq_len_);
  stats_.tx_pkts += n;
  // Send times of the new packets leaving: the clock's, read once (restamp); or, in a post's
  // eager flush, the post's own reading, raised to the latest one (now_) for packets stamped
  // before an earlier flush of the same post (its queue filled) stamped the packets ahead of
  // them later. Send times must not fall as PSNs rise: RACK takes a packet sent before a
  // delivered one for overtaken. A 1 MiB send's last packets kept the post's reading while the
  // ones before them had the overflow flush's, and a lossless 1 MiB stream over memif resent
  // 0.3-0.6% of its packets, every one a duplicate at the receiver.
  uint64_t now = restamp ? 0 : now_;
  for (uint16_t i = 0; i < n; ++i) {
    TxSlot* t = txq_slot_[i];
    if (!t || (!restamp && t->sent_ns >= now)) continue;
    if (!now) now = advance_now(clock_.now_ns());
    t->sent_ns = now;
    if (t->tx_count != 1 || !t->msg) continue;
    Peer& p = P(t->msg->op.peer);
    if (t == &p.slot(p.snd_una)) restart_timers(p, now);
  }
  if (n < txq_len_) {
    for (uint16_t i = n; i < txq_len_; ++i) {
      txq_[i - n] = txq_[i];
      txq_slot_[i - n] = txq_slot_[i];
    }
  }
  txq_len_ = static_cast<uint16_t>(txq_len_ - n);
  txq_sealed_ = txq_len_;
}

}  // namespace pollfab::transport
