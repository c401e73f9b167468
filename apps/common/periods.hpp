// Goodput per period of the clock, for a stream whose faults alternate by period
// (fault.period_ms: faults only in periods of CLOCK_MONOTONIC with an odd index,
// floor(t / period), none in the others; transport/fault_io.hpp). `pollfab pingpong --bw-only
// --period-ms N` times each window of its stream and sums the windows of each period here;
// scripts/bench-loss.sh compares each faulty period with the clean ones beside it, which ran
// under the same conditions (the same vCPU placement) a period earlier and later.
// pollfab-bench-rate --period-ms N counts its completions by period the same way
// (MessagesByPeriod), to compare two settings that alternate by period in one run.
// Units: ns (CLOCK_MONOTONIC, std::chrono::steady_clock on Linux), bytes, us.
// Thread-safety: none.
#pragma once
#include <cstdint>
#include <vector>

namespace pollfab::apps {

// One window of the stream: from its first post to its last completion, CLOCK_MONOTONIC ns.
struct WindowSpan {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// What a period's counted windows carried and took.
struct PeriodGoodput {
  uint64_t index = 0;  // floor(t / period_ns)
  bool faulty = false;  // index odd: the faults applied
  uint64_t bytes = 0;
  double us = 0;       // the counted windows' durations, summed
  uint32_t windows = 0;
};

// Sums the windows into their periods, in index order. A window counts for period k when it
// starts at least guard_ns into k and ends within k: a window across a boundary mixes the two
// conditions, and the guard leaves out the recovery still under way after the switch (holes
// repaired, the congestion window growing back). Periods with no counted window are absent.
// period_ns > 0; every window carries bytes_per_window.
std::vector<PeriodGoodput> goodput_by_period(const std::vector<WindowSpan>& windows,
                                             uint64_t bytes_per_window, uint64_t period_ns,
                                             uint64_t guard_ns);

// Messages completed per period of the clock, for a continuous stream (pollfab-bench-rate
// --period-ms): add() is called with each batch of completions and the time it was read; a
// batch counts for period k when it was read at least guard_ns into k. rates() gives, for
// every period that began after the first add() and ended before the last, the messages
// counted per second of its counted span (period_ns - guard_ns). period_ns > guard_ns.
// add() allocates only when the stream enters a new period.
class MessagesByPeriod {
 public:
  struct Rate {
    uint64_t index = 0;   // floor(t / period_ns)
    uint64_t msgs = 0;    // counted in it
    double per_s = 0;     // msgs / (period_ns - guard_ns)
  };
  MessagesByPeriod(uint64_t period_ns, uint64_t guard_ns) : period_(period_ns), guard_(guard_ns) {}
  void add(uint64_t t_ns, uint64_t msgs);
  std::vector<Rate> rates() const;

 private:
  uint64_t period_, guard_;
  uint64_t first_ = 0, last_ = 0;  // periods of the first and the last add()
  bool any_ = false;
  std::vector<uint64_t> counts_;   // by period, from first_
};

}  // namespace pollfab::apps
