#include "transport/congestion.hpp"

#include <algorithm>

namespace pollfab::transport {

void cc_restart(CcState& s, const CcParams& p) noexcept {
  s.cwnd = p.max_cwnd;
  s.ssthresh = 0;
  s.round_start_ns = s.round_min_ns = 0;
  s.good_rounds = 1;
}

bool cc_on_ack(CcState& s, const CcParams& p, uint32_t acked, uint64_t delay_ns, bool sample,
               uint64_t min_rtt_ns, uint64_t srtt_ns, uint64_t now_ns) noexcept {
  bool decreased = false;
  if (s.cwnd < s.ssthresh) s.cwnd += acked;  // slow start after a timeout (RFC 5681 3.1)
  if (sample && (!s.round_min_ns || delay_ns < s.round_min_ns)) s.round_min_ns = delay_ns;
  const uint64_t round = std::max<uint64_t>(srtt_ns, 1000);
  if (!s.round_start_ns) s.round_start_ns = now_ns;
  if (s.cwnd >= s.ssthresh && s.good_rounds)
    s.cwnd += p.ai * std::min<uint32_t>(s.good_rounds, 8) * acked / std::max(s.cwnd, 1.0);
  if (now_ns - s.round_start_ns >= round && s.round_min_ns) {
    const uint64_t target = min_rtt_ns + p.target_ns;
    const uint64_t standing = s.round_min_ns;
    if (standing <= target) {
      ++s.good_rounds;
    } else {
      s.good_rounds = 0;
      double f = 1.0 - p.beta * double(standing - target) / double(standing);
      s.cwnd *= std::max(f, 1.0 - p.max_mdf);
      s.ssthresh = 0;
      s.last_decrease_ns = now_ns;
      decreased = true;
    }
    s.round_start_ns = now_ns;
    s.round_min_ns = 0;
  }
  s.cwnd = std::clamp(s.cwnd, double(p.min_cwnd), double(p.max_cwnd));
  return decreased;
}

bool cc_on_timeout(CcState& s, const CcParams& p, uint32_t backoff, uint64_t srtt_ns,
                   uint64_t now_ns) noexcept {
  // A timeout is the strongest congestion signal we get: the largest decrease once per RTT;
  // after repeated timeouts, restart from the minimum window (Swift's retransmit reset) and
  // slow-start back to half the window we had.
  if (backoff >= 2) {
    s.ssthresh = std::max(s.ssthresh, s.cwnd * (1.0 - p.max_mdf));
    s.cwnd = p.min_cwnd;
  } else if (now_ns - s.last_decrease_ns >= srtt_ns) {
    s.cwnd *= 1.0 - p.max_mdf;
  } else {
    return false;
  }
  s.cwnd = std::max(s.cwnd, double(p.min_cwnd));
  s.last_decrease_ns = now_ns;
  return true;
}

}  // namespace pollfab::transport
