#include "apps/common/periods.hpp"

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

}  // namespace pollfab::apps
