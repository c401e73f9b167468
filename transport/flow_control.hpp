// Flow control (receiver credits), both sides of one peer. docs/transport.md ("Flow control").
//
// The receiver advertises in every ACK how many packets past its cumulative ack_psn it will
// accept (credits): its whole receive window (the reorder window: PSNs it can hold past a
// hole) while a posted receive is there to take the data, else
// what is left of its unexpected-message budget, in packets. The sender keeps the edge
// ack_psn + credits, which only moves forward (an offer is not taken back from packets already
// sent, RFC 9293 3.8.6), and never sends at or past it, except for one persist probe per
// retransmission timeout while the window is closed (so a lost window update cannot deadlock).
// Pure functions, unit-tested alone (tests/unit/transport/test_rtt_cc.cpp). Units: packets.
// Thread-safety: none (plain data).
#pragma once
#include <algorithm>
#include <cstdint>

#include "lib/util/seq.hpp"

namespace pollfab::transport {

// The sender's view of one receiver's window.
struct FlowState {
  util::Seq32 snd_edge;         // send PSNs below it
  bool persist_probe = false;   // one segment may go past snd_edge (the window is closed)
  bool credit_stalled = false;  // the sender stopped at the edge (a stall is counted once)
};

// A new or restarted peer (snd_una = 0): one window (window_pkts, the pipe) until the
// receiver says otherwise.
inline void flow_restart(FlowState& f, uint32_t window_pkts) noexcept {
  f.snd_edge = util::Seq32(window_pkts);
  f.persist_probe = f.credit_stalled = false;
}

// An ACK offered `credits` packets past ack. snd_nxt: the next PSN the sender would use.
inline void flow_on_ack(FlowState& f, util::Seq32 ack, uint16_t credits,
                        util::Seq32 snd_nxt) noexcept {
  const util::Seq32 edge = ack + credits;
  if (edge > f.snd_edge) f.snd_edge = edge;
  if (snd_nxt < f.snd_edge) f.credit_stalled = false;
}

// True if the receiver's window admits PSN psn.
inline bool flow_window_open(const FlowState& f, util::Seq32 psn) noexcept {
  return psn < f.snd_edge;
}

// Credits beyond snd_una (statistics).
inline uint32_t flow_credits(const FlowState& f, util::Seq32 snd_una) noexcept {
  return f.snd_edge > snd_una ? static_cast<uint32_t>(f.snd_edge - snd_una) : 0;
}

// The credits a receiver advertises: its receive window rcv_window_pkts (at most 0xffff) when
// the next message lands in a posted receive; otherwise the unexpected budget left, in
// segments of seg_bytes.
inline uint16_t receiver_credits(bool lands_in_posted, uint64_t unexpected_free_bytes,
                                 uint32_t seg_bytes, uint32_t rcv_window_pkts) noexcept {
  if (lands_in_posted) return static_cast<uint16_t>(std::min<uint32_t>(rcv_window_pkts, 0xffff));
  const uint64_t pkts = unexpected_free_bytes / std::max<uint32_t>(seg_bytes, 1);
  return static_cast<uint16_t>(std::min<uint64_t>({pkts, rcv_window_pkts, 0xffff}));
}

}  // namespace pollfab::transport
