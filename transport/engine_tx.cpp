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
  m->pin = kNoPin;
  if (op.flags & kOpInject) {
    copy_from_iov(op.iov, op.iov_count, 0, m->inject, len);
    m->op.iov[0] = {m->inject, static_cast<size_t>(len)};
    m->op.iov_count = 1;
  }
  Peer& p = P(op.peer);
  // Zero copy: segments are attached from the application's memory (pinned until the message
  // is acknowledged and the I/O layer has let go of it); injects are already copied.
  if (!(op.flags & kOpInject) && len >= zc_min_ && !p.dead) m->pin = io_.pin_open();
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
  seal(pkt);
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
  uint32_t limit = cfg_.window_pkts;
  if (cfg_.cc) limit = std::min(limit, std::max(cfg_.cc_min_cwnd, static_cast<uint32_t>(p.cwnd)));
  while (p.sq_next && p.inflight() < limit) {
    if (!(p.snd_nxt < p.snd_edge)) {  // the receiver's window is closed
      if (!p.persist_probe) {
        if (!p.credit_stalled) ++stats_.credit_stalls;
        p.credit_stalled = true;
        break;
      }
      ++stats_.credit_probes;
    }
    SendMsg& m = *p.sq_next;
    uint32_t off = m.next_offset;
    uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(seg_bytes_, m.len - off));
    Seq32 psn = p.snd_nxt;
    if (!emit_segment(p, m, off, len, psn, false)) break;
    p.persist_probe = false;
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
  // Window closed with nothing in flight: the RTO timer doubles as the persist timer.
  if (p.sq_next && !p.inflight() && !p.rto_deadline_ns) p.rto_deadline_ns = now + p.rto_ns;
  // New data into an idle window: nothing is in flight to bring an ACK that would run loss
  // detection, so the tail probe is armed here (RFC 8985 7.2), not left to the RTO. A lost
  // single-packet message (an inject, a 0-byte reply) otherwise waited rto_min.
  arm_probe(p);
}

void Engine::seal(PacketBuf& pkt) noexcept {
  if (cfg_.checksum) wire::seal(pkt.data, pkt.len - pkt.ext_len, pkt.ext, pkt.ext_len);
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
  fill_ack(p, h, nullptr);
  wire::encode(h, pkt.data);
  pkt.len = wire::kHeaderBytes;
  const uint8_t* src = m.pin != kNoPin && len >= zc_min_
                           ? contiguous_in_iov(m.op.iov, m.op.iov_count, off, len)
                           : nullptr;
  if (src && io_.attach(pkt, src, len, m.pin)) {
    ++stats_.zc_tx_pkts;
  } else {  // copy (also when the I/O layer is out of references)
    copy_from_iov(m.op.iov, m.op.iov_count, off, pkt.data + wire::kHeaderBytes, len);
    pkt.len = static_cast<uint32_t>(wire::kHeaderBytes + len);
  }
  pkt.route = &p.route;
  seal(pkt);
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

uint16_t Engine::credits_for(const Peer& p) const noexcept {
  // A message landing in a posted receive (this one, or the next if receives are waiting)
  // costs no buffer: the whole window is open. Otherwise
  // the window shrinks with what is left of the unexpected-message budget, so a sender cannot
  // push more than we could buffer (the rest would be dropped and resent).
  if (p.cur_recv || !posted_[0].empty() || !posted_[1].empty())
    return static_cast<uint16_t>(std::min<uint32_t>(cfg_.window_pkts, 0xffff));
  uint64_t free = cfg_.max_unexpected_bytes > unex_bytes_ ? cfg_.max_unexpected_bytes - unex_bytes_ : 0;
  uint64_t pkts = free / std::max<uint32_t>(seg_bytes_, 1);
  return static_cast<uint16_t>(std::min<uint64_t>({pkts, cfg_.window_pkts, 0xffff}));
}

uint16_t Engine::build_sack(Peer& p, uint64_t& sack, uint8_t* ext) noexcept {
  sack = 0;
  if (!p.held_count) return 0;
  uint16_t ext_len = 0;
  uint32_t found = 0;
  for (uint32_t i = 0; i + 1 < cfg_.window_pkts && found < p.held_count; ++i) {
    if (!p.held[(p.rcv_nxt + 1 + i).raw() & wmask_].data) continue;
    ++found;
    if (i < 64) {
      sack |= 1ull << i;
    } else if (ext) {
      uint32_t j = i - 64;
      if (j / 8 >= ext_len) {
        std::memset(ext + ext_len, 0, j / 8 + 1 - ext_len);
        ext_len = static_cast<uint16_t>(j / 8 + 1);
      }
      ext[j / 8] |= static_cast<uint8_t>(1u << (j % 8));
    } else {
      return 1;  // more SACK information than the header carries
    }
  }
  return ext_len;
}

void Engine::fill_ack(Peer& p, wire::Header& h, uint8_t* ext) noexcept {
  h.flags |= wire::kAckValid;
  h.ack_psn = p.rcv_nxt.raw();
  uint16_t ext_len = build_sack(p, h.sack, ext);
  h.credits = credits_for(p);
  p.adv_credits = h.credits;
  if (p.data_rx_ns) {
    uint64_t d = clock_.now_ns() - p.data_rx_ns;
    h.ack_delay_ns = static_cast<uint32_t>(std::min<uint64_t>(d, 0xffffffffu));
  }
  if (ext) h.payload_len = ext_len;
  // A piggybacked ACK whose SACK does not fit the header leaves a standalone one pending.
  if (!ext && ext_len) return;
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
  fill_ack(p, h, pkt.data + wire::kHeaderBytes);
  wire::encode(h, pkt.data);
  pkt.len = static_cast<uint32_t>(wire::kHeaderBytes + h.payload_len);
  pkt.route = &p.route;
  seal(pkt);
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

void Engine::on_ack(Peer& p, const wire::Header& h, const uint8_t* ext, uint32_t ext_len) noexcept {
  Seq32 ack(h.ack_psn);
  if (ack > p.snd_nxt || ack < p.snd_una) return;  // stale or bogus
  const uint64_t now = last_rx_ns_;  // on_ack runs inside on_packet: the packet's rx time
  // Flow control: the window edge only moves forward (a shrinking offer is not taken back
  // from packets already sent; RFC 9293 3.8.6).
  Seq32 edge = ack + h.credits;
  if (edge > p.snd_edge) p.snd_edge = edge;
  if (p.snd_nxt < p.snd_edge) p.credit_stalled = false;
  if (ack > p.snd_una) {
    bool have = false;
    uint64_t sample = 0;
    uint32_t acked = static_cast<uint32_t>(ack - p.snd_una);
    for (Seq32 s = p.snd_una; s < ack; ++s) {
      TxSlot& t = p.txw[s.raw() & wmask_];
      // Karn: no samples from retransmitted packets; nor from SACKed ones (their ACK came
      // long before this cumulative one, the gap would count recovery time as RTT).
      if (t.tx_count == 1 && !t.sacked) {
        sample = now - t.sent_ns;
        have = true;
      }
      if (!t.sacked) p.rack_xmit_ns = std::max(p.rack_xmit_ns, t.sent_ns);
      t.msg = nullptr;
      t.sacked = false;
    }
    p.snd_una = ack;
    uint64_t delay = sample;
    if (have) {
      // The time the receiver sat on the ACK is not path delay (RFC 9002 5.3): subtract it,
      // but never below the lowest RTT seen.
      if (!p.min_rtt_ns || sample < p.min_rtt_ns) p.min_rtt_ns = sample;
      if (h.ack_delay_ns && sample >= p.min_rtt_ns + h.ack_delay_ns) delay = sample - h.ack_delay_ns;
      update_rtt(delay, p.srtt_ns, p.rttvar_ns, p.rtt_valid);
      stats_.srtt_ns = p.srtt_ns;
    }
    p.backoff = 0;
    if (p.rtt_valid) {
      uint64_t rto = p.srtt_ns + std::max<uint64_t>(1000, 4 * p.rttvar_ns);
      p.rto_ns = std::clamp(rto, cfg_.rto_min_ns, cfg_.rto_max_ns);
    }
    cc_on_ack(p, acked, delay, have, now);
    while (p.sq_head && p.sq_head->segmented && p.sq_head->last_psn < p.snd_una) {
      SendMsg* m = p.sq_head;
      p.sq_head = m->next;
      if (!p.sq_head) p.sq_tail = nullptr;
      complete_send(m, Status::Ok);
    }
    p.rto_deadline_ns = p.inflight() || p.sq_next ? now + p.rto_ns : 0;
  }
  if (!p.inflight()) {
    p.loss_deadline_ns = 0;
    return;
  }
  // SACK scoreboard: mark newly SACKed packets, then find the lost ones.
  auto mark = [&](Seq32 s) {
    if (s >= p.snd_nxt) return false;
    TxSlot& t = p.txw[s.raw() & wmask_];
    if (!t.sacked && t.msg) {
      t.sacked = true;
      p.rack_xmit_ns = std::max(p.rack_xmit_ns, t.sent_ns);
    }
    if (s > p.high_sacked || p.high_sacked < p.snd_una) p.high_sacked = s;
    return true;
  };
  for (uint64_t bits = h.sack; bits; bits &= bits - 1)
    if (!mark(ack + 1 + static_cast<uint32_t>(__builtin_ctzll(bits)))) break;
  for (uint32_t j = 0; j < ext_len * 8; ++j)
    if ((ext[j / 8] >> (j % 8)) & 1)
      if (!mark(ack + 65 + j)) break;
  detect_loss(p, now);
}

bool Engine::resend(Peer& p, Seq32 psn, uint64_t now) noexcept {
  TxSlot& t = p.txw[psn.raw() & wmask_];
  if (!emit_segment(p, *t.msg, t.offset, t.len, psn, true)) return false;
  ++t.tx_count;
  t.sent_ns = now;
  return true;
}

Engine::LossTiming Engine::loss_timing(const Peer& p) const noexcept {
  const uint64_t rtt = p.rtt_valid ? p.srtt_ns : cfg_.rto_initial_ns;
  const uint64_t reo = std::max<uint64_t>(rtt / 4, 2'000);
  return {rtt, reo, 2 * rtt + reo + cfg_.ack_delay_ns};
}

// When the oldest packet's next probe is due: pto after its last send. The first three resends
// keep that pace; only then does the interval double per resend (to 64 pto). A lost
// retransmission of the oldest packet with the rest of the window SACKed blocks the whole
// window (nothing new may be sent past snd_una + window, so RACK has no later packet to judge
// it by): doubling from the first resend took it past the RTO after two losses in a row, 0.6
// RTOs per 1 MiB message at 10% loss. Three quick probes cost three packets at most.
uint64_t Engine::next_probe_ns(const TxSlot& t, uint64_t pto) noexcept {
  const uint32_t resends = t.tx_count - 1;
  return t.sent_ns + (resends < 3 ? pto : pto << std::min<uint32_t>(resends - 2, 6));
}

void Engine::arm_probe(Peer& p) noexcept {
  if (!p.inflight() || p.loss_deadline_ns) return;
  // As in detect_loss: a SACKed oldest packet is not probed (it arrived; the receiver holds it
  // because it cannot deliver it yet). Only its cumulative ACK is missing: the RTO's business.
  const TxSlot& t = p.txw[p.snd_una.raw() & wmask_];
  if (!t.msg || t.sacked) return;
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
  uint32_t above = 0;
  Seq32 top = p.high_sacked > p.snd_una ? p.high_sacked : p.snd_una;
  for (Seq32 s = top; s >= p.snd_una; s = s - 1) {
    TxSlot& t = p.txw[s.raw() & wmask_];
    if (t.sacked) { ++above; if (s == p.snd_una) break; continue; }
    if (!t.msg) { if (s == p.snd_una) break; continue; }
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
        break;
      }
      if (s == p.snd_una && !p.loss_deadline_ns) p.loss_deadline_ns = probe_due(t);
    }
    if (s == p.snd_una) break;
  }
}

void Engine::on_rto(Peer& p, uint64_t now) noexcept {
  if (!p.inflight()) {
    p.rto_deadline_ns = 0;
    if (p.sq_next && !(p.snd_nxt < p.snd_edge)) {  // persist: probe the closed window
      p.persist_probe = true;
      pump(p);
      if (p.backoff < 16) ++p.backoff;
      p.rto_ns = std::min(p.rto_ns * 2, cfg_.rto_max_ns);
      p.rto_deadline_ns = now + p.rto_ns;
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
    TxSlot& t = p.txw[s.raw() & wmask_];
    if (!t.sacked && t.msg) { oldest = s; break; }
  }
  if (p.txw[oldest.raw() & wmask_].msg) resend(p, oldest, now);
  cc_on_timeout(p, now);
  if (p.backoff < 16) ++p.backoff;
  p.rto_ns = std::min(p.rto_ns * 2, cfg_.rto_max_ns);
  p.rto_deadline_ns = now + p.rto_ns;
}

void Engine::cc_on_ack(Peer& p, uint32_t acked, uint64_t delay_ns, bool sample,
                       uint64_t now) noexcept {
  if (!cfg_.cc) return;
  // Swift (Kumar et al., SIGCOMM 2020) with the lowest RTT seen as the base delay and the
  // receiver's ACK delay removed. The congestion signal is the *standing* delay: the lowest
  // sample of a round (one smoothed RTT), as Copa and BBR filter it, so one late packet (a
  // descheduled receiver, a reordered packet) is not mistaken for a queue. Each round:
  //   standing delay <= min_rtt + cc_target_ns: additive increase, cc_ai packets per RTT,
  //     times the number of consecutive good rounds up to 8 (Timely's hyperactive increase:
  //     a clean path gets its window back in a few RTTs);
  //   above target: multiplicative decrease in proportion to the excess, at most cc_max_mdf.
  // After a timeout the window restarts small and doubles per RTT back to half its old size
  // (slow start, RFC 5681 3.1).
  if (p.cwnd < p.ssthresh) p.cwnd += acked;
  if (sample && (!p.round_min_ns || delay_ns < p.round_min_ns)) p.round_min_ns = delay_ns;
  const uint64_t round = std::max<uint64_t>(p.srtt_ns, 1000);
  if (!p.round_start_ns) p.round_start_ns = now;
  if (p.cwnd >= p.ssthresh && p.good_rounds)
    p.cwnd += cfg_.cc_ai * std::min<uint32_t>(p.good_rounds, 8) * acked / std::max(p.cwnd, 1.0);
  if (now - p.round_start_ns >= round && p.round_min_ns) {
    const uint64_t target = p.min_rtt_ns + cfg_.cc_target_ns;
    const uint64_t standing = p.round_min_ns;
    if (standing <= target) {
      ++p.good_rounds;
    } else {
      p.good_rounds = 0;
      double f = 1.0 - cfg_.cc_beta * double(standing - target) / double(standing);
      p.cwnd *= std::max(f, 1.0 - cfg_.cc_max_mdf);
      p.ssthresh = 0;
      p.last_decrease_ns = now;
      ++stats_.cc_decreases;
    }
    p.round_start_ns = now;
    p.round_min_ns = 0;
  }
  p.cwnd = std::clamp(p.cwnd, double(cfg_.cc_min_cwnd), double(cfg_.window_pkts));
}

void Engine::cc_on_timeout(Peer& p, uint64_t now) noexcept {
  if (!cfg_.cc) return;
  // A timeout is the strongest congestion signal we get: the largest decrease once per RTT;
  // after repeated timeouts, restart from the minimum window (Swift's retransmit reset) and
  // slow-start back to half the window we had.
  if (p.backoff >= 2) {
    p.ssthresh = std::max(p.ssthresh, p.cwnd * (1.0 - cfg_.cc_max_mdf));
    p.cwnd = cfg_.cc_min_cwnd;
  } else if (now - p.last_decrease_ns >= p.srtt_ns) {
    p.cwnd *= 1.0 - cfg_.cc_max_mdf;
  } else {
    return;
  }
  p.cwnd = std::max(p.cwnd, double(cfg_.cc_min_cwnd));
  p.last_decrease_ns = now;
  ++stats_.cc_decreases;
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
  restart_protocol(p);
  fail_current(p, pid, st);
}

// We wait on the peer while our sends to it are unacknowledged, while a message from it is
// half received, or while our probe is unanswered: dead after peer_timeout of silence.
bool Engine::waiting_on(const Peer& p) const noexcept {
  return p.sq_head || p.cur_recv || p.cur_unex || p.probe_ns;
}

// Receivers wait too: while receives are posted, a peer silent for a quarter of the timeout is
// probed; its engine answers at once (ACK_REQ), or the timeout declares it dead.
bool Engine::probe_due_to(const Peer& p) const noexcept {
  return !p.probe_ns && !p.sq_head && (!posted_[0].empty() || !posted_[1].empty());
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
