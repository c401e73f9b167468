// Engine reliability: the receive window (PSN order, holding out-of-order packets, duplicate
// suppression), ACKs (cumulative + SACK, coalesced, delayed, piggybacked), and on the send side
// ACK processing (RTT samples: rtt.hpp; congestion: congestion.hpp; credits: flow_control.hpp)
// and loss recovery: SACK-driven fast retransmit (RFC 6675), RACK with a tail loss probe
// (RFC 8985) and the retransmission timeout (RFC 6298). docs/transport.md has the why.
#include "transport/engine_state.hpp"

namespace pollfab::transport {

namespace {
// A hole is retransmitted on SACK evidence when at least this many packets above it arrived
// (the classic duplicate-ACK threshold, tolerating mild reordering).
constexpr uint32_t kDupThresh = 3;
}  // namespace

void Engine::on_data(Peer& p, PeerId pid, PacketBuf& pkt, const wire::Header& h) noexcept {
  Seq32 psn(h.psn);
  int32_t d = psn - p.rcv_nxt;
  p.data_rx_ns = last_rx_ns_;
  p.rx_this_round = true;
  if (d < 0) {  // duplicate of something delivered: tell the sender again
    ++stats_.dup_pkts;
    ++p.dup_pkts;
    io_.free(&pkt, 1);
    p.ack_now = true;
    if (!p.ack_pending) note_ack_pending(p);
    return;
  }
  if (static_cast<uint32_t>(d) >= p.held.slots() &&
      (static_cast<uint32_t>(d) >= p.rcv_window || !p.held.grow(p.rcv_window, p.rcv_nxt))) {
    // Past the window; or the ring could not grow (memory short): from now on this peer's
    // window is the ring we have, and the credits say so.
    if (static_cast<uint32_t>(d) < p.rcv_window) p.rcv_window = p.held.slots();
    ++stats_.drop_window;
    io_.free(&pkt, 1);
    return;
  }
  if (d > 0) {  // ahead of a gap: hold it (no copy) until the gap fills
    if (p.held.empty()) {  // a new hole (PeerStats holes, hole_ns)
      close_hole(p);  // (none is open: every path that empties the buffer closes it)
      ++p.holes;
      p.hole_since_ns = now_ ? now_ : 1;  // the packet's arrival (on_packet)
    }
    if (p.held.has(psn)) {
      ++stats_.dup_pkts;
      ++p.dup_pkts;
      io_.free(&pkt, 1);
      p.ack_now = true;
    } else {
      if (place_early(p, h, pkt.data + wire::kHeaderBytes) ||
          place_next(p, pid, h, pkt.data + wire::kHeaderBytes)) {
        p.held.put_placed(psn, {h.offset, h.payload_len, (h.flags & wire::kLast) != 0});
        rx_free(pkt);  // with the burst's others, in one call (not one free per packet)
        ++stats_.ooo_placed;
      } else {
        p.held.put(psn, pkt);
      }
      ++stats_.ooo_pkts;
      // SACK news: at once for a new hole (the packet before this one is missing); packets
      // that extend the run above it count toward the ACK every ack_coalesce_pkts as in order.
      // (Until the twenty-third session they had one every ack_coalesce_pkts / 4: at 1% loss,
      // with a hole open most of the time, those ACKs cost the receiver, which binds a memif
      // stream, ~2% of its goodput; docs/performance.md, item 76.)
      if (d == 1 || !p.held.has(psn - 1)) p.ack_now = true;
    }
    note_ack_pending(p);
    return;
  }
  if (p.held.has(psn)) {  // an earlier copy was held and could not be delivered yet: use this one
    PacketBuf stale = p.held.take(psn);
    if (stale.data) io_.free(&stale, 1);
    close_hole(p);  // it may have been the only one held
  }
  if (!deliver(p, pid, h, pkt.data + wire::kHeaderBytes)) {
    // No room to buffer it: not acknowledged (the sender resends later), but answered at once
    // with our credits, which close the sender's window until we have room again.
    ++stats_.drop_unexpected_full;
    io_.free(&pkt, 1);
    p.ack_now = true;
    if (!p.ack_pending) note_ack_pending(p);
    return;
  }
  rx_free(pkt);
  ++p.rcv_nxt;
  note_ack_pending(p);
  if (!p.held.empty()) drain_held(p, pid);
  if (h.flags & wire::kLast) ++p.ack_msgs;  // a message is in (deliver_bundle adds the rest)
  // ack_coalesce_pkts or ack_coalesce_msgs reached in the middle of a receive burst (a burst of
  // bundles can hold a sender's whole window): the ACK leaves now, not after the rest of the
  // burst.
  if (ack_due(p) && p.held.empty()) {
    send_ack(p);
    flush();
  }
}

void Engine::drain_held(Peer& p, PeerId pid) noexcept {
  bool any = false;
  while (p.held.has(p.rcv_nxt)) {
    if (p.held.placed(p.rcv_nxt)) {  // already in the receive buffer: count it in order
      if (uint32_t n = placed_run(p, pid)) {  // a run of the current message's: counted at once
        p.held.take_run(p.rcv_nxt, n);
        p.rcv_nxt += n;
        note_ack_pending(p, n);
        any = true;
        continue;
      }
      deliver_placed(p, pid, p.held.placed_at(p.rcv_nxt));
      p.held.take(p.rcv_nxt);
      ++p.rcv_nxt;
      note_ack_pending(p);
      any = true;
      continue;
    }
    const PacketBuf& slot = p.held.at(p.rcv_nxt);
    wire::Header h;
    wire::decode(slot.data, slot.len, h);  // validated on arrival
    if (!deliver(p, pid, h, slot.data + wire::kHeaderBytes)) break;
    PacketBuf done = p.held.take(p.rcv_nxt);
    rx_free(done);
    ++p.rcv_nxt;
    note_ack_pending(p);
    any = true;
  }
  if (any) p.ack_now = true;
  close_hole(p);
}

void Engine::close_hole(Peer& p) noexcept {
  if (!p.hole_since_ns || !p.held.empty()) return;
  p.hole_ns += now_ > p.hole_since_ns ? now_ - p.hole_since_ns : 0;
  p.hole_since_ns = 0;
}

void Engine::note_ack_pending(Peer& p, uint32_t n) noexcept {
  if (p.ack_pending == 0) p.ack_deadline_ns = now_ + cfg_.ack_delay_ns;
  p.ack_pending += n;
}

// A message landing in a posted receive (this one, or the next if receives are waiting) costs
// no buffer: the whole reorder window is open. Otherwise the window shrinks with what is left of the
// unexpected-message budget, so a sender cannot push more than we could buffer (the rest would
// be dropped and resent).
uint16_t Engine::credits_for(const Peer& p) const noexcept {
  return receiver_credits(p.cur_recv || matcher_->has_posted(), matcher_->unexpected_free_bytes(),
                          seg_bytes_, p.rcv_window);
}

// SACK of the held packets: bit i for PSN rcv_nxt + 1 + i, i < 64 in the header's sack, the
// rest (up to the reorder window) in ext, little-endian bytes (docs/wire-format.md). Returns
// ext's length; without ext (a piggybacked ACK), 1 if the SACK does not fit the header.
uint16_t Engine::build_sack(Peer& p, uint64_t& sack, uint8_t* ext) noexcept {
  sack = 0;
  if (p.held.empty()) return 0;
  const uint32_t span = p.held.slots() - 1;  // PSNs rcv_nxt + 1 .. rcv_nxt + span
  uint16_t ext_len = 0;
  uint32_t found = 0;
  for (uint32_t i = 0; i < span && found < p.held.count(); i += 64) {
    uint64_t w = p.held.bits64(p.rcv_nxt + 1 + i);
    if (span - i < 64) w &= (1ull << (span - i)) - 1;
    found += static_cast<uint32_t>(__builtin_popcountll(w));
    if (i == 0) {
      sack = w;
      continue;
    }
    if (!w) continue;
    if (!ext) return 1;  // more SACK information than the header carries
    const uint32_t at = (i - 64) / 8;
    if (at > ext_len) std::memset(ext + ext_len, 0, at - ext_len);
    for (uint32_t b = 0; b < 8; ++b) ext[at + b] = static_cast<uint8_t>(w >> (8 * b));
    ext_len = static_cast<uint16_t>(at + (63 - __builtin_clzll(w)) / 8 + 1);
  }
  return ext_len;
}

void Engine::send_ack(Peer& p) noexcept {
  PacketBuf pkt;
  if (!alloc_pkt(pkt)) return;  // retried at the next progress (ack stays pending)
  const uint32_t pending = p.ack_pending, msgs = p.ack_msgs;
  const bool now = p.ack_now;
  // A liveness probe asks the peer to answer at once.
  const uint16_t flags = wire::kAckValid | (p.probe_ns ? wire::kAckReq : 0);
  uint16_t ext_len = 0;  // the SACK beyond the header's 64 bits: the payload
  const wire::AckFields a = take_ack(p, pkt.data + wire::kHeaderBytes, ext_len);
  wire::encode_fields(pkt.data, wire::Type::Ack, flags, ext_len, cfg_.ep_id, p.addr.ep_id,
                      cfg_.epoch, p.remote_epoch, 0, a, 0, 0, 0, 0, 0, 0);
  pkt.len = static_cast<uint32_t>(wire::kHeaderBytes + ext_len);
  pkt.route = &p.route;
  if (!enqueue_tx(pkt)) {
    io_.free(&pkt, 1);
    p.ack_pending = pending;
    p.ack_msgs = msgs;
    p.ack_now = now;
    return;
  }
  ++stats_.acks_tx;
}

void Engine::on_ack(Peer& p, const wire::Header& h, const uint8_t* ext, uint32_t ext_len,
                    bool late) noexcept {
  Seq32 ack(h.ack_psn);
  if (ack > p.snd_nxt || ack < p.snd_una) return;  // stale or bogus
  const uint64_t now = last_rx_ns_;  // on_ack runs inside on_packet: the packet's rx time
  // Flow control: the window edge only moves forward (a shrinking offer is not taken back
  // from packets already sent; RFC 9293 3.8.6).
  flow_on_ack(p.flow, ack, h.credits, p.snd_nxt);
  // Nothing new: the ACK a peer's data piggybacks on every packet of a one-way stream. No slot,
  // sample, window or timer changes (loss detection runs at its own deadline).
  if (ack == p.snd_una && !h.sack && !ext_len) return;
  // SACK scoreboard: mark newly SACKed packets. The newest first transmission among them is an
  // RTT sample (RFC 8985 takes one from every delivered packet): while a hole holds the
  // cumulative ACK, SACKs are the only news of the path's delay, for RACK's timing and for
  // congestion control.
  uint64_t sacked_sent_ns = 0;
  bool sacked_sample = false;
  // RACK.xmit_ts (rack_xmit_ns) moves to a delivered packet's send time, but not to that of a
  // retransmission whose ACK came sooner than min_rtt after it left: that ACK was for the
  // original transmission (RFC 8985 6.2, step 2), and taking the retransmission's send time
  // would make every packet sent before it look overtaken.
  const auto rack_update = [&](const TxSlot& t) {
    if (t.tx_count == 1 || now >= t.sent_ns + p.rtt.min_rtt_ns)
      p.rack_xmit_ns = std::max(p.rack_xmit_ns, t.sent_ns);
  };
  // One word of the ACK's SACK: bit k for PSN from + k. Only news (bits the scoreboard does not
  // have yet) touch the send slots: an ACK repeats every SACKed packet above the hole.
  auto mark_word = [&](Seq32 from, uint64_t w) {
    if (from >= p.snd_nxt) return false;
    const uint32_t room = static_cast<uint32_t>(p.snd_nxt - from);
    if (room < 64) w &= (1ull << room) - 1;
    w &= ~p.sack_bits.bits64(from);
    if (!w) return true;
    for (uint64_t b = w; b; b &= b - 1) {
      const Seq32 s = from + static_cast<uint32_t>(__builtin_ctzll(b));
      TxSlot& t = p.slot(s);
      if (!t.msg) continue;
      p.sack_bits.set(s);
      ++p.sacked;
      rack_update(t);
      if (t.tx_count == 1) {
        sacked_sent_ns = std::max(sacked_sent_ns, t.sent_ns);
        sacked_sample = true;
      }
    }
    const Seq32 high = from + static_cast<uint32_t>(63 - __builtin_clzll(w));
    if (high > p.high_sacked || p.high_sacked < p.snd_una) p.high_sacked = high;
    return true;
  };
  if (mark_word(ack + 1, h.sack)) {
    for (uint32_t q = 0; q * 8 < ext_len; ++q) {  // the extended SACK, 8 bytes a word
      uint64_t w = 0;
      for (uint32_t b = 0; b < 8 && q * 8 + b < ext_len; ++b)
        w |= uint64_t(ext[q * 8 + b]) << (8 * b);
      if (!mark_word(ack + 65 + q * 64, w)) break;
    }
  }

  bool have = false;
  uint64_t sample = 0;
  const uint32_t acked = static_cast<uint32_t>(ack - p.snd_una);
  for (Seq32 s = p.snd_una; s < ack; ++s) {
    TxSlot& t = p.slot(s);
    const bool sacked = p.sack_bits.test(s);
    // Karn: no samples from retransmitted packets; nor from SACKed ones (their ACK came
    // long before this cumulative one, the gap would count recovery time as RTT).
    if (t.tx_count == 1 && !sacked) {
      sample = now - t.sent_ns;
      have = true;
    }
    if (!sacked) {
      rack_update(t);
    } else {
      --p.sacked;
      p.sack_bits.clear(s);
    }
    t.msg = nullptr;
  }
  if (!have && sacked_sample) {
    sample = now - sacked_sent_ns;
    have = true;
  }
  uint64_t delay = sample;
  if (have) {
    delay = rtt_sample(p.rtt, sample, h.ack_delay_ns);
    stats_.srtt_ns = p.rtt.srtt_ns;
  }
  if (acked || have) {
    if (cfg_.cc &&
        cc_on_ack(p.cc, cc_, acked, delay, have, p.rtt.min_rtt_ns, p.rtt.srtt_ns, now))
      ++stats_.cc_decreases;
  }
  if (acked) {
    p.snd_una = ack;
    rtt_on_ack(p.rtt, cfg_.rto_min_ns, cfg_.rto_max_ns);
    complete_acked(p);
    p.rto_deadline_ns = p.inflight() || p.sq_next ? now + p.rtt.rto_ns : 0;
  }
  if (!p.inflight()) {
    p.loss_deadline_ns = 0;
    return;
  }
  if (late) {
    // Everything in flight left after this ACK was made (it acknowledged all sent before): it
    // can show none of it lost. Only the probe timer moves to the new oldest packet.
    p.loss_deadline_ns = 0;
    arm_probe(p);
    return;
  }
  detect_loss(p, now);
}

bool Engine::can_defer_ack(const Peer& p, const wire::Header& h) const noexcept {
  if (send_counter_bound_ || h.sack || Seq32(h.ack_psn) != p.snd_nxt) return false;
  // The sends it completes stay in p's queue meanwhile: with the reply they must stay below
  // request_ack's threshold, or the reply would ask the peer for an ACK of its own. (That
  // threshold is ack_req_msgs_ here: the data this ACK came on cleared Peer::ack_waited.)
  const uint32_t max_msgs = std::min(kDeferAckMaxMsgs, ack_req_msgs_ - 2);
  uint32_t n = 0;
  for (const SendMsg* m = p.sq_head; m; m = m->next) {
    if (++n > max_msgs || !m->segmented || m->origin != SendMsg::Origin::App ||
        (m->op.flags & kOpCompletion) || m->pin != kNoPin)
      return false;
  }
  return n != 0;
}

void Engine::defer_ack(Peer& p, const wire::Header& h) noexcept {
  p.dack.rx_ns = last_rx_ns_;
  p.dack.ack_psn = h.ack_psn;
  p.dack.ack_delay_ns = h.ack_delay_ns;
  p.dack.credits = h.credits;
  p.dack.round = round_;
  p.dack.valid = true;
  ++dacks_pending_;
  ++stats_.acks_deferred;
}

void Engine::apply_deferred_ack(Peer& p) noexcept {
  p.dack.valid = false;
  --dacks_pending_;
  wire::Header h;  // what on_ack reads of an ACK without SACK
  h.ack_psn = p.dack.ack_psn;
  h.credits = p.dack.credits;
  h.ack_delay_ns = p.dack.ack_delay_ns;
  const uint64_t rx_ns = last_rx_ns_;
  last_rx_ns_ = p.dack.rx_ns;  // on_ack's clock: the packet's arrival, as if taken in then
  on_ack(p, h, nullptr, 0, /*late=*/true);
  last_rx_ns_ = rx_ns;
  // What is in flight now left after that arrival (the ACK covered everything before it): its
  // RTO runs from its own send (RFC 6298 5.1), not from the ACK's arrival, which may be long
  // past when the application took its time to reply.
  if (p.inflight() && p.rto_deadline_ns)
    p.rto_deadline_ns = std::max(p.rto_deadline_ns, p.slot(p.snd_una).sent_ns + p.rtt.rto_ns);
}

void Engine::apply_deferred_acks() noexcept {
  scan_due_ = true;
  for (auto& pp : peers_) {
    if (!dacks_pending_) return;
    if (pp->dack.valid) apply_deferred_ack(*pp);
  }
}

bool Engine::resend(Peer& p, Seq32 psn, uint64_t now) noexcept {
  TxSlot& t = p.slot(psn);
  if (!emit_segment(p, *t.msg, t.offset, t.len, psn, true, t.n_msgs)) return false;
  ++t.tx_count;
  t.sent_ns = now;
  return true;
}

Engine::LossTiming Engine::loss_timing(const Peer& p) const noexcept {
  const uint64_t rtt = p.rtt.valid ? p.rtt.srtt_ns : cfg_.rto_initial_ns;
  const uint64_t reo = std::max<uint64_t>(rtt / 4, 2'000);
  return {rtt, reo, 2 * rtt + reo + cfg_.ack_delay_ns};
}

// When the oldest packet's next probe is due: pto after its last send. The first three resends
// keep that pace; only then does the interval double per resend (to 64 pto). A lost
// retransmission of the oldest packet with the rest of the window SACKed blocks the whole
// window once nothing new may be sent (the span reached the reorder window or the receiver's
// credits, or the application has nothing more to send), so RACK has no later packet to judge
// it by: doubling from the first resend took it past the RTO after two losses in a row, 0.6
// RTOs per 1 MiB message at 10% loss. Three quick probes cost three packets at most.
uint64_t Engine::next_probe_ns(const TxSlot& t, uint64_t pto) noexcept {
  const uint32_t resends = t.tx_count - 1;
  return t.sent_ns + (resends < 3 ? pto : pto << std::min<uint32_t>(resends - 2, 6));
}

void Engine::arm_probe(Peer& p) noexcept {
  if (!p.inflight() || p.loss_deadline_ns) return;
  // As in detect_loss: a SACKed oldest packet is not probed (it arrived; the receiver holds it
  // because it cannot deliver it yet). Only its cumulative ACK is missing: the RTO's business.
  const TxSlot& t = p.slot(p.snd_una);
  if (!t.msg || p.sack_bits.test(p.snd_una)) return;
  p.loss_deadline_ns = next_probe_ns(t, loss_timing(p).pto);
}

void Engine::detect_loss(Peer& p, uint64_t now) noexcept {
  p.loss_deadline_ns = 0;
  if (!p.inflight()) return;
  // RACK (RFC 8985): a packet sent before one that was delivered is lost once an RTT plus a
  // reordering window has passed since it was sent. For first transmissions the classic
  // three-SACKs-above rule (RFC 6675) decides sooner. The oldest packet also has a probe
  // timer (RFC 8985 7, tail loss probe): when nothing was delivered after it (a lost tail, a
  // lost retransmission with the window full of SACKed packets) it is resent after two RTTs
  // plus the receiver's ACK delay (next_probe_ns), long before the RTO with its backoff and
  // window collapse.
  const LossTiming lt = loss_timing(p);  // not a structured binding: clang 14 cannot capture one
  const uint64_t rtt = lt.rtt, reo = lt.reo, pto = lt.pto;
  auto probe_due = [pto](const TxSlot& t) { return next_probe_ns(t, pto); };
  // Visit the packets not SACKed, oldest first, a word of the scoreboard at a time: during a
  // repair most of the window is SACKed, and an ACK comes every few packets.
  const Seq32 top = p.high_sacked > p.snd_una ? p.high_sacked : p.snd_una;
  const uint32_t n = static_cast<uint32_t>(top - p.snd_una) + 1;
  uint32_t sacked_below = 0;  // SACKed packets in [snd_una, s)
  TxSlot* una_resent = nullptr;
  for (uint32_t i = 0; i < n; i += 64) {
    const uint64_t valid = n - i >= 64 ? ~0ull : (1ull << (n - i)) - 1;
    const uint64_t sacked_w = p.sack_bits.bits64(p.snd_una + i) & valid;
    for (uint64_t un = ~sacked_w & valid; un; un &= un - 1) {
      const uint32_t k = static_cast<uint32_t>(__builtin_ctzll(un));
      const Seq32 s = p.snd_una + i + k;
      TxSlot& t = p.slot(s);
      if (!t.msg) continue;
      // SACKed packets above s (all of them lie at or below top)
      const uint32_t above =
          p.sacked - sacked_below -
          static_cast<uint32_t>(__builtin_popcountll(sacked_w & ((1ull << k) - 1)));
      bool lost = false;
      uint64_t due = UINT64_MAX;
      if (t.tx_count == 1 && above >= kDupThresh) {
        lost = true;
        ++stats_.fast_retx_events;
      } else if (t.sent_ns < p.rack_xmit_ns) {
        due = t.sent_ns + rtt + reo;
      }
      if (s == p.snd_una) due = std::min(due, probe_due(t));
      if (!lost && due != UINT64_MAX) {
        if (now >= due) {
          lost = true;
          ++stats_.rack_retx_events;
        } else if (!p.loss_deadline_ns || due < p.loss_deadline_ns) {
          p.loss_deadline_ns = due;
        }
      }
      if (lost) {
        if (!resend(p, s, now)) {
          p.loss_deadline_ns = now;  // no buffer or queue space: try again at the next progress
          return;
        }
        if (s == p.snd_una) una_resent = &t;
      }
    }
    sacked_below += static_cast<uint32_t>(__builtin_popcountll(sacked_w));
  }
  // The oldest packet, just resent, is probed again if nothing else sets a deadline.
  if (una_resent && !p.loss_deadline_ns) p.loss_deadline_ns = probe_due(*una_resent);
}

void Engine::on_rto(Peer& p, uint64_t now) noexcept {
  if (!p.inflight()) {
    p.rto_deadline_ns = 0;
    if (p.sq_next && !flow_window_open(p.flow, p.snd_nxt)) {  // persist: probe the closed window
      p.flow.persist_probe = true;
      pump(p, now);
      rtt_on_timeout(p.rtt, cfg_.rto_max_ns);
      p.rto_deadline_ns = now + p.rtt.rto_ns;
    }
    return;
  }
  ++stats_.rto_events;
  ++p.rto_events;
  // Resend the oldest unacknowledged packet (RFC 6298 5.4), even if it is SACKed: when every
  // packet in flight is SACKed, only the cumulative ACK is missing (lost), and something must
  // go out to bring it back. Once it is delivered, RACK finds the other lost ones. Our
  // receivers never renege on SACKed packets (held packets stay until delivered), so the
  // scoreboard stays valid.
  Seq32 oldest = p.snd_una;
  for (Seq32 s = p.snd_una; s < p.snd_nxt; ++s) {
    if (!p.sack_bits.test(s) && p.slot(s).msg) { oldest = s; break; }
  }
  if (p.slot(oldest).msg) resend(p, oldest, now);
  if (cfg_.cc && cc_on_timeout(p.cc, cc_, p.rtt.backoff, p.rtt.srtt_ns, now)) ++stats_.cc_decreases;
  rtt_on_timeout(p.rtt, cfg_.rto_max_ns);
  p.rto_deadline_ns = now + p.rtt.rto_ns;
}

}  // namespace pollfab::transport
