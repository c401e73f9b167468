// Engine reassembly: on receive, placing each segment straight into the matched receive buffer
// (or the unexpected buffer) at its offset, in PSN order; the messages of a bundle one by one;
// early placement of segments above a hole; a message cut short. The send side, segmentation,
// is segmentation.cpp.
#include <algorithm>
#include <cstring>

#include "transport/engine_state.hpp"

namespace pollfab::transport {

bool Engine::deliver(Peer& p, PeerId pid, const wire::Header& h, const uint8_t* payload) noexcept {
  if (wire::is_rma(h.type)) return on_rma(p, pid, h, payload);
  bool ok;
  if (h.flags & wire::kBundle) {
    ok = deliver_bundle(p, pid, h, payload);
  } else if ((h.flags & (wire::kFirst | wire::kLast | wire::kDeliveryReq)) ==
             (wire::kFirst | wire::kLast)) {  // a whole message in one packet
    ok = deliver_whole(p, pid, h, h.flags, h.msg_len, h.tag, h.cq_data, payload);
  } else {
    return deliver_message(p, pid, h, payload);
  }
  flush_recv_done();  // this packet's receive completions, in one call
  return ok;
}

bool Engine::deliver_bundle(Peer& p, PeerId pid, const wire::Header& h,
                            const uint8_t* payload) noexcept {
  // Message 0 as the header describes it, then each entry; every one is whole (one segment, no
  // delivery answer: decode() rejects DELIVERY_REQ on a bundle).
  uint16_t flags = static_cast<uint16_t>(h.flags & ~wire::kBundle);
  uint32_t len = h.msg_len;
  uint64_t tag = h.tag, cq_data = h.cq_data;
  const uint8_t* data = payload;
  const uint8_t* q = payload + h.msg_len;
  uint32_t left = h.payload_len - h.msg_len;
  uint32_t n_msgs = 1;
  for (uint32_t i = 0;; ++i, ++n_msgs) {
    if (i >= p.bundle_done && !deliver_whole(p, pid, h, flags, len, tag, cq_data, data)) {
      p.bundle_done = i;  // no room for message i: the retransmission resumes here
      return false;
    }
    if (!left) break;
    wire::BundleMsg b;
    // decode() walked the entries to exactly the payload's end: each is read, not checked again.
    const uint32_t used = wire::read_bundle_entry(q, b);
#if POLLFAB_DEBUG_CHECKS
    if (used > left) __builtin_trap();  // a bundle decode() did not accept (meson -Ddebug_checks)
#endif
    q += used;
    left -= used;
    flags = static_cast<uint16_t>(wire::kFirst | wire::kLast | b.flags);
    len = b.len;
    tag = b.tag;
    cq_data = b.cq_data;
    data = b.data;
  }
  // The sender's completions wait for this ACK message by message: a bundle counts as its
  // messages towards ack_coalesce_msgs (the caller counts the packet and its first message),
  // or a window of small sends in a few packets would wait for ack_delay_ns.
  p.ack_msgs += n_msgs - 1;
  p.bundle_done = 0;
  return true;
}

// Inline in deliver() and deliver_bundle (each message of a bundle).
[[gnu::always_inline]] inline bool Engine::deliver_whole(Peer& p, PeerId pid,
                                                         const wire::Header& h, uint16_t flags,
                                                         uint32_t len, uint64_t tag,
                                                         uint64_t cq_data,
                                                         const uint8_t* data) noexcept {
  // The common case straight: no message in progress and a posted receive matches. It is what
  // deliver_message does for a whole message, without the in-progress state (cur_*) that only
  // a message of several segments needs.
  RecvEntry* r = p.cur_recv || p.cur_unex
                     ? nullptr
                     : matcher_->match_posted(pid, flags & wire::kTagged, tag, len);
  if (!r) {  // unexpected (or a cut-short message to abort): the general path
    wire::Header m = h;
    m.flags = flags;
    m.msg_len = len;
    m.payload_len = static_cast<uint16_t>(len);
    m.tag = tag;
    m.cq_data = cq_data;
    return deliver_message(p, pid, m, data);
  }
  place_in(*r, 0, data, len);  // (received stays: only a message in progress, cur_recv, reads it)
  complete_whole(r, pid, len, flags, tag, cq_data);
  return true;
}

bool Engine::deliver_message(Peer& p, PeerId pid, const wire::Header& h,
                             const uint8_t* payload) noexcept {
  if (h.flags & wire::kFirst) {
    if (p.cur_recv || p.cur_unex) abort_current(p, pid);  // a message was cut short
    SendMsg* answer = nullptr;  // FI_DELIVERY_COMPLETE: reserved now, sent once placed
    if (h.flags & wire::kDeliveryReq) {
      answer = new_answer(pid, h.op_slot);
      if (!answer) return false;  // no answer slot: not accepted now; the sender resends
      answer->ext.atomic_kind = wire::kAnswerDelivery;
      answer->ext.addr = h.psn;  // the first PSN: the sender checks it names this message
    }
    const bool tagged = h.flags & wire::kTagged;
    if (RecvEntry* r = matcher_->match_posted(pid, tagged, h.tag, h.msg_len)) {
      p.cur_recv = r;
      r->received = 0;
      p.dc_answer = answer;
    } else {
      // Every entry counts against max_unexpected_bytes (its bookkeeping too), so a sender
      // of endless small messages cannot grow our memory without bound: at the limit the
      // packet stays unacknowledged (the caller answers with our credits).
      UnexEntry* u = matcher_->new_unexpected(pid, h.flags, h.tag, h.cq_data, h.msg_len, this);
      if (!u) {
        if (answer) send_pool_.put(answer);
        return false;
      }
      u->answer = answer;
      p.cur_unex = u;
    }
    p.cur = MsgHead::of(h);
  } else if (!p.cur_recv && !p.cur_unex) {
    ++stats_.drop_protocol;  // a middle segment with no message started: consume it
    return true;
  }
  if (h.msg_len != p.cur.len) {
    abort_current(p, pid);
    return true;
  }
  if (h.offset != current_received(p)) {
    abort_current(p, pid);
    return true;
  }
  place_bytes(p, h.offset, payload, h.payload_len);
  advance_current(p, pid, h.payload_len, h.flags & wire::kLast);
  return true;
}

uint64_t Engine::current_received(const Peer& p) noexcept {
  return p.cur_recv ? p.cur_recv->received : p.cur_unex ? p.cur_unex->received : UINT64_MAX;
}

// Copies len payload bytes to offset off of the message being received: the posted receive's
// iov (what lies past its capacity is truncated) or the unexpected buffer.
[[gnu::always_inline]] inline void Engine::place_in(const RecvEntry& r, uint64_t off,
                                                    const uint8_t* payload, uint32_t len) noexcept {
  if (off < r.cap)
    copy_to_iov(r.op.iov, r.op.iov_count, off, payload, std::min<uint64_t>(len, r.cap - off));
}

void Engine::place_bytes(Peer& p, uint64_t off, const uint8_t* payload, uint32_t len) noexcept {
  if (RecvEntry* r = p.cur_recv) {
    place_in(*r, off, payload, len);
  } else if (len) {
    std::memcpy(p.cur_unex->buf + off, payload, len);
  }
}

void Engine::advance_current(Peer& p, PeerId pid, uint32_t len, bool last) noexcept {
  if (RecvEntry* r = p.cur_recv) {
    r->received += len;
    if (!last) return;
    p.cur_recv = nullptr;
    finish_recv(r, pid, p.cur.len, p.cur.flags, p.cur.tag, p.cur.data,
                p.cur.len > r->cap ? Status::Truncated : Status::Ok);
    if (SendMsg* a = p.dc_answer) {  // placed: tell the sender (FI_DELIVERY_COMPLETE)
      p.dc_answer = nullptr;
      queue_msg(p, a);
    }
  } else if (UnexEntry* u = p.cur_unex) {
    u->received += len;
    if (!last) return;
    u->complete = true;
    p.cur_unex = nullptr;
    finish_unexpected(u);
  }
}

namespace {
// True if h is a segment of message m after its first: data, m's length, and the offset its PSN
// implies with m's segment size (every segment but the last carries m.seg bytes: transmit cuts
// seg_cap() each); the last one ends the message.
bool later_segment_of(const MsgHead& m, const wire::Header& h) noexcept {
  if (h.type != wire::Type::Data || (h.flags & wire::kFirst) || !m.seg) return false;
  const int32_t k = Seq32(h.psn) - m.first_psn;
  if (k <= 0 || h.msg_len != m.len) return false;
  const uint64_t off = uint64_t(k) * m.seg;
  const uint32_t len = h.payload_len;
  if (off != h.offset || off + len > h.msg_len) return false;
  return (h.flags & wire::kLast) ? off + len == h.msg_len : len == m.seg;
}
}  // namespace

// Early placement. While a hole is repaired, the segments above it would wait in their packet
// buffers for a couple of RTTs and be copied cold; a receiver that is the bottleneck (memif)
// pays for every one of them. A segment is placed at once when it provably belongs to the
// message being received: not a first segment, the same message length, and the offset its PSN
// implies (later_segment_of). A sender that breaks that rule only has its segment held as
// before.
bool Engine::place_early(Peer& p, const wire::Header& h, const uint8_t* payload) noexcept {
  if ((!p.cur_recv && !p.cur_unex) || !later_segment_of(p.cur, h)) return false;
  if (h.offset <= current_received(p)) return false;  // not above the hole: deliver() has it
  place_bytes(p, h.offset, payload, h.payload_len);
  return true;
}

// Segments placed early (place_early) of the current message, from rcv_nxt on and before its
// last segment, counted in order as one run: each was checked on arrival to be cur.seg bytes
// at the offset its PSN implies, so the run adds n * cur.seg bytes and no slot is read. Returns
// n (0: the per-segment path, deliver_placed). Not after a message was cut short until the
// PSNs held then are behind us: a segment placed into the message that was cut short may lie
// in the range of the one that follows it.
uint32_t Engine::placed_run(Peer& p, PeerId pid) noexcept {
  if (!p.cur.seg || (!p.cur_recv && !p.cur_unex)) return 0;
  if (p.run_blocked) [[unlikely]] {
    if (p.rcv_nxt < p.run_blocked_until) return 0;
    p.run_blocked = false;
  }
  const uint64_t got = current_received(p);
  const uint64_t segs = p.cur.segs();
  if (got % p.cur.seg || got / p.cur.seg + 1 >= segs ||
      Seq32(p.cur.first_psn + static_cast<uint32_t>(got / p.cur.seg)) != p.rcv_nxt)
    return 0;
  const uint64_t before_last = segs - 1 - got / p.cur.seg;
  const uint32_t n =
      p.held.placed_run(p.rcv_nxt, uint32_t(std::min<uint64_t>(before_last, UINT32_MAX)));
  if (n) advance_current(p, pid, n * p.cur.seg, false);  // (not the last: no completion)
  return n;
}

// The message after the current one. While a hole in the current message is repaired, the
// segments of the next arrive too (a hole stays open for about the sender's window, 256
// packets at the defaults, a third of a 1 MiB message), and held in their packet buffers they
// were 11-16% of a 1% loss stream's packets, copied cold after the repair. The next message's
// first segment, right after the current message's last PSN, is matched at once to a posted
// receive: every message before it is matched (the current one when its first segment came),
// so the match is the one in-order delivery would make. Its later segments are then placed as
// the current message's are. Only a multi-segment data message without a delivery answer,
// and only into a posted receive (an unexpected message is held as before).
bool Engine::place_next(Peer& p, PeerId pid, const wire::Header& h,
                        const uint8_t* payload) noexcept {
  if (h.type != wire::Type::Data) return false;
  const Seq32 psn(h.psn);
  const uint32_t len = h.payload_len;
  if (h.flags & wire::kFirst) {
    if (p.nxt_recv || !p.cur.seg || (!p.cur_recv && !p.cur_unex)) return false;
    if ((h.flags & (wire::kLast | wire::kBundle | wire::kDeliveryReq)) || h.offset || !len)
      return false;
    if (psn != p.cur.first_psn + static_cast<uint32_t>(p.cur.segs())) return false;
    RecvEntry* r = matcher_->match_posted(pid, (h.flags & wire::kTagged) != 0, h.tag, h.msg_len);
    if (!r) return false;
    r->received = 0;
    p.nxt_recv = r;
    p.nxt = MsgHead::of(h);  // (not a last segment: seg = len)
    place_in(*r, 0, payload, len);
    return true;
  }
  if (!p.nxt_recv || !later_segment_of(p.nxt, h)) return false;
  place_in(*p.nxt_recv, h.offset, payload, len);
  return true;
}

// The next message becomes the current one (its first segment, placed by place_next, is
// counted in order).
void Engine::promote_next(Peer& p, PeerId pid) noexcept {
  RecvEntry* r = p.nxt_recv;
  p.nxt_recv = nullptr;
  if (p.cur_recv || p.cur_unex) abort_current(p, pid);  // cut short (a sender's error)
  p.cur_recv = r;
  p.cur = p.nxt;
}

void Engine::deliver_placed(Peer& p, PeerId pid, const ReorderBuffer::Placed& pl) noexcept {
  // Offset 0 is only ever the next message's first segment (place_early places none).
  if (pl.offset == 0 && p.nxt_recv) promote_next(p, pid);
  if (current_received(p) != pl.offset) {  // the message was cut short in between (abort_current)
    ++stats_.drop_protocol;
    return;
  }
  advance_current(p, pid, pl.len, pl.last);
}

void Engine::fail_current(Peer& p, PeerId pid, Status st) noexcept {
  if (p.dc_answer) {  // the message never got placed: no delivery to report
    send_pool_.put(p.dc_answer);
    p.dc_answer = nullptr;
  }
  if (p.cur_unex && p.cur_unex->answer) {
    send_pool_.put(static_cast<SendMsg*>(p.cur_unex->answer));
    p.cur_unex->answer = nullptr;
  }
  if (p.cur_recv) {
    RecvEntry* r = p.cur_recv;
    p.cur_recv = nullptr;
    finish_recv(r, pid, p.cur.len, p.cur.flags, p.cur.tag, p.cur.data, st);
  }
  if (p.cur_unex) {
    UnexEntry* u = p.cur_unex;
    p.cur_unex = nullptr;
    if (u->claimed) {
      RecvEntry* r = u->claimed;
      u->claimed = nullptr;
      finish_recv(r, pid, u->msg_len, u->flags, u->tag, u->cq_data, st);
    }
    matcher_->free_unexpected(u);
  }
  if (RecvEntry* r = p.nxt_recv) {  // matched early, nothing of it counted yet
    p.nxt_recv = nullptr;
    finish_recv(r, pid, p.nxt.len, p.nxt.flags, p.nxt.tag, p.nxt.data, st);
  }
}

void Engine::abort_current(Peer& p, PeerId pid) noexcept {
  ++stats_.drop_protocol;
  p.run_blocked = true;  // (placed_run)
  p.run_blocked_until = p.rcv_nxt + p.held.slots();
  fail_current(p, pid, Status::IoError);
}

}  // namespace pollfab::transport
