#include "apps/common/periods.hpp"

#include <algorithm>

namespace pollfab::apps {

std::vector<PeriodGoodput> goodput_by_period(const std::vector<WindowSpan>& windows,
                                             uint64_t bytes_per_window, uint64_t period_ns,
                                             uint64_t guard_ns) {
  std::vector<PeriodGoodput> out;
  for (const WindowSpan& w : windows) {
    const uint64_t k = w.start_ns / period_ns;
    if (w.end_ns / period_ns != k || w.start_ns - k * period_ns < guard_ns) continue;
    if (out.empty() || out.back().index != k) out.push_back({k, k % 2 == 1, 0, 0, 0});
    PeriodGoodput& p = out.back();
    p.bytes += bytes_per_window;
    p.us += double(w.end_ns - w.start_ns) / 1e3;
    ++p.windows;
  }
  return out;
}

void MessagesByPeriod::add(uint64_t t_ns, uint64_t msgs) {
  const uint64_t k = t_ns / period_;
  if (!any_) {
    first_ = k;
    any_ = true;
  }
  if (k < first_) return;  // the clock is monotonic: not expected
  last_ = std::max(last_, k);
  if (t_ns - k * period_ < guard_) return;
  if (counts_.size() <= k - first_) counts_.resize(k - first_ + 1, 0);
  counts_[k - first_] += msgs;
}

std::vector<MessagesByPeriod::Rate> MessagesByPeriod::rates() const {
  std::vector<Rate> out;
  const double span_s = double(period_ - guard_) / 1e9;
  for (uint64_t k = first_ + 1; any_ && k < last_; ++k) {
    const uint64_t n = k - first_ < counts_.size() ? counts_[k - first_] : 0;
    out.push_back({k, n, double(n) / span_s});
  }
  return out;
}

}  // namespace pollfab::apps
