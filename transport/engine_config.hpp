// EngineConfig: what one Engine (transport/engine.hpp) is built with: the protocol's windows,
// timers and pools, bundling, peer failure, checksums and congestion control. The provider
// fills it from the configuration's [transport] section and the endpoint's attributes
// (providers/packet/endpoint.cpp engine_config); the keys and their documented defaults are in
// lib/config/schema_keys.inc. Plain data.
#pragma once
#include <cstdint>

namespace pollfab::transport {

struct EngineConfig {
  bool reliable = true;                  // RDM (true) or DGRAM (false)
  uint16_t ep_id = 0;                    // this endpoint's id (pollfab header src_ep)
  uint32_t epoch = 0;                    // incarnation; 0 = pick a random one
  uint32_t window_pkts = 256;            // packets in the pipe (and cwnd's cap); power of two, 8..4096
  // PSNs past the cumulative ACK a receiver holds out of order and a sender may have
  // outstanding (window_pkts of them not SACKed): room to keep sending while a hole is repaired,
  // about two RTTs. Power of two, window_pkts..4096 (raised to window_pkts if below; lowered
  // until its SACK fits one ACK: (n - 64) / 8 bytes). Memory per peer, once grown: n send slots
  // (32 bytes) and n held-packet slots (64 bytes), plus the held packets' own buffers.
  uint32_t reorder_window_pkts = 1024;
  // A standalone ACK once this many packets, or this many messages (whole ones and the last
  // segments of others; a bundle counts as its messages), arrived unacknowledged, whichever
  // comes first: the sender's window waits on packets, its completions on messages.
  uint32_t ack_coalesce_pkts = 64;
  uint32_t ack_coalesce_msgs = 16;
  uint64_t ack_delay_ns = 20'000;        // standalone ACK if nothing piggybacked it by then
  uint64_t rto_min_ns = 1'000'000;
  uint64_t rto_max_ns = 100'000'000;
  uint64_t rto_initial_ns = 1'000'000;
  uint32_t tx_size = 1024;               // sends in flight (pool size)
  uint32_t rx_size = 1024;               // posted receives (pool size)
  uint32_t inject_size = 1024;           // bytes copied at post time for kOpInject
  // Messages of at most this many bytes that queue behind another to the same peer (posted
  // since the last flush) share its packet (wire::kBundle); 0 = one message per packet.
  uint32_t bundle_max_bytes = 1024;
  uint64_t max_msg_size = 0xffffffffull; // bytes
  uint64_t max_unexpected_bytes = 64ull << 20;  // buffers and bookkeeping of unexpected messages
  uint32_t max_peers = 4096;
  // Peer failure: a peer silent this long while we wait on it is declared dead (0 = never).
  uint64_t peer_timeout_ns = 10'000'000'000ull;
  // Seal every packet with a CRC-32C (wire::seal); received checksums are always verified.
  bool checksum = true;
  // Congestion control: Swift-like delay-based AIMD (docs/transport.md). Off: the pipe is
  // limited by window_pkts only (the span, as always, by the credits and the reorder window).
  bool cc = true;
  uint64_t cc_target_ns = 100'000;  // queueing delay tolerated above the lowest RTT seen
  double cc_ai = 1.0;               // additive increase, packets per RTT
  double cc_beta = 0.8;             // multiplicative decrease gain (Swift's beta)
  double cc_max_mdf = 0.5;          // largest decrease at once (fraction of cwnd)
  uint32_t cc_min_cwnd = 2;         // packets
};

}  // namespace pollfab::transport
