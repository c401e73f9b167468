// Congestion control of one peer: Swift-like delay-based AIMD (Kumar et al., "Swift: Delay is
// Simple and Effective for Congestion Control in the Datacenter", SIGCOMM 2020), with the
// lowest RTT seen as the base delay, the standing delay of a round as the signal (Copa, BBR)
// and Timely's hyperactive increase. docs/transport.md ("Congestion control") has the why.
//
// Pure functions over CcState: the engine calls them from ACK processing and timeouts
// (transport/reliability.cpp) and reads cc_window() when it paces new segments. Unit-tested
// alone (tests/unit/transport/test_rtt_cc.cpp). Units: windows in packets, times in ns.
// Thread-safety: none (plain data).
#pragma once
#include <cstdint>

namespace pollfab::transport {

struct CcParams {
  uint64_t target_ns = 100'000;  // queueing delay tolerated above the lowest RTT seen
  double ai = 1.0;               // additive increase, packets per RTT
  double beta = 0.8;             // multiplicative decrease gain
  double max_mdf = 0.5;          // largest decrease at once (fraction of cwnd)
  uint32_t min_cwnd = 2;         // packets
  uint32_t max_cwnd = 256;       // packets (the send window)
};

struct CcState {
  double cwnd = 0;                // congestion window, packets
  double ssthresh = 0;            // after a timeout, cwnd doubles per RTT up to this
  uint64_t last_decrease_ns = 0;
  uint64_t round_start_ns = 0;    // a round: one smoothed RTT of samples
  uint64_t round_min_ns = 0;      // lowest corrected RTT sample of the round (0 = none yet)
  uint32_t good_rounds = 0;       // consecutive rounds whose lowest sample met the target
};

// A new or restarted peer: the full window (datacenter start, as Swift and eRPC), no history.
void cc_restart(CcState& s, const CcParams& p) noexcept;

// acked packets were newly acknowledged; delay_ns is the corrected RTT sample when sample is
// true. Each round (one srtt, at least 1 us) compares the round's lowest sample with
// min_rtt_ns + target: at or below it the window grows by ai per RTT times the number of good
// rounds in a row (up to 8); above it the window shrinks by beta x excess / delay, at most
// max_mdf. Below ssthresh (after a timeout) the window grows by `acked` (slow start).
// Returns true if the window was decreased.
bool cc_on_ack(CcState& s, const CcParams& p, uint32_t acked, uint64_t delay_ns, bool sample,
               uint64_t min_rtt_ns, uint64_t srtt_ns, uint64_t now_ns) noexcept;

// The retransmission timer expired; backoff counts the timeouts before this one. The first
// decreases by max_mdf (at most once per srtt); from the third on the window restarts at
// min_cwnd and slow-starts back to (1 - max_mdf) of what it was. Returns true if decreased.
bool cc_on_timeout(CcState& s, const CcParams& p, uint32_t backoff, uint64_t srtt_ns,
                   uint64_t now_ns) noexcept;

// Packets the window allows in flight: max(min_cwnd, floor(cwnd)).
inline uint32_t cc_window(const CcState& s, const CcParams& p) noexcept {
  const auto w = static_cast<uint32_t>(s.cwnd);
  return w > p.min_cwnd ? w : p.min_cwnd;
}

}  // namespace pollfab::transport
