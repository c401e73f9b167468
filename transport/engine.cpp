// Engine, the coordinator: construction, peers, the receive dispatch (on_packet) and progress.
// The concepts it coordinates live in their own files (see engine.hpp).
#include <algorithm>
#include <random>

#include "lib/util/bits.hpp"
#include "transport/engine_state.hpp"

namespace pollfab::transport {

Engine::Engine(const EngineConfig& cfg, PacketIo& io, Clock& clock, CompletionSink& sink)
    : cfg_(cfg), io_(io), clock_(clock), sink_(sink),
      own_matcher_(std::make_unique<Matcher>(std::max<uint32_t>(cfg.rx_size, 1),
                                             cfg.max_unexpected_bytes)),
      matcher_(own_matcher_.get()) {
  cfg_.window_pkts = util::next_pow2(std::clamp<uint32_t>(cfg_.window_pkts, 8, 4096));
  cfg_.reorder_window_pkts =
      util::next_pow2(std::clamp<uint32_t>(cfg_.reorder_window_pkts, cfg_.window_pkts, 4096));
  if (cfg_.epoch == 0) {
    std::random_device rd;
    do cfg_.epoch = rd(); while (cfg_.epoch == 0);
  }
  cc_ = CcParams{cfg_.cc_target_ns, cfg_.cc_ai, cfg_.cc_beta, cfg_.cc_max_mdf, cfg_.cc_min_cwnd,
                 cfg_.window_pkts};
  uint32_t maxpkt = io_.max_packet_bytes();
  seg_bytes_ = maxpkt > wire::kHeaderBytes ? maxpkt - uint32_t(wire::kHeaderBytes) : 0;
  // An ACK carries the SACK of the whole reorder window: (window - 64) / 8 bytes of payload
  // must fit a packet (small MTUs) and the wire's limit.
  const uint32_t sack_room = std::min<uint32_t>(seg_bytes_, uint32_t(wire::kMaxSackExtBytes));
  while (cfg_.reorder_window_pkts > cfg_.window_pkts && cfg_.reorder_window_pkts > 64 &&
         (cfg_.reorder_window_pkts - 64) / 8 > sack_room)
    cfg_.reorder_window_pkts /= 2;
  zc_min_ = cfg_.reliable ? io_.zero_copy_min_bytes() : UINT32_MAX;
  cfg_.ack_coalesce_pkts = std::max<uint32_t>(cfg_.ack_coalesce_pkts, 1);
  cfg_.ack_coalesce_msgs = std::max<uint32_t>(cfg_.ack_coalesce_msgs, 1);
  ack_req_msgs_ = std::max<uint32_t>(2, cfg_.ack_coalesce_msgs / 2);
  ack_req_max_msgs_ = std::max<uint32_t>(ack_req_msgs_ + 1, 2 * cfg_.ack_coalesce_msgs);
  ack_waited_ns_ = std::max<uint64_t>(1, cfg_.ack_delay_ns / 2);
  if (!cfg_.reliable) cfg_.max_msg_size = std::min<uint64_t>(cfg_.max_msg_size, seg_bytes_);
  cfg_.max_msg_size = std::min<uint64_t>(cfg_.max_msg_size, 0xffffffffull);
  cfg_.inject_size = std::min<uint32_t>(cfg_.inject_size, uint32_t(cfg_.max_msg_size));
  cfg_.tx_size = std::clamp<uint32_t>(cfg_.tx_size, 1, 0xffff);  // RMA op ids: 16-bit index
  send_pool_.reset(cfg_.tx_size + kAnswerReserve);
  // One buffer per send slot, so an inject never waits for a buffer; atomics (operand and
  // compare, or the answer's previous values) use it too.
  inject_slot_bytes_ = std::max<uint32_t>(cfg_.inject_size, 2 * kMaxAtomicBytes);
  inject_arena_ = std::make_unique<uint8_t[]>(size_t(send_pool_.capacity()) * inject_slot_bytes_);
  std::vector<SendMsg*> all;
  while (SendMsg* m = send_pool_.get()) all.push_back(m);
  for (size_t i = 0; i < all.size(); ++i) all[i]->inject = inject_arena_.get() + i * inject_slot_bytes_;
  for (auto it = all.rbegin(); it != all.rend(); ++it) send_pool_.put(*it);
  rma_slots_.resize(cfg_.tx_size);
  rma_free_.reserve(cfg_.tx_size);
  for (uint32_t i = cfg_.tx_size; i-- > 0;) rma_free_.push_back(i);
}

Engine::~Engine() {
  flush_rx_free();
  for (auto& pp : peers_) {
    Peer& p = *pp;
    p.held.clear([this](PacketBuf& pkt) { io_.free(&pkt, 1); });
  }
  for (auto& pp : peers_) {  // claimed messages still arriving are no longer queued
    if (pp->cur_unex && pp->cur_unex->queue == UnexEntry::Queue::None)
      matcher_->free_unexpected(pp->cur_unex);
    pp->cur_unex = nullptr;
  }
  if (txq_len_) io_.free(txq_, txq_len_);
  if (alloc_cache_len_) io_.free(alloc_cache_, alloc_cache_len_);
  // Pins of unfinished zero-copy sends: the I/O layer recycles them when its references go.
  for (SendMsg* m = pinned_head_; m; m = m->next) io_.pin_close(m->pin);
  for (auto& pp : peers_)
    for (SendMsg* m = pp->sq_head; m; m = m->next)
      if (m->pin != kNoPin) io_.pin_close(m->pin);
  // own_matcher_ frees the unexpected messages still queued.
}

bool Engine::share_matcher(Matcher& m) noexcept {
  scan_due_ = true;
  if (!own_matcher_ || !own_matcher_->empty()) return false;
  for (auto& pp : peers_)
    if (pp->cur_recv || pp->cur_unex || pp->nxt_recv) return false;
  own_matcher_.reset();
  matcher_ = &m;
  budget_seen_ = m.budget_epoch();
  return true;
}

void Engine::leave_shared_matcher() noexcept {
  scan_due_ = true;
  if (own_matcher_) return;
  for (size_t i = 0; i < peers_.size(); ++i) fail_current(*peers_[i], PeerId(i), Status::Canceled);
  matcher_->free_owned(this);
}

// ---- peers -----------------------------------------------------------------------------------

PeerId Engine::create_peer(const PeerAddr& addr) {
  if (peers_.size() >= cfg_.max_peers) return kNoPeer;
  scan_due_ = true;
  auto p = std::make_unique<Peer>();
  p->addr = addr;
  io_.resolve(addr.host, p->route);
  p->heard_ns = advance_now(clock_.now_ns());
  restart_protocol(*p);
  if (cfg_.reliable) {
    // Rings of window_pkts slots; they grow to reorder_window_pkts only for a peer whose
    // traffic needs it (a stream under loss), so a many-peer job pays for the small ones.
    p->txw = std::make_unique<TxSlot[]>(cfg_.window_pkts);
    p->txw_mask = cfg_.window_pkts - 1;
    p->sack_bits.init(cfg_.window_pkts);
    p->held.init(cfg_.window_pkts);
  }
  PeerId id = static_cast<PeerId>(peers_.size());
  peers_.push_back(std::move(p));
  peer_index_.emplace(addr, id);
  return id;
}

void Engine::restart_protocol(Peer& p) noexcept {
  p.snd_una = p.snd_nxt = p.rcv_nxt = Seq32(0);
  p.rto_deadline_ns = 0;
  rtt_restart(p.rtt, cfg_.rto_initial_ns);
  flow_restart(p.flow, cfg_.window_pkts);
  p.high_sacked = Seq32(0);
  p.sacked = 0;
  p.rcv_window = cfg_.reorder_window_pkts;
  p.rack_xmit_ns = p.loss_deadline_ns = 0;
  cc_restart(p.cc, cc_);
  p.data_rx_ns = 0;
  p.ack_pending = 0;
  p.ack_msgs = 0;
  p.ack_now = p.ack_idle = p.ack_quick = p.rx_this_round = false;
  p.ack_waited = false;  // a new incarnation: nothing known of how it acknowledges
  p.bundle_done = 0;
  if (p.dack.valid) --dacks_pending_;  // an ACK of what we had with the old incarnation
  p.dack.valid = false;
}

PeerId Engine::peer(const PeerAddr& addr) {
  auto it = peer_index_.find(addr);
  if (it != peer_index_.end()) return it->second;
  return create_peer(addr);
}

PeerId Engine::find_peer(const PeerAddr& addr) const noexcept {
  auto it = peer_index_.find(addr);
  return it == peer_index_.end() ? kNoPeer : it->second;
}

const PeerAddr& Engine::peer_addr(PeerId id) const noexcept { return peers_[id]->addr; }
void Engine::set_peer_user(PeerId id, uint64_t user) noexcept {
  if (id < peers_.size()) peers_[id]->user = user;
}
void Engine::clear_peer_users() noexcept {
  for (auto& p : peers_) p->user = ~0ull;
}

uint64_t Engine::peer_user(PeerId id) const noexcept {
  return id < peers_.size() ? peers_[id]->user : ~0ull;
}

bool Engine::peer_dead(PeerId id) const noexcept { return id < peers_.size() && peers_[id]->dead; }

PeerStats Engine::peer_stats(PeerId id) const noexcept {
  PeerStats s;
  if (id >= peers_.size()) return s;
  const Peer& p = *peers_[id];
  s.addr = p.addr;
  s.user = p.user;
  s.dead = p.dead;
  s.remote_epoch = p.remote_epoch;
  s.tx_pkts = p.tx_pkts;
  s.tx_bytes = p.tx_bytes;
  s.rx_pkts = p.rx_pkts;
  s.rx_bytes = p.rx_bytes;
  s.retx_pkts = p.retx_pkts;
  s.dup_pkts = p.dup_pkts;
  s.rto_events = p.rto_events;
  s.srtt_ns = p.rtt.srtt_ns;
  s.rttvar_ns = p.rtt.rttvar_ns;
  s.rto_ns = p.rtt.rto_ns;
  s.inflight_pkts = p.inflight();
  s.pipe_pkts = p.pipe();
  s.min_rtt_ns = p.rtt.min_rtt_ns;
  s.cwnd_pkts = cfg_.cc ? static_cast<uint32_t>(p.cc.cwnd) : cfg_.window_pkts;
  s.credits_pkts = flow_credits(p.flow, p.snd_una);
  const auto waited = [&](Block b) {  // closed waits, and the open one up to the latest reading
    uint64_t t = p.blocked_ns[size_t(b) - 1];
    if (p.blocked == uint8_t(b) && now_ > p.blocked_since_ns) t += now_ - p.blocked_since_ns;
    return t;
  };
  s.blocked_window_ns = waited(Block::Window);
  s.blocked_cwnd_ns = waited(Block::Cwnd);
  s.blocked_credits_ns = waited(Block::Credits);
  s.blocked_ring_ns = waited(Block::Ring);
  s.blocked_tx_ns = waited(Block::Tx);
  s.holes = p.holes;
  s.hole_ns = p.hole_ns + (p.hole_since_ns && now_ > p.hole_since_ns ? now_ - p.hole_since_ns : 0);
  return s;
}

uint32_t Engine::held_packets() const noexcept {
  uint32_t n = 0;
  for (auto& p : peers_) n += p->held.count();
  return n;
}

// ---- receive dispatch ------------------------------------------------------------------------

// Inline in on_packet (one call site): every packet but the later segments of a message.
[[gnu::always_inline]] inline PeerId Engine::admit(PacketBuf& pkt, wire::Header& h) noexcept {
  rx_cont_.valid = false;
  if (wire::decode(pkt.data, pkt.len, h) != wire::DecodeError::None || h.dst_ep != cfg_.ep_id) {
    ++stats_.drop_protocol;
    io_.free(&pkt, 1);
    return kNoPeer;
  }
  if (!wire::verify(pkt.data, wire::kHeaderBytes + h.payload_len)) {  // corrupt: trust nothing
    ++stats_.drop_checksum;
    io_.free(&pkt, 1);
    return kNoPeer;
  }
  if (h.type == wire::Type::Dgram || !cfg_.reliable || wire::is_cm(h.type)) {
    // Connection management belongs to the endpoint's CmEndpoint (the provider hands those
    // packets there); one reaching the engine is dropped before it can touch a peer's state.
    if (h.type == wire::Type::Dgram && !cfg_.reliable) on_dgram(pkt, h);
    else { ++stats_.drop_protocol; io_.free(&pkt, 1); }
    return kNoPeer;
  }
  PeerAddr a{pkt.src, h.src_ep};
  if (h.dst_epoch && h.dst_epoch != cfg_.epoch) {  // addressed to an earlier incarnation
    ++stats_.drop_stale_epoch;
    io_.free(&pkt, 1);
    on_stale_epoch(a, h);
    return kNoPeer;
  }
  PeerId pid = last_rx_peer_;
  if (pid == kNoPeer || !(peers_[pid]->addr == a)) {
    pid = find_peer(a);
    if (pid == kNoPeer && wire::carries_psn(h.type)) {
      try { pid = create_peer(a); } catch (...) { pid = kNoPeer; }
    }
    if (pid == kNoPeer) {
      ++stats_.drop_unknown_peer;
      io_.free(&pkt, 1);
      return kNoPeer;
    }
    last_rx_peer_ = pid;
  }
  if (!(h.flags & (wire::kLast | wire::kBundle)) &&
      (h.type == wire::Type::Data || wire::is_rma(h.type))) {  // its message goes on
    rx_cont_.valid = true;  // (h is rx_cont_.h)
    rx_cont_.pid = pid;
    rx_cont_.src = pkt.src;
    std::memcpy(rx_cont_.raw, pkt.data, wire::kHeaderBytes);
  }
  return pid;
}

void Engine::on_packet(PacketBuf& pkt, uint64_t rx_ns) noexcept {
  ++stats_.rx_pkts;
  rx_round_ = true;
  scan_due_ = true;
  last_rx_ns_ = advance_now(rx_ns);
  // Decoded in place: a continuation changes the fields it has of its own (RxContinuation).
  wire::Header& h = rx_cont_.h;
  PeerId pid;
  if (rx_cont_.valid && pkt.src == rx_cont_.src &&
      wire::decode_continuation(pkt.data, pkt.len, rx_cont_.raw, h)) {
    // The next segment of the packet before, from its sender: what admit() found for that one
    // holds for this one, but for the checksum.
    if (!wire::verify(pkt.data, wire::kHeaderBytes + h.payload_len)) {
      rx_cont_.valid = false;
      ++stats_.drop_checksum;
      io_.free(&pkt, 1);
      return;
    }
    pid = rx_cont_.pid;
    ++stats_.rx_continued;
  } else {
    pid = admit(pkt, h);
    if (pid == kNoPeer) return;
  }
  Peer& p = P(pid);
  // A deferred ACK first: it came with an earlier packet of this incarnation (a restart seen
  // below must not fail sends it acknowledged), and before anything newer from p.
  if (p.dack.valid) apply_deferred_ack(p);
  if (!check_epoch(p, pid, h.src_epoch)) {
    io_.free(&pkt, 1);
    return;
  }
  p.heard_ns = last_rx_ns_;
  p.probe_ns = 0;
  if (h.flags & wire::kAckValid) {
    if (h.type == wire::Type::Ack) {
      // An ACK of new data that held out p's ACK delay: p sent no data to carry it, so p is
      // taken not to reply (Peer::ack_waited) until data from p comes (below).
      if (h.ack_delay_ns >= ack_waited_ns_ && Seq32(h.ack_psn) > p.snd_una) p.ack_waited = true;
      on_ack(p, h, pkt.data + wire::kHeaderBytes, h.payload_len);
    } else if (ack_news(p, h)) {
      if (can_defer_ack(p, h)) defer_ack(p, h);
      else on_ack(p, h, nullptr, 0);
    }
  }
  if (h.flags & wire::kAckReq) {
    if (h.type == wire::Type::Ack) {  // a liveness probe: answer at once
      p.ack_now = true;
      if (!p.ack_pending) note_ack_pending(p);
    } else {
      p.ack_idle = true;  // a sender waiting for its completions: once its burst is in
      if (h.flags & wire::kAckQuick) p.ack_quick = true;  // (QUICK: at the end of this round)
    }
  }
  if (h.type == wire::Type::Ack) {
    ++stats_.acks_rx;
    rx_free(pkt);
    return;
  }
  p.ack_waited = false;  // p sends data: our ACKs ride on it
  stats_.rx_bytes += h.payload_len;
  ++p.rx_pkts;
  p.rx_bytes += h.payload_len;
  on_data(p, pid, pkt, h);
}

// ---- progress --------------------------------------------------------------------------------

[[gnu::always_inline]] inline uint64_t Engine::timers_due_ns(const Peer& p) const noexcept {
  if (p.dack.valid) return 0;  // applied by the next round
  uint64_t d = p.rto_deadline_ns ? p.rto_deadline_ns : UINT64_MAX;
  if (p.loss_deadline_ns) d = std::min(d, p.loss_deadline_ns);
  if (p.ack_pending) d = std::min(d, p.ack_now || p.ack_idle ? 0 : p.ack_deadline_ns);
  return d;
}

[[gnu::always_inline]] inline bool Engine::work_every_round(const Peer& p) const noexcept {
  return p.sq_next || p.held.has(p.rcv_nxt) ||
         (p.ack_pending && ack_due(p));
}

template <bool Plan>
[[gnu::always_inline]] inline void Engine::scan_peers(bool credit_update) noexcept {
  scan_due_ = false;  // an event during the walk (a queued answer) sets it again
  if constexpr (Plan) posted_seen_ = matcher_->posted_epoch();
  // A walk after an event leaves the planning to the next round's walk (scan_at_ns_ 0): the
  // round a packet or a post made walks as before, with no planning (a ping-pong's turnaround).
  scan_at_ns_ = Plan ? UINT64_MAX : 0;
  uint64_t next = UINT64_MAX;
  for (size_t i = 0; i < peers_.size(); ++i) {
    Peer& p = *peers_[i];
    // An ACK deferred in an earlier round is due now; one of this round, before a timer of
    // p's that is due looks at packets it acknowledges (the application came back late).
    if (p.dack.valid &&
        (p.dack.round != round_ || (p.rto_deadline_ns && now_ >= p.rto_deadline_ns) ||
         (p.loss_deadline_ns && now_ >= p.loss_deadline_ns)))
      apply_deferred_ack(p);
    // A packet held at rcv_nxt that could not be delivered (unexpected budget full) gets
    // another chance once receives are posted or unexpected messages consumed.
    if (p.held.has(p.rcv_nxt)) drain_held(p, static_cast<PeerId>(i));
    // Read after drain_held: what it queues (a delivery answer) reads the clock afresh and
    // may store a later time (heard_ns) than the round's reading.
    const uint64_t now = now_;
    if (cfg_.peer_timeout_ns && !p.dead) check_liveness(p, static_cast<PeerId>(i), now);
    if (p.dead) continue;  // (its queue, timers and ACK state went with it: reset_peer)
    if (p.rto_deadline_ns && now >= p.rto_deadline_ns) on_rto(p, now);
    if (p.loss_deadline_ns && now >= p.loss_deadline_ns) detect_loss(p, now);
    if (p.sq_next) pump(p, now);
    if (credit_update && p.adv_credits < p.rcv_window / 2 &&
        credits_for(p) > p.adv_credits) {
      p.ack_now = true;  // window update: the sender may be waiting for credits
      if (!p.ack_pending) note_ack_pending(p);
    }
    if (p.ack_pending && (p.ack_now || ack_due(p) || now >= p.ack_deadline_ns ||
                          (p.ack_idle && (p.ack_quick || !p.rx_this_round))))
      send_ack(p);
    // An ACK_REQ on a packet that was not taken (outside the window) leaves nothing to
    // answer: it must not make a later, unrelated packet's ACK leave at once.
    if (!p.ack_pending) p.ack_idle = p.ack_quick = false;
    p.rx_this_round = false;
    if constexpr (Plan) {
      // When p has work next: at the next round (work_every_round), else when its first
      // timer, liveness included, is (computed here: a walk that does not plan skips it).
      if (work_every_round(p))
        next = 0;
      else
        next = std::min({next, timers_due_ns(p),
                         cfg_.peer_timeout_ns ? liveness_deadline(p) : UINT64_MAX});
    }
  }
  if constexpr (Plan) scan_at_ns_ = std::min(scan_at_ns_, next);
}

void Engine::progress(uint64_t now_ns) noexcept {
  advance_now(now_ns);
  // The packets of a round that received are freed at the next round that receives nothing
  // (or when kRxFree wait): a ping-pong's request is then freed after its reply has left, not
  // between its completion and the application (on memif ~100 instructions a packet, on the
  // path the round trip waits for). A stream frees in bursts of kRxFree.
  if (rx_free_len_ && !rx_round_) flush_rx_free();
  rx_round_ = false;
  // What posts queued leaves first: loss detection and probes below then see it as sent.
  if (txq_len_) flush();
  if (pinned_head_) release_pinned();
  if (cfg_.reliable) {
    const uint64_t budget = matcher_->budget_epoch();
    const bool credit_update = budget != budget_seen_;
    budget_seen_ = budget;
    // No event since the last walk (scan_due_), no timer due, no unexpected message freed, no
    // receives posted where there were none: no peer has anything to do this round (an
    // application polling an idle endpoint).
    if (scan_due_) {
      scan_peers<false>(credit_update);
    } else if (credit_update || now_ >= scan_at_ns_ ||
               matcher_->posted_epoch() != posted_seen_) {
      scan_peers<true>(credit_update);
    }
#if POLLFAB_DEBUG_CHECKS
    else if (peer_work_due()) {  // a round skipped with work due (meson -Ddebug_checks)
      __builtin_trap();
    }
#endif
  }
  flush();
  tx_eager_ = true;
  more_batch_ = false;
  ++round_;
}

#if POLLFAB_DEBUG_CHECKS
bool Engine::peer_work_due() const noexcept {
  for (auto& pp : peers_) {
    const Peer& p = *pp;
    if (p.dead) continue;
    if (work_every_round(p)) return true;
    if (now_ >= timers_due_ns(p)) return true;
    if (cfg_.peer_timeout_ns && now_ >= liveness_deadline(p)) return true;
  }
  return false;
}
#endif

uint64_t Engine::next_deadline_ns() const noexcept {
  uint64_t d = UINT64_MAX;
  for (auto& pp : peers_) {
    const Peer& p = *pp;
    d = std::min(d, timers_due_ns(p));
    // Liveness: a driver sleeping until this deadline must still see peers die.
    if (cfg_.reliable && cfg_.peer_timeout_ns && !p.dead) d = std::min(d, liveness_deadline(p));
  }
  if (txq_len_) d = 0;
  return d;
}

bool Engine::sends_settled() const noexcept {
  for (auto& pp : peers_)
    if (pp->sq_head) return false;
  return txq_len_ == 0;
}

void Engine::ack_all_now() noexcept {
  scan_due_ = true;
  for (auto& pp : peers_)
    if (pp->ack_pending) pp->ack_now = true;
}

bool Engine::busy() const noexcept {
  if (txq_len_ || pinned_head_ || rx_free_len_) return true;  // (rx_free_: one more round frees)
  for (auto& pp : peers_)
    if (pp->sq_head || pp->ack_pending) return true;
  return false;
}

}  // namespace pollfab::transport
