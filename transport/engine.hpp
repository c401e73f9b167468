// Engine: pollfab's reliable transport for one endpoint (v1).
//
// One Engine serves one OFI endpoint. It knows neither DPDK nor libfabric: it sees packets
// through PacketIo, time through Clock, and reports completions to a CompletionSink.
//
// Reliable mode (FI_EP_RDM), per peer: a send window [snd_una, snd_nxt) bounded by
// window_pkts, the congestion window and the receiver's credits; a receive window that holds
// packets above a hole (reorder_window_pkts) and delivers in PSN order; cumulative ACKs with a
// SACK bitmap, piggybacked or standalone; loss recovery by SACK, RACK (RFC 8985), a tail probe
// and the RTO (RFC 6298); delay-based congestion control; segmentation of messages and
// bundling of small ones; epochs for restarted peers; peer failure after peer_timeout_ns.
// docs/transport.md states each rule and why (Sending, Receiving, Acknowledgements, Loss
// recovery, Flow control, Congestion control, Epochs, Peer failure); its wire format is
// docs/wire-format.md.
// RMA and atomics (rma.cpp): requests travel in the PSN stream like messages; the target
// checks key, range and access through MrLookup before touching memory and answers every
// request; an operation completes when its request is acknowledged and its answer is in.
// Datagram mode (FI_EP_DGRAM): one packet per message, no ACKs, no retransmission; a datagram
// with no posted receive is dropped and counted.
//
// Receive matching (matcher.hpp, its rule there): posted receives and unexpected messages in
// FIFO order, untagged and tagged; multi-recv, peek, claim and discard as in fi_tagged(3).
// Unexpected messages are buffered up to max_unexpected_bytes; beyond that the packet is not
// acknowledged and the sender retransmits later (back-pressure through the RTO and credits).
//
// Where each concept lives (Engine is the coordinator: engine.cpp runs peers, progress and the
// receive dispatch; the other files implement its members by concept):
//   reliability.cpp   PSN windows, ACK/SACK, RACK + tail probe, RTO (with rtt.hpp)
//   congestion.hpp    congestion control, pure functions over CcState
//   flow_control.hpp  receiver credits, both sides, pure functions
//   liveness.cpp      peer failure, probes, epochs (restarted peers)
//   segmentation.cpp  posting sends, cutting them into segments, bundling small messages
//   reassembly.cpp    placing received segments in their receive, in PSN order
//   matcher.hpp       posted and unexpected receive queues; receive.cpp turns matches into
//                     completions
//   transmit.cpp      packet buffers, tx batching, send completions and zero-copy pins
//   rma.cpp           RMA and atomics: requests, the target's service, answers (atomic.hpp)
//   datagram.cpp      FI_EP_DGRAM
//
// Thread-safety: none. The owner (endpoint/domain) serialises all calls.
// Hot path: send/recv/on_packet/progress allocate nothing (pools are sized at construction)
// except the buffer of an unexpected message larger than kInlineUnexpectedBytes.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "lib/util/pool.hpp"
#include "lib/util/seq.hpp"
#include "lib/util/status.hpp"
#include "transport/clock.hpp"
#include "transport/congestion.hpp"
#include "transport/engine_config.hpp"
#include "transport/engine_stats.hpp"
#include "transport/matcher.hpp"
#include "transport/mr_lookup.hpp"
#include "transport/ops.hpp"
#include "transport/packet_io.hpp"
#include "transport/reorder_buffer.hpp"
#include "transport/rx_continuation.hpp"
#include "transport/wire.hpp"

namespace pollfab::transport {

using util::Seq32;
using util::Status;

class Engine {
 public:
  // The engine keeps references to io, clock and sink; they must outlive it.
  Engine(const EngineConfig& cfg, PacketIo& io, Clock& clock, CompletionSink& sink);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const EngineConfig& config() const noexcept { return cfg_; }
  uint32_t epoch() const noexcept { return cfg_.epoch; }
  // A counter counts this endpoint's send completions (fi_cntr(3) FI_SEND, bound before
  // fi_enable): completions that make no CQ entry are seen there, so their ACKs are never
  // deferred (can_defer_ack). Called under the port lock, before traffic.
  void set_send_counter_bound(bool bound) noexcept { send_counter_bound_ = bound; }
  // Changes this endpoint's id (fi_setname before any traffic). A packet remembered for the
  // next segment's comparison (rx_cont_) was checked against the old id: forgotten.
  void set_ep_id(uint16_t id) noexcept {
    cfg_.ep_id = id;
    rx_cont_.valid = false;
  }
  // Payload bytes one packet carries (max_packet_bytes - header).
  uint32_t segment_bytes() const noexcept { return seg_bytes_; }

  // Returns the peer for addr, creating its state if new. kNoPeer if max_peers is reached.
  PeerId peer(const PeerAddr& addr);
  // Returns the peer for addr or kNoPeer (never creates).
  PeerId find_peer(const PeerAddr& addr) const noexcept;
  const PeerAddr& peer_addr(PeerId id) const noexcept;
  // Forgets every peer's provider tag (after the AV changed).
  void clear_peer_users() noexcept;
  // Provider tag for a peer (e.g. its fi_addr), reported in receive completions.
  void set_peer_user(PeerId id, uint64_t user) noexcept;
  uint64_t peer_user(PeerId id) const noexcept;

  // Posts a send. It completes once the target acknowledged it (FI_TRANSMIT_COMPLETE), or with
  // kOpDeliveryComplete once the target placed it in a receive buffer or discarded it
  // (FI_DELIVERY_COMPLETE: the target answers). Reliable mode: its packets leave at once if it
  // is the first post since the last progress() and nothing of ours is in flight to its peer;
  // other posts queue until the next progress() or a full burst (kTxBurst packets), and kOpMore
  // (FI_MORE) always queues. Datagrams always
  // leave at once. Returns Ok (accepted; completes through the sink), NoResource (retry after
  // progress), TooBig (length > max_msg_size, or > inject_size for kOpInject, or > one
  // segment in datagram mode), Invalid (unknown peer or iov_count > kMaxIov).
  Status send(const SendOp& op) noexcept;
  // Posts a receive (fi_msg(3), fi_tagged(3)). op.flags may add
  //   kOpMultiRecv  the buffer takes message after message (each its own completion, the
  //                 one that releases the buffer flagged kCompMultiRecv);
  //   kOpPeek       report the first matching unexpected message (len = its length, tag,
  //                 CQ data, source; no data moved) or complete with NoMessage; with
  //                 kOpClaim also reserve it for a later kOpClaim receive of the same
  //                 context; with kOpDiscard drop it;
  //   kOpClaim      receive (or, with kOpDiscard, drop) the message reserved under
  //                 op.context.
  // Returns Ok, NoResource, Invalid (bad peer or iov count; kOpClaim without a reserved
  // message).
  Status recv(const RecvOp& op) noexcept;
  // The post paths without an intermediate operation (the provider's fast path: a SendOp or
  // RecvOp built on the caller's stack and copied into the engine's slot is a second write of
  // every field, and the copy's loads wait on the stores just made).
  //   send_slot(): the op of a free send slot, for the caller to fill in place (every field;
  //     iov entries from iov_count on are ignored), then post_send(op) posts it exactly as
  //     send(*op) would (same checks, same returns; on any error the slot is free again).
  //     nullptr: no slot free (NoResource), or a datagram engine (use send()).
  //   recv_entry(): a free receive entry whose op the caller fills in place, then
  //     post_recv(r) posts it as recv(r->op) would; kOpPeek / kOpClaim receives (which need
  //     no entry) are refused with Invalid and go through recv(). nullptr: rx_size receives
  //     are in use (NoResource). On any error the entry is free again.
  // (send_slot's common case is inline: a free slot of a reliable engine. SendMsg is
  // incomplete here; its op is its first member, checked in segmentation.cpp.)
  SendOp* send_slot() noexcept {
    if (cfg_.reliable && send_pool_.in_use() < cfg_.tx_size) [[likely]]
      return reinterpret_cast<SendOp*>(send_pool_.get());
    return send_slot_slow();
  }
  Status post_send(SendOp* op) noexcept;
  RecvEntry* recv_entry() noexcept { return matcher_->alloc_recv(); }
  Status post_recv(RecvEntry* r) noexcept;
  // Starts an RMA or atomic operation (fi_rma(3), fi_atomic(3)); it completes through the sink
  // (kCompRma or kCompAtomic, with kCompRead or kCompWrite) once the target has answered:
  // Ok, or the target's refusal (Invalid: unknown key; Permission: range or access;
  // NotSupported: op/datatype), or TimedOut/IoError if the peer fails. Returns Ok (accepted),
  // NoResource (retry after progress), TooBig (length > max_msg_size, inject > inject_size,
  // atomic operand > kMaxAtomicBytes), NotSupported (datagram engine, invalid op/datatype),
  // Invalid (unknown peer, too many iovs, operand/compare/result sizes not count elements).
  Status rma(const RmaOp& op) noexcept;
  // The target side's region lookup (nullptr: every request is refused with Invalid).
  void set_mr_lookup(MrLookup* mr) noexcept { mr_ = mr; }
  // Cancels the posted (not yet matched) receive with this context: it completes with
  // Status::Canceled. Returns false if no such receive is waiting (fi_cancel(3)).
  bool cancel_recv(void* context) noexcept;
  // Shared receive context (fi_srx_context, fi_endpoint(3) "Shared Contexts"): from now on
  // this engine matches its messages against m, which other engines may share and which must
  // outlive this engine's use of it (leave_shared_matcher). Receives posted to m must name no
  // peer (kAnyPeer): peer ids are per engine. recv(), cancel_recv() and peeks on any sharing
  // engine act on m; a message that arrived on engine E completes through E's sink whichever
  // engine the receive was posted through. A peer's death fails no receive of m (they belong
  // to every sharer). Returns false (and changes nothing) if this engine's own matcher holds a
  // receive or a message.
  bool share_matcher(Matcher& m) noexcept;
  // Stops using the shared matcher (call it when the engine closes; it receives nothing
  // afterwards): receives taken by messages still arriving complete with Status::Canceled
  // through this engine's sink; its unexpected messages are freed; m's posted receives stay.
  void leave_shared_matcher() noexcept;
  bool shares_matcher() const noexcept { return !own_matcher_; }

  // Feeds one received packet whose pollfab header is at pkt.data (pkt.len bytes) and whose
  // sender's host address is pkt.src. Takes ownership of pkt (freed or held). rx_ns: when it
  // was received (the clock read once per rx burst by the caller; the overload without it
  // reads the clock itself).
  void on_packet(PacketBuf& pkt, uint64_t rx_ns) noexcept;
  void on_packet(PacketBuf& pkt) noexcept { on_packet(pkt, clock_.now_ns()); }
  // Runs timers (retransmission, delayed ACKs), sends what the windows allow, flushes. now_ns:
  // the clock read by the caller for this round (the overload without it reads the clock).
  void progress(uint64_t now_ns) noexcept;
  void progress() noexcept { progress(clock_.now_ns()); }
  // Earliest time (ns) at which progress() has timer work; UINT64_MAX if none.
  uint64_t next_deadline_ns() const noexcept;
  // True if sends are queued or in flight, packets are waiting for the link, or received
  // packets for their free at the next round.
  bool busy() const noexcept;
  // True if no send of ours waits for an acknowledgement.
  bool sends_settled() const noexcept;
  // Sends what posts have queued now: at the start of every progress round (before its receive
  // burst), and before a disconnect or a close, which must not overtake data the application
  // posted before them.
  void flush_posted() noexcept {
    if (txq_len_) flush();
  }
  // Acknowledges everything received at the next progress() (close-time flush).
  void ack_all_now() noexcept;
  // Time (ns) the last packet was received, 0 if none.
  uint64_t last_rx_ns() const noexcept { return last_rx_ns_; }

  const EngineStats& stats() const noexcept { return stats_; }
  // Number of peers known (PeerId 0 .. peer_count()-1).
  uint32_t peer_count() const noexcept { return static_cast<uint32_t>(peers_.size()); }
  // Snapshot of one peer's counters; id < peer_count().
  PeerStats peer_stats(PeerId id) const noexcept;
  // True if the peer was declared dead (peer failure); false for unknown ids.
  bool peer_dead(PeerId id) const noexcept;
  // Objects in use (tests check for leaks at quiescence).
  uint32_t sends_in_use() const noexcept { return send_pool_.in_use(); }
  uint32_t recvs_in_use() const noexcept { return matcher_->recvs_in_use(); }
  uint32_t unexpected_in_use() const noexcept { return matcher_->unexpected_count(); }
  uint32_t held_packets() const noexcept;
  // Tx buffers allocated in a burst and kept for the next packets (not leaked).
  uint32_t cached_packets() const noexcept { return alloc_cache_len_; }

  static constexpr uint32_t kInlineUnexpectedBytes = UnexEntry::kInlineBytes;
  static constexpr uint32_t kTxQueue = 64;
  // Packets a post flushes at, when it is not the first since progress() (transmit.cpp).
  static constexpr uint32_t kTxBurst = 32;
  // Send completions handed to the sink in one call (on_ack), at most.
  static constexpr uint32_t kSendDoneBurst = 32;
  // Receive completions of one packet handed to the sink in one call, at most.
  static constexpr uint32_t kRecvDoneBurst = 64;
  // Send slots beyond tx_size, kept for answers to peers' RMA/atomic requests.
  static constexpr uint32_t kAnswerReserve = 64;

 private:
  struct SendMsg;
  struct TxSlot;
  struct Peer;
  struct RmaSlot;

  Peer& P(PeerId id) noexcept { return *peers_[id]; }

  // peers (engine.cpp)
  PeerId create_peer(const PeerAddr& addr);
  // Sequence, timer, flow and congestion state of a new (or restarted) peer.
  void restart_protocol(Peer& p) noexcept;

  // segmentation (segmentation.cpp)
  // Sends what the windows allow of p's queue; `now` is the clock at the call (one reading per
  // post or progress round, not one per packet). bundle_tried: a message the caller just
  // failed to bundle (enqueue), not tried again. lead: the caller is an application's send to
  // an idle peer that may leave at once (enqueue): if the first segment sent is a message's
  // first of several (at most kTxBurst), it is flushed alone, before the others are built.
  // Longer messages keep one path: their post builds segments for longer than the first one's
  // probe may wait for an ACK, which the receiver cannot answer until the post is done.
  void pump(Peer& p, uint64_t now, const SendMsg* bundle_tried = nullptr,
            bool lead = false) noexcept;
  // What stopped pump() with segments left to send (Peer::blocked; PeerStats blocked_*_ns).
  enum class Block : uint8_t { None, Window, Cwnd, Credits, Ring, Tx };
  // p's wait changes to `b` at `now`: the open wait (if another cause) is added to its total.
  static void note_blocked(Peer& p, Block b, uint64_t now) noexcept;
  // Writes the header (and RMA extension) of segment [offset, offset + len) of m at out, with
  // the ACK it piggybacks (take_ack), built straight into out.
  void encode_segment_header(Peer& p, const SendMsg& m, uint32_t offset, uint32_t len, Seq32 psn,
                             bool retransmit, uint8_t* out) noexcept;
  // Builds and queues the packet of one segment of m (n_msgs > 1: m and the n_msgs - 1 whole
  // messages after it, a bundle being resent). False: no buffer or queue room.
  bool emit_segment(Peer& p, SendMsg& m, uint32_t offset, uint32_t len, Seq32 psn,
                    bool retransmit, uint32_t n_msgs = 1) noexcept;
  // Bundling (wire::kBundle): m, whole and small, joins the packet of the message before it
  // when that packet is p's newest, still queued and unsealed, with room. True if it did.
  bool try_bundle(Peer& p, SendMsg& m) noexcept;
  // try_bundle, inline in enqueue; post: an application's post (enqueue), which may send the
  // tail at once (segmentation.cpp)
  inline bool bundle_into_tail(Peer& p, SendMsg& m, bool post) noexcept;
  // May m share a packet with others (a plain message of the application's, copied)?
  bool bundleable(const SendMsg& m) const noexcept;
  // Appends m as a bundle entry to pkt (a Data packet being built): the bytes appended, 0 if
  // it does not fit. The header is left alone: its BUNDLE flag is mark_bundle's, its
  // payload_len flush()'s.
  inline uint32_t append_message(PacketBuf& pkt, const SendMsg& m) noexcept;
  // Sets the BUNDLE flag in pkt's header (when its second message joins it).
  static void mark_bundle(PacketBuf& pkt) noexcept;

  // reassembly (reassembly.cpp)
  bool deliver(Peer& p, PeerId pid, const wire::Header& h, const uint8_t* payload) noexcept;
  // One message's segment (h describes it, payload its bytes); deliver() of a plain packet.
  bool deliver_message(Peer& p, PeerId pid, const wire::Header& h, const uint8_t* payload) noexcept;
  // Each message of a bundle in turn, from p.bundle_done on (deliver_whole for each).
  bool deliver_bundle(Peer& p, PeerId pid, const wire::Header& h, const uint8_t* payload) noexcept;
  // One whole message (flags .. data; h: the packet's header), of a bundle or alone in its
  // packet: into a matching posted receive at once, else through deliver_message
  // (unexpected). False: no room.
  inline bool deliver_whole(Peer& p, PeerId pid, const wire::Header& h, uint16_t flags,
                            uint32_t len, uint64_t tag, uint64_t cq_data,
                            const uint8_t* data) noexcept;
  void abort_current(Peer& p, PeerId pid) noexcept;
  void fail_current(Peer& p, PeerId pid, Status st) noexcept;

  // reliability: receive window and ACKs, loss recovery (reliability.cpp)
  void on_data(Peer& p, PeerId pid, PacketBuf& pkt, const wire::Header& h) noexcept;
  void drain_held(Peer& p, PeerId pid) noexcept;
  // p's hole (PeerStats holes, hole_ns) ends if nothing is held any more: its time is added.
  void close_hole(Peer& p) noexcept;
  // reassembly (reassembly.cpp): a segment above a hole that provably belongs to the message
  // being received is copied to its place at once (true; the caller frees the packet)
  bool place_early(Peer& p, const wire::Header& h, const uint8_t* payload) noexcept;
  // ... or to the message after it (Peer::nxt_recv): its first segment matched early to a
  // posted receive, its later segments placed into it (true, as place_early)
  bool place_next(Peer& p, PeerId pid, const wire::Header& h, const uint8_t* payload) noexcept;
  void promote_next(Peer& p, PeerId pid) noexcept;
  // a run of the current message's segments placed early, counted in order at once (n; 0: none)
  uint32_t placed_run(Peer& p, PeerId pid) noexcept;
  // the in-order accounting of a segment of the current message already in place
  void deliver_placed(Peer& p, PeerId pid, const ReorderBuffer::Placed& pl) noexcept;
  // bytes of the message being received so far (UINT64_MAX: none is)
  static uint64_t current_received(const Peer& p) noexcept;
  // copies a segment's payload to its offset in the message being received
  void place_bytes(Peer& p, uint64_t off, const uint8_t* payload, uint32_t len) noexcept;
  // ... in a posted receive r (what lies past its capacity is truncated)
  static inline void place_in(const RecvEntry& r, uint64_t off, const uint8_t* payload,
                              uint32_t len) noexcept;
  // a segment of `len` bytes at the current message's end was placed: finish it if `last`
  void advance_current(Peer& p, PeerId pid, uint32_t len, bool last) noexcept;
  bool grow_send_ring(Peer& p) noexcept;
  // n packets received, not acknowledged yet: the first starts the ACK delay
  void note_ack_pending(Peer& p, uint32_t n = 1) noexcept;
  // ack_coalesce_pkts packets or ack_coalesce_msgs messages wait for a standalone ACK
  // (EngineConfig). Inline (engine_state.hpp): every data packet and every peer walk.
  inline bool ack_due(const Peer& p) const noexcept;
  // False for the ACK a data packet only repeats (every segment of a one-way stream, every
  // continuation segment, piggybacks the same one): nothing newly acknowledged or SACKed and a
  // window edge no further than the one held. on_ack would change nothing for it (flow_on_ack
  // keeps the edge; credit_stalled holds only while snd_nxt is at or past that edge), so the
  // call is left out.
  static bool ack_news(const Peer& p, const wire::Header& h) noexcept;  // (engine_state.hpp)
  // Off the path a ping-pong's round trip waits for (Peer::dack): the ACK a request
  // piggybacks for an earlier reply is processed after the next reply leaves (or at p's next
  // packet, a due timer, the next round, a send that finds the tx slots full). Only when it
  // acknowledges everything sent to p (p is idle once it is applied), carries no SACK, and
  // completes at most kDeferAckMaxMsgs of the application's sends that asked for no CQ entry
  // and pin nothing, with no send counter bound: nothing the application sees waits for it.
  bool can_defer_ack(const Peer& p, const wire::Header& h) const noexcept;
  void defer_ack(Peer& p, const wire::Header& h) noexcept;
  void apply_deferred_ack(Peer& p) noexcept;
  void apply_deferred_acks() noexcept;  // every peer's
  static constexpr uint32_t kDeferAckMaxMsgs = 4;
  // The ACK p's next packet carries, from p's receive state: the cumulative PSN, the SACK (its
  // first 64 bits; the rest at ext, a standalone ACK's extension, ext_len its bytes; without
  // ext, ext_len 1 if the SACK does not fit the header), the credits (advertised from now on)
  // and how long the newest data packet has waited (ack_delay). p's ACK counts as sent
  // (ack_pending cleared) unless a piggybacked one could not carry all its SACK.
  inline wire::AckFields take_ack(Peer& p, uint8_t* ext, uint16_t& ext_len) noexcept;
  uint16_t build_sack(Peer& p, uint64_t& sack, uint8_t* ext) noexcept;
  void send_ack(Peer& p) noexcept;
  // late: a deferred ACK (apply_deferred_ack), applied after packets it cannot speak of left.
  void on_ack(Peer& p, const wire::Header& h, const uint8_t* ext, uint32_t ext_len,
              bool late = false) noexcept;
  void on_rto(Peer& p, uint64_t now) noexcept;
  void detect_loss(Peer& p, uint64_t now) noexcept;
  // RACK/probe timing of p, ns: rtt (srtt, or rto_initial before a sample), reo (reordering
  // window: rtt/4, at least 2 us), pto (probe timeout: 2 rtt + reo + ack delay).
  struct LossTiming {
    uint64_t rtt, reo, pto;
  };
  LossTiming loss_timing(const Peer& p) const noexcept;
  static uint64_t next_probe_ns(const TxSlot& t, uint64_t pto) noexcept;
  void arm_probe(Peer& p) noexcept;  // probe timer for snd_una if nothing else is armed
  bool resend(Peer& p, Seq32 psn, uint64_t now) noexcept;
  // Credits this receiver advertises to p (flow_control.hpp receiver_credits).
  uint16_t credits_for(const Peer& p) const noexcept;

  // liveness (liveness.cpp)
  void reset_peer(Peer& p, PeerId pid, Status st) noexcept;
  // Declares p dead, or probes it, if due at now.
  void check_liveness(Peer& p, PeerId pid, uint64_t now) noexcept;
  // When check_liveness acts on p next (declares it dead or probes it); UINT64_MAX: never.
  uint64_t liveness_deadline(const Peer& p) const noexcept;
  // progress()'s walk over the peers (deferred ACKs, held packets, liveness, timers, queued
  // sends, credit updates, ACKs). A round that is not due one (scan_due_, scan_at_ns_) has
  // nothing to do for any peer.
  // Plan: also find when the next walk is due (scan_at_ns_); a walk after an event does not
  // (the next round's walk plans). Inline in progress, its one caller.
  template <bool Plan>
  inline void scan_peers(bool credit_update) noexcept;
  // Inline in engine.cpp (next_deadline_ns, scan_peers' plan, the debug check). When p's
  // timers have work (ns): RTO, loss probe, ACK delay; 0 for an ACK due at once or a deferred
  // ACK; UINT64_MAX if none; liveness aside (liveness_deadline). work_every_round: p has work
  // at every round (sends waiting: pump retries; a packet held at rcv_nxt; ACKs to coalesce).
  inline uint64_t timers_due_ns(const Peer& p) const noexcept;
  inline bool work_every_round(const Peer& p) const noexcept;
#if POLLFAB_DEBUG_CHECKS
  // A peer has work due now that a walk would do (a skipped round must find none).
  bool peer_work_due() const noexcept;
#endif

  bool waiting_on(const Peer& p) const noexcept;    // its silence for peer_timeout = dead
  bool probe_due_to(const Peer& p) const noexcept;  // probed after a quarter timeout of silence
  void declare_dead(Peer& p, PeerId pid) noexcept;
  void fail_posted(PeerId pid, bool all) noexcept;
  // A packet from p carries src_epoch: handles a restarted peer. False: drop the packet.
  bool check_epoch(Peer& p, PeerId pid, uint32_t src_epoch) noexcept;
  // A packet addressed to an earlier incarnation of this engine (dst_epoch stale).
  void on_stale_epoch(const PeerAddr& a, const wire::Header& h) noexcept;

  // queues m behind p's other sends and sends what the windows allow (segmentation.cpp);
  // true if p was idle before it (nothing of ours in flight: flush_after_post's `idle`).
  // enqueue is its body, inline in start_send (an application's post); queue_msg calls it for
  // the rest (RMA, atomics, their answers).
  bool queue_msg(Peer& p, SendMsg* m) noexcept;
  inline bool enqueue(Peer& p, SendMsg* m) noexcept;
  // payload bytes per segment of m (less the RMA extension header for RMA types)
  uint32_t seg_cap(const SendMsg& m) const noexcept;

  // RMA and atomics (rma.cpp)
  bool on_rma(Peer& p, PeerId pid, const wire::Header& h, const uint8_t* payload) noexcept;
  bool serve_write(Peer& p, PeerId pid, const wire::Header& h, const wire::RmaExt& e,
                   const uint8_t* data, uint32_t len) noexcept;
  bool serve_read(Peer& p, PeerId pid, const wire::RmaExt& e) noexcept;
  bool serve_atomic(Peer& p, PeerId pid, const wire::Header& h, const wire::RmaExt& e,
                    const uint8_t* data, uint32_t len) noexcept;
  void on_answer(PeerId pid, const wire::Header& h, const wire::RmaExt& e, const uint8_t* data,
                 uint32_t len) noexcept;
  SendMsg* new_answer(PeerId pid, uint32_t op_id) noexcept;
  Status resolve(uint64_t key, uint64_t addr, uint64_t len, uint32_t access, uint8_t** out,
                 void** region) noexcept;
  void remote_event(PeerId pid, uint32_t flags, uint64_t len, uint64_t cq_data) noexcept;
  // Takes a free RmaSlot for op (len: its data bytes; message: a delivery-complete send),
  // counts it against its peer and returns its index; the caller checked rma_free_.
  uint32_t open_slot(const RmaOp& op, uint64_t len, bool message) noexcept;
  void rma_request_done(SendMsg* m, Status st) noexcept;
  void finish_rma(RmaSlot& s) noexcept;
  void fail_rma(PeerId pid, Status st) noexcept;

  // receive posting and completions (receive.cpp)
  void post_multi_recv(RecvEntry* b) noexcept;
  Status peek(const RecvOp& op) noexcept;
  Status recv_claimed(const RecvOp& op) noexcept;
  void discard(UnexEntry* u) noexcept;
  // Sends u's delivery answer (FI_DELIVERY_COMPLETE) once a receive or a discard took it.
  void answer_delivery(UnexEntry* u) noexcept;
  // u (taken from its queue) goes to r: completes now, or when its last segment arrives.
  void receive_unexpected(UnexEntry* u, RecvEntry* r) noexcept;
  // The completion of a peek or of a discard: u's metadata (or none), len bytes.
  void finish_probe(const RecvOp& op, const UnexEntry* u, uint64_t len, Status st) noexcept;
  void finish_recv(RecvEntry* r, PeerId pid, uint32_t msg_len, uint32_t flags, uint64_t tag,
                   uint64_t data, Status st) noexcept;
  void finish_unexpected(UnexEntry* u) noexcept;
  // The engine an unexpected message arrived on (another one under a shared matcher): the one
  // whose peer table, sink and delivery answers it uses.
  Engine* owner_of(const UnexEntry* u) noexcept {
    return u->owner ? static_cast<Engine*>(const_cast<void*>(u->owner)) : this;
  }

  // transmit: buffers, batching, send completions (transmit.cpp)
  bool alloc_pkt(PacketBuf& out) noexcept;
  // A received packet the engine is done with: back to the I/O layer with the others of its
  // burst (one bulk free at the next progress() of a round that received nothing, or when
  // kRxFree wait), not one by one.
  void rx_free(PacketBuf& pkt) noexcept;
  void flush_rx_free() noexcept;
  bool enqueue_tx(PacketBuf& pkt) noexcept;
  // The tx queue's next entry holding a fresh packet buffer, to be filled in place and then
  // queued by queue_tx() with nothing queued or flushed in between; null when the queue stays
  // full after a flush or no buffer is left. (A buffer built aside and copied in by
  // enqueue_tx costs two 64-byte copies a packet.)
  PacketBuf* next_tx() noexcept;
  void queue_tx() noexcept;
  // Hands the queued packets to the link. Data segments that waited in the queue since their
  // post get their send time restamped (one clock reading), so a wait for the next progress()
  // never counts as network RTT (RTT samples, RACK, the congestion controller); when the
  // oldest packet in flight is among them, its timers restart from that reading. Each packet's
  // ACK request (request_ack), payload_len and checksum are written here as it leaves: a
  // queued packet reaches the link only through flush().
  void flush(bool restamp = true) noexcept;
  void restart_timers(Peer& p, uint64_t now) noexcept;  // RTO and probe for snd_una from now
  // Sets ACK_REQ on pkt (t: its send slot, null if not fresh data) when it is its peer's
  // newest packet and the peer holds ack_req_msgs_ unacknowledged sends and nothing left to
  // send (one send, when Peer::ack_waited). flush() asks it of every packet it finishes.
  inline void request_ack(PacketBuf& pkt, const TxSlot* t) noexcept;
  // After a post: flush unless kOpMore, if no post has flushed eagerly since progress() and
  // its peer was idle (nothing of ours in flight to it before this post: `idle`) or it ends an
  // FI_MORE batch (stamped now: the batch's posts may have read no clock), or kTxBurst packets
  // wait. A post behind messages still in flight queues: it leaves with the next progress
  // round's burst, bundled with the posts after it, not alone (a window of small sends
  // otherwise opened every refill with a one-message packet), unless its bundle then holds as
  // many messages as are ahead of it, sent or queued (bundle_into_tail sends it at once).
  // Inline: the common post (no FI_MORE, none pending, behind sends in flight or after the
  // round's eager flush, fewer than kTxBurst waiting) only queues.
  void flush_after_post(uint32_t op_flags, bool idle) noexcept {
    if (!(op_flags & kOpMore) && !more_batch_ && !(tx_eager_ && idle) && txq_len_ < kTxBurst)
      [[likely]] return;
    flush_after_post_slow(op_flags, idle);
  }
  void flush_after_post_slow(uint32_t op_flags, bool idle) noexcept;
  void seal(PacketBuf& pkt) noexcept;
  // The send's completion, once the I/O layer holds no reference to its memory (zero copy):
  // until then it waits on the pinned list (release_pinned, from progress).
  void complete_send(SendMsg* m, Status st) noexcept;
  // Completes p's queued messages the cumulative ACK (snd_una) has passed, oldest first: an
  // application's send with nothing pinned in a burst (CompletionSink::on_sends_completed),
  // the rest through complete_send.
  void complete_acked(Peer& p) noexcept;
  // A whole message placed in r, a posted receive: the completion, in this packet's burst
  // (CompletionSink::on_recvs_completed) when it is the common case (not truncated, not a
  // multi-recv slice), else through finish_recv.
  [[gnu::always_inline]] inline void complete_whole(RecvEntry* r, PeerId pid, uint32_t len,
                                                    uint32_t flags, uint64_t tag,
                                                    uint64_t cq_data) noexcept;
  // Hands the receive completions complete_whole gathered to the sink (deliver() when a
  // packet's delivery returns; finish_recv before any other).
  void flush_recv_done() noexcept {
    if (recv_done_n_) {
      const uint32_t n = recv_done_n_;
      recv_done_n_ = 0;
      sink_.on_recvs_completed(recv_done_, n);
    }
  }
  void finish_send(SendMsg* m, Status st) noexcept;
  void release_pinned() noexcept;

  // datagrams (datagram.cpp)
  Status send_dgram(const SendOp& op, uint64_t len) noexcept;
  // send()'s and post_send()'s checks on an operation; Ok or the error send() returns. len:
  // the bytes its iov holds (set once the iov count is known to be valid).
  inline Status check_send(const SendOp& op, uint64_t& len) const noexcept;
  // What send() and post_send() do with a checked App message in its slot.
  inline Status start_send(SendMsg* m) noexcept;
  SendOp* send_slot_slow() noexcept;  // send_slot() when none is free or not reliable
  // What recv() and post_recv() do with a plain or multi-recv receive in its entry.
  inline Status start_recv(RecvEntry* r) noexcept;
  void on_dgram(PacketBuf& pkt, const wire::Header& h) noexcept;
  // on_packet's full path: decodes and checks pkt (into h) and finds or creates its peer.
  // kNoPeer when pkt was dropped (counted) or taken as a datagram. Remembers pkt for the next
  // segment's comparison (rx_cont_).
  PeerId admit(PacketBuf& pkt, wire::Header& h) noexcept;

  EngineConfig cfg_;
  CcParams cc_;
  PacketIo& io_;
  Clock& clock_;
  CompletionSink& sink_;
  uint32_t seg_bytes_ = 0;
  // Queued messages of a peer from which a flushed burst asks for its ACK (request_ack):
  // max(2, ack_coalesce_msgs / 2), or 1 for a peer that does not reply (Peer::ack_waited). A
  // deferred ACK's messages plus the reply stay below it (a deferred ACK came on data, which
  // cleared ack_waited).
  uint32_t ack_req_msgs_ = 2;
  // A request with fewer messages queued than this, 2 * ack_coalesce_msgs, and nothing left
  // behind is QUICK (request_ack).
  uint32_t ack_req_max_msgs_ = 32;
  // A standalone ACK sent this long (ns) or longer after the data it covers arrived held out
  // the peer's ACK delay (Peer::ack_waited): half our own ack_delay_ns, at least 1.
  uint64_t ack_waited_ns_ = 1;

  std::vector<std::unique_ptr<Peer>> peers_;
  std::unordered_map<PeerAddr, PeerId, PeerAddrHash> peer_index_;
  PeerId last_rx_peer_ = kNoPeer;
  uint64_t last_rx_ns_ = 0;
  // The clock at the operation being processed (a post, a received burst, a progress round),
  // read once by whoever started it: ACK deadlines and ACK delays use it rather than reading
  // the clock again (a stale reading makes an ACK earlier and its reported delay shorter: safe).
  // Never goes back: a caller's reading may be older than one another thread made since (the
  // port lock passes between packets and receivers), and every time the engine stores came from
  // here, so `now - stored` never wraps (a wrapped peer silence declared live peers dead).
  uint64_t now_ = 0;
  uint64_t advance_now(uint64_t t) noexcept {
    if (t > now_) now_ = t;
    return now_;
  }

  util::ObjectPool<SendMsg> send_pool_;
  SendMsg* pinned_head_ = nullptr;  // done sends waiting for the I/O layer to unpin their memory
  SendMsg* pinned_tail_ = nullptr;
  uint32_t zc_min_ = UINT32_MAX;    // io_.zero_copy_min_bytes()
  uint32_t inject_slot_bytes_ = 0;  // each send slot's inject buffer
  std::unique_ptr<uint8_t[]> inject_arena_;
  std::unique_ptr<Matcher> own_matcher_;  // null while a shared matcher is used
  Matcher* matcher_;                       // own_matcher_, or a shared receive context's
  uint64_t budget_seen_ = 0;               // matcher_->budget_epoch() at the last progress
  uint64_t posted_seen_ = 0;               // matcher_->posted_epoch() at the last plan
  MrLookup* mr_ = nullptr;
  std::vector<RmaSlot> rma_slots_;
  std::vector<uint32_t> rma_free_;  // free RmaSlot indexes

  PacketBuf txq_[kTxQueue];
  TxSlot* txq_slot_[kTxQueue] = {};  // the data segment's window slot, for the restamp; or null
  uint16_t txq_len_ = 0;
  uint16_t txq_sealed_ = 0;  // txq_[0, txq_sealed_) are sealed (flush seals the rest)
  bool tx_eager_ = true;  // no post has flushed eagerly since the last progress()
  bool more_batch_ = false;  // an FI_MORE post queued since the last flush_after_post decision
  PacketBuf alloc_cache_[32];
  uint16_t alloc_cache_len_ = 0;
  static constexpr uint16_t kRxFree = 32;
  PacketBuf rx_free_[kRxFree];
  uint16_t rx_free_len_ = 0;
  bool rx_round_ = false;  // a packet arrived since the last progress()
  uint64_t round_ = 0;     // progress() calls so far (Peer::dack)
  uint32_t dacks_pending_ = 0;  // peers with a deferred ACK
  // The peer walk's schedule (scan_peers). scan_due_: an event since the last walk may give a
  // peer work (a packet, a send queued, a new peer, ack_all_now, deferred ACKs applied by a
  // post, a shared matcher joined or left); set where it happens, cleared as a walk starts.
  // scan_at_ns_: the earliest time a peer has work, as the last planning walk found it; 0
  // after a walk that did not plan (the next round's walk does), or while a peer has work at
  // every round (sends waiting, a deferred ACK, a held packet, an ACK due at once). Timers are
  // only armed in walks and in those events (or later: restart_timers), so none is due before
  // scan_at_ns_. posted_seen_: matcher_->posted_epoch() at that walk (a receive posted makes
  // silent peers due a probe: probe_due_to). Before, every round walked every peer: ~4 ns a
  // peer a poll (pollfab-bench-path BM_IdleProgress: 1,068 ns at 256 peers).
  bool scan_due_ = true;
  uint64_t scan_at_ns_ = 0;
  bool send_counter_bound_ = false;
  // Receive completions of the packet being delivered (deliver_whole's common case), handed to
  // the sink when deliver() returns; finish_recv hands them over first (completion order).
  RecvDone recv_done_[kRecvDoneBurst];
  uint32_t recv_done_n_ = 0;

  EngineStats stats_;

  RxContinuation rx_cont_;  // (rx_continuation.hpp)
};

}  // namespace pollfab::transport
