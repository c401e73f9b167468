// Engine internals shared by the engine's concept files (not a public header): a message being
// sent, a transmit-window slot, and a peer's state, grouped by the concept that owns it.
#pragma once
#include <memory>

#include "transport/congestion.hpp"
#include "transport/engine.hpp"
#include "transport/flow_control.hpp"
#include "transport/iov.hpp"
#include "transport/psn_bitmap.hpp"
#include "transport/reorder_buffer.hpp"
#include "transport/rtt.hpp"

namespace pollfab::transport {

// One message being sent: queued, segmented, in flight, until all its packets are acked. An
// application's send (Origin::App), the request of an RMA/atomic operation (Origin::Rma: its
// RmaSlot completes when the answer is in too), or the engine's answer to a peer's request
// (Origin::Answer: no completion).
struct Engine::SendMsg {
  enum class Origin : uint8_t { App, Rma, Answer };
  SendOp op;
  wire::Type type = wire::Type::Data;
  wire::RmaExt ext;          // RMA/atomic types: the extension header of every segment
  Origin origin = Origin::App;
  uint32_t rma_slot = 0;     // Origin::Rma
  uint64_t len = 0;
  uint32_t next_offset = 0;  // bytes already cut into segments
  Seq32 last_psn;            // PSN of the final segment, valid once segmented
  bool segmented = false;
  uint8_t* inject = nullptr; // this slot's inject buffer (inject_size bytes)
  SendMsg* next = nullptr;   // peer FIFO; then the pinned list
  PinId pin = kNoPin;        // zero copy: segments attached from op.iov under this pin
  Status status = Status::Ok;  // the result, while the completion waits for the pin

  // An application's send (Origin::App) from the pool: op and len, the rest as reset() leaves
  // it but without clearing what an App message never reads (ext: RMA types only) and op
  // (overwritten): the post's fast path.
  void start_app(const SendOp& o, uint64_t bytes) noexcept {
    copy_op(op, o);
    start_app_in_place(bytes);
  }
  // The same for an op the caller wrote into this slot (Engine::send_slot).
  void start_app_in_place(uint64_t bytes) noexcept {
    type = wire::Type::Data;
    origin = Origin::App;
    rma_slot = 0;
    len = bytes;
    next_offset = 0;
    segmented = false;
    next = nullptr;
    pin = kNoPin;
    status = Status::Ok;
  }
  // A fresh message of origin o from the pool (the inject buffer stays this slot's). A field
  // added here is set in start_app() too.
  void reset(Origin o) noexcept {
    op = SendOp{};
    type = wire::Type::Data;
    ext = wire::RmaExt{};
    origin = o;
    rma_slot = 0;
    len = 0;
    next_offset = 0;
    segmented = false;
    next = nullptr;
    pin = kNoPin;
    status = Status::Ok;
  }
};

// An RMA/atomic operation of ours, from its request until both the request is acknowledged
// (its SendMsg finished) and the target's answer arrived (rma.cpp).
struct Engine::RmaSlot {
  RmaOp op;
  uint32_t id = 0;           // wire op_id: generation << 16 | index
  uint64_t len = 0;          // bytes written / read, or the atomic's operand bytes
  Status status = Status::Ok;
  bool in_use = false;
  bool request_done = false; // the request's SendMsg finished
  bool answered = false;     // the answer arrived (or the operation failed without one)
  // A delivery-complete send (kOpDeliveryComplete) rather than an RMA operation: its answer
  // names the message by its first PSN.
  bool message = false;
  bool psn_known = false;
  uint32_t first_psn = 0;
};

// A sent, not yet cumulatively acknowledged packet. Whether it was SACKed is the peer's
// scoreboard bit (Peer::sack_bits), not a field here.
// A bundle (wire::kBundle) is msg and the n_msgs - 1 messages after it in the peer's FIFO, each
// whole; offset and len are msg's (0 and its length).
struct Engine::TxSlot {
  SendMsg* msg = nullptr;
  uint32_t offset = 0;
  uint32_t len = 0;
  uint64_t sent_ns = 0;
  uint16_t tx_count = 0;
  uint16_t n_msgs = 1;
};

// What a message's first segment said (reassembly.cpp): its length, flags, tag and CQ data, its
// first PSN and its segments' payload size (0: a single segment), so a segment arriving above a
// hole is known to be this message's and placed at once (place_early, place_next).
struct MsgHead {
  uint32_t len = 0, flags = 0;
  Seq32 first_psn;
  uint32_t seg = 0;
  uint64_t tag = 0, data = 0;
  static MsgHead of(const wire::Header& h) noexcept {
    return {h.msg_len, h.flags, Seq32(h.psn), (h.flags & wire::kLast) ? 0u : h.payload_len,
            h.tag, h.cq_data};
  }
  // segments in the message (seg > 0)
  uint64_t segs() const noexcept { return (uint64_t(len) + seg - 1) / seg; }
};

struct Engine::Peer {
  // identity and liveness (liveness.cpp)
  PeerAddr addr;
  Route route;
  uint64_t user = ~0ull;
  uint32_t remote_epoch = 0;
  uint32_t retired_epoch = 0;  // the incarnation remote_epoch replaced (its packets are ignored)
  bool dead = false;           // declared failed; comes back only with a new epoch
  uint64_t heard_ns = 0;       // last packet from the peer, or the start of our wait on it
  uint64_t probe_ns = 0;       // when our unanswered probe went out (0 = none)

  // send side: segmentation (segmentation.cpp) and reliability (reliability.cpp)
  Seq32 snd_una, snd_nxt;
  // A piggybacked ACK taken in but not processed yet (Engine::defer_ack): it acknowledges
  // every packet sent to this peer, whose sends make no completion event, so the reply the
  // application is about to post leaves first. Applied right after this peer's next send, at
  // its next packet, or at the next progress round, whichever comes first.
  struct DeferredAck {
    uint64_t rx_ns = 0;  // the packet's arrival: on_ack's clock
    uint32_t ack_psn = 0;
    uint32_t ack_delay_ns = 0;
    uint64_t round = 0;  // Engine::round_ when taken in
    uint16_t credits = 0;
    bool valid = false;
  } dack;
  // window_pkts slots indexed by psn & txw_mask, grown to reorder_window_pkts when the span
  // of the send window needs them (Engine::grow_send_ring)
  std::unique_ptr<TxSlot[]> txw;
  uint32_t txw_mask = 0;
  uint32_t sacked = 0;            // packets in [snd_una, snd_nxt) SACKed
  PsnBitmap sack_bits;            // the SACK scoreboard: bit set iff the PSN was SACKed
  SendMsg* sq_head = nullptr;     // FIFO of messages not yet fully acknowledged
  SendMsg* sq_tail = nullptr;
  SendMsg* sq_next = nullptr;     // first message with segments left to send
  uint32_t queued_msgs = 0;       // messages in that FIFO (sq_head ..): completions waiting
  // Set by a standalone ACK of new data that held out the peer's ACK delay, cleared by any
  // data packet from the peer: the peer sends nothing our ACKs could ride on, so a burst that
  // leaves even one message waiting asks for the ACK at once (Engine::request_ack). Without
  // it a one-way stream of fewer than request_ack's threshold in flight waited ack_delay_ns a
  // window.
  bool ack_waited = false;
  uint64_t rto_deadline_ns = 0;   // 0 = timer not armed
  Seq32 high_sacked;              // highest PSN SACKed (valid when > snd_una)
  uint64_t rack_xmit_ns = 0;      // latest send time of a packet known delivered (RACK)
  uint64_t loss_deadline_ns = 0;  // re-run loss detection then (0 = none)
  RttState rtt;                   // RTT estimator and RTO (rtt.hpp)
  CcState cc;                     // congestion window (congestion.hpp)
  FlowState flow;                 // the receiver's window (flow_control.hpp)

  // receive side: reliability (PSN window, ACKs) and reassembly (reassembly.cpp)
  Seq32 rcv_nxt;
  // PSNs past rcv_nxt we accept and advertise (credits): reorder_window_pkts, or the ring's
  // size if it could not grow (memory short)
  uint32_t rcv_window = 0;
  ReorderBuffer held;                 // packets above rcv_nxt (reorder_buffer.hpp)
  RecvEntry* cur_recv = nullptr;      // message being reassembled into a posted receive
  UnexEntry* cur_unex = nullptr;      // ... or into an unexpected buffer
  MsgHead cur;                        // ... what its first segment said
  // placed_run is off until rcv_nxt reaches run_blocked_until (a message was cut short)
  bool run_blocked = false;
  Seq32 run_blocked_until;
  // The message after the current one, matched early to a posted receive because its first
  // segment arrived above a hole (place_next): its segments above the hole are placed as they
  // arrive, not held. It becomes the current message when its first segment is counted in
  // order (deliver_placed). Set only while a multi-segment current message is in progress.
  RecvEntry* nxt_recv = nullptr;
  MsgHead nxt;
  // messages of the bundle at rcv_nxt already delivered: an attempt that ran out of unexpected
  // buffer space part way resumes after them (the retransmission carries the same messages)
  uint32_t bundle_done = 0;
  // an RMA write being received (rma.cpp): its answer (reserved at the first segment), the
  // verdict of the MR check and where the data goes
  SendMsg* rma_answer = nullptr;
  SendMsg* dc_answer = nullptr;       // the delivery answer of the message being reassembled
  Status rma_status = Status::Ok;
  uint8_t* rma_base = nullptr;
  void* rma_region = nullptr;
  uint32_t rma_pending = 0;           // our RMA/atomic operations to this peer not yet finished
  uint64_t data_rx_ns = 0;            // newest data packet's arrival (ack_delay_ns)
  uint16_t adv_credits = 0;           // credits last advertised (flow_control.hpp)
  uint32_t ack_pending = 0;           // packets received but not yet acknowledged
  uint32_t ack_msgs = 0;              // messages they completed (whole ones, last segments)
  uint64_t ack_deadline_ns = 0;
  // The sender asked (ACK_REQ on data: it waits for its completions): the ACK goes at the first
  // progress() round that brings no more data from it, not after ack_delay_ns; with ACK_QUICK
  // (a sender with few messages in flight) at the end of the round that brought the request.
  // Without QUICK, a window of 16 small sends waited, each window, for its receiver's
  // application to re-post its receives and poll again (docs/performance.md item 77).
  bool ack_idle = false;
  bool ack_quick = false;
  bool rx_this_round = false;         // data arrived from p since the last progress() round
  bool ack_now = false;

  // counters (PeerStats)
  uint64_t tx_pkts = 0, tx_bytes = 0, rx_pkts = 0, rx_bytes = 0, retx_pkts = 0, dup_pkts = 0;
  uint64_t rto_events = 0;
  // What pump() last stopped for with segments left to send (Engine::Block; None: it did not),
  // since when, and the waits closed so far by cause (PeerStats blocked_*_ns).
  uint8_t blocked = 0;
  uint64_t blocked_since_ns = 0;
  uint64_t blocked_ns[size_t(Block::Tx)] = {};  // by Block - 1
  // The receiver's current hole: arrival of the first packet held above it (0 = none).
  uint64_t hole_since_ns = 0;
  uint64_t holes = 0, hole_ns = 0;

  // Sent and not yet cumulatively acknowledged: the span of the send window, in PSNs.
  uint32_t inflight() const noexcept { return static_cast<uint32_t>(snd_nxt - snd_una); }
  // RFC 6675's "pipe": of those, the ones not known to have arrived (not SACKed). A lost packet
  // counts once, through its retransmission (loss detection resends it when it marks it lost).
  uint32_t pipe() const noexcept { return inflight() - sacked; }
  TxSlot& slot(Seq32 psn) noexcept { return txw[psn.raw() & txw_mask]; }
  const TxSlot& slot(Seq32 psn) const noexcept { return txw[psn.raw() & txw_mask]; }
  uint32_t send_ring_slots() const noexcept { return txw_mask + 1; }
};

inline bool Engine::ack_news(const Peer& p, const wire::Header& h) noexcept {
  const Seq32 ack(h.ack_psn);
  return ack != p.snd_una || h.sack || ack + h.credits > p.flow.snd_edge;
}

inline bool Engine::ack_due(const Peer& p) const noexcept {
  return p.ack_pending >= cfg_.ack_coalesce_pkts || p.ack_msgs >= cfg_.ack_coalesce_msgs;
}

// Inline in encode_segment_header (every packet's header) and send_ack.
[[gnu::always_inline]] inline wire::AckFields Engine::take_ack(Peer& p, uint8_t* ext,
                                                               uint16_t& ext_len) noexcept {
  wire::AckFields a;
  a.ack_psn = p.rcv_nxt.raw();
  uint64_t sack = 0;  // (build_sack's out-parameter: a local, so `a` can stay in registers)
  ext_len = p.held.empty() ? 0 : build_sack(p, sack, ext);
  a.sack = sack;
  a.credits = credits_for(p);
  p.adv_credits = a.credits;
  if (p.data_rx_ns) {
    const uint64_t d = now_ > p.data_rx_ns ? now_ - p.data_rx_ns : 0;
    a.ack_delay_ns = static_cast<uint32_t>(std::min<uint64_t>(d, 0xffffffffu));
  }
  // A piggybacked ACK whose SACK does not fit the header leaves a standalone one pending.
  if (ext || !ext_len) {
    p.ack_pending = 0;
    p.ack_msgs = 0;
    p.ack_now = false;
    p.ack_idle = p.ack_quick = false;
  }
  return a;
}

// Inline (deliver_whole, every small message received): receive.cpp's finish_recv for the rest.
inline void Engine::complete_whole(RecvEntry* r, PeerId pid, uint32_t len, uint32_t flags,
                                   uint64_t tag, uint64_t cq_data) noexcept {
  if (len > r->cap || r->parent || (r->op.flags & kOpMultiRecv)) {  // truncated, multi-recv
    finish_recv(r, pid, len, flags, tag, cq_data, len > r->cap ? Status::Truncated : Status::Ok);
    return;
  }
  // The common case, as finish_recv would report it, joins this packet's burst.
  RecvDone& d = recv_done_[recv_done_n_++];
  d.context = r->op.context;
  d.len = len;
  d.buf = r->op.iov_count ? r->op.iov[0].iov_base : nullptr;
  d.cq_data = cq_data;
  d.tag = tag;
  d.peer_user = peers_[pid]->user;
  d.peer = pid;
  d.flags = kCompRecv | ((flags & wire::kTagged) ? kCompTagged : 0) |
            ((flags & wire::kCqData) ? kCompRemoteCqData : 0);
  d.cq_entry = r->op.flags & kOpCompletion;
  matcher_->release(r);
  if (recv_done_n_ == kRecvDoneBurst) flush_recv_done();
}

}  // namespace pollfab::transport
