// RTT estimation and the retransmission timeout of one peer (RFC 6298), with the receiver's
// ACK delay removed from samples (RFC 9002 5.3). Part of reliability (transport/reliability.cpp);
// pure functions over RttState, unit-tested alone (tests/unit/transport/test_rtt_cc.cpp).
// Times in ns. Thread-safety: none (plain data).
#pragma once
#include <algorithm>
#include <cstdint>

namespace pollfab::transport {

struct RttState {
  uint64_t srtt_ns = 0, rttvar_ns = 0;  // smoothed RTT and its variation (valid once sampled)
  uint64_t rto_ns = 0;                  // current retransmission timeout, backoff included
  uint64_t min_rtt_ns = 0;              // lowest raw sample seen (0 = none): the base delay
  bool valid = false;                   // srtt/rttvar hold at least one sample
  uint32_t backoff = 0;                 // timeouts since data was last acknowledged (max 16)
};

// A new or restarted peer: the initial RTO, no samples, no backoff. srtt/rttvar keep their old
// values for display until the first sample replaces them.
inline void rtt_restart(RttState& r, uint64_t rto_initial_ns) noexcept {
  r.rto_ns = rto_initial_ns;
  r.valid = false;
  r.backoff = 0;
  r.min_rtt_ns = 0;
}

// Folds a Karn-filtered sample (the send-to-ACK time of a packet sent once) whose ACK the
// receiver held for ack_delay_ns into the estimator. The ACK delay is removed unless that
// would take the sample below the lowest RTT seen. Returns the corrected sample (what
// congestion control compares with its target).
inline uint64_t rtt_sample(RttState& r, uint64_t sample_ns, uint64_t ack_delay_ns) noexcept {
  if (!r.min_rtt_ns || sample_ns < r.min_rtt_ns) r.min_rtt_ns = sample_ns;
  uint64_t s = sample_ns;
  if (ack_delay_ns && sample_ns >= r.min_rtt_ns + ack_delay_ns) s = sample_ns - ack_delay_ns;
  if (!r.valid) {  // RFC 6298 2.2
    r.srtt_ns = s;
    r.rttvar_ns = s / 2;
    r.valid = true;
  } else {  // 2.3: alpha 1/8, beta 1/4
    uint64_t delta = r.srtt_ns > s ? r.srtt_ns - s : s - r.srtt_ns;
    r.rttvar_ns = (3 * r.rttvar_ns + delta) / 4;
    r.srtt_ns = (7 * r.srtt_ns + s) / 8;
  }
  return s;
}

// New data was acknowledged: the backoff ends and the RTO is recomputed from the estimator,
// srtt + max(1 us, 4 rttvar) clamped to [rto_min, rto_max] (2.3, 2.4 with a datacenter
// granularity). Before any sample the current RTO stays.
inline void rtt_on_ack(RttState& r, uint64_t rto_min_ns, uint64_t rto_max_ns) noexcept {
  r.backoff = 0;
  if (!r.valid) return;
  uint64_t rto = r.srtt_ns + std::max<uint64_t>(1000, 4 * r.rttvar_ns);
  r.rto_ns = std::clamp(rto, rto_min_ns, rto_max_ns);
}

// The timer expired: exponential backoff (5.5), the RTO at most rto_max.
inline void rtt_on_timeout(RttState& r, uint64_t rto_max_ns) noexcept {
  if (r.backoff < 16) ++r.backoff;
  r.rto_ns = std::min(r.rto_ns * 2, rto_max_ns);
}

}  // namespace pollfab::transport
