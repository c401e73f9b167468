// EngineStats and PeerStats: the counters an Engine keeps (Engine::stats, per engine) and a
// snapshot of one peer's counters and protocol state (Engine::peer_stats). The provider
// publishes both (providers/packet/stats.cpp: the stats socket, the close-time log).
// Units: packets, bytes, ns as each field says. Thread-safety: plain data.
#pragma once
#include <cstdint>

#include "transport/packet_io.hpp"

namespace pollfab::transport {

struct EngineStats {
  uint64_t tx_pkts = 0, tx_bytes = 0, rx_pkts = 0, rx_bytes = 0;
  uint64_t retx_pkts = 0, rto_events = 0, fast_retx_events = 0;
  uint64_t acks_tx = 0, acks_rx = 0;
  uint64_t dup_pkts = 0, ooo_pkts = 0, drop_window = 0, drop_unexpected_full = 0;
  uint64_t drop_no_recv = 0, drop_stale_epoch = 0, drop_unknown_peer = 0, drop_protocol = 0;
  uint64_t peer_resets = 0;
  uint64_t peers_dead = 0, probes_tx = 0, drop_dead_peer = 0;
  uint64_t srtt_ns = 0;  // smoothed RTT of the most recently sampled peer
  uint64_t drop_checksum = 0;   // packets whose checksum did not match (dropped, counted)
  uint64_t credit_stalls = 0;   // times a sender stopped because the receiver's credits ran out
  uint64_t credit_probes = 0;   // segments sent past a closed receive window (persist probes)
  uint64_t cc_decreases = 0;    // congestion window decreases (delay above target, timeouts)
  uint64_t rack_retx_events = 0;// retransmissions decided by time (a later packet arrived)
  uint64_t zc_tx_pkts = 0;      // data packets whose payload was attached, not copied (zero copy)
  uint64_t ooo_placed = 0;      // of ooo_pkts, copied to their place in the message on arrival
  uint64_t bundled_msgs = 0;    // messages sent in another message's packet (wire::kBundle)
  uint64_t rma_ops = 0;         // RMA operations (writes, reads) we started
  uint64_t atomic_ops = 0;      // atomic operations we started
  uint64_t rma_served = 0;      // peers' RMA requests we served (writes and reads)
  uint64_t atomic_served = 0;   // peers' atomic requests we served
  uint64_t rma_rejected = 0;    // peers' requests refused (key, range, access, op, datatype)
  uint64_t acks_deferred = 0;   // piggybacked ACKs processed after the reply left (Peer::dack)
  uint64_t rx_continued = 0;    // packets taken in by comparison with the one before (a later
                                // segment of the same message: RxContinuation,
                                // transport/rx_continuation.hpp)
};

// Per-peer counters and protocol state, a snapshot (Engine::peer_stats).
struct PeerStats {
  PeerAddr addr;
  uint64_t user = ~0ull;        // provider tag (fi_addr), ~0 if none
  bool dead = false;
  uint32_t remote_epoch = 0;
  uint64_t tx_pkts = 0, tx_bytes = 0;   // data packets / payload bytes sent (incl. retransmits)
  uint64_t rx_pkts = 0, rx_bytes = 0;   // data packets / payload bytes received
  uint64_t retx_pkts = 0;               // data packets retransmitted
  uint64_t dup_pkts = 0;                // duplicate data packets received
  uint64_t rto_events = 0;
  uint64_t srtt_ns = 0, rttvar_ns = 0, rto_ns = 0, min_rtt_ns = 0;
  uint32_t cwnd_pkts = 0;               // congestion window, packets
  uint32_t inflight_pkts = 0;           // sent, not yet cumulatively acknowledged (the span)
  uint32_t pipe_pkts = 0;               // of those, not SACKed (at most window_pkts and cwnd)
  uint32_t credits_pkts = 0;            // receiver's advertised window beyond snd_una, packets
  // Sender: time (ns, by the engine's clock readings) a message waited with segments left to
  // send, by what stopped it: the send window (window_pkts of pipe), the congestion window, the
  // receiver's credits, the send ring (full, could not grow), and the packet path (no packet
  // buffer, tx queue full). A wait still open counts up to the latest reading.
  uint64_t blocked_window_ns = 0, blocked_cwnd_ns = 0, blocked_credits_ns = 0;
  uint64_t blocked_ring_ns = 0, blocked_tx_ns = 0;
  // Receiver: holes (times it began to hold packets above a missing one) and the time it held
  // any (ns, from the arrival of the first held packet until none is held; holes that overlap
  // count once).
  uint64_t holes = 0, hole_ns = 0;
};

}  // namespace pollfab::transport
