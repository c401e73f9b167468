#include "lib/util/critical_path_marks.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "lib/util/tsc.hpp"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define PF_HAVE_CALLGRIND 1
#endif

namespace pollfab::util {

namespace {

// RDTSC after every earlier instruction has completed (LFENCE): a plain RDTSC may run ahead of
// loads still missing (a packet's lines in flight from the other CPU) and time them elsewhere.
uint64_t fenced_tsc() noexcept {
#if defined(__x86_64__)
  _mm_lfence();
#endif
  return tsc_read();
}

// A thread's sampling state, trivially destructible so that it stays readable after the
// thread's other thread_local destructors ran (the main thread's run before atexit handlers and
// static destructors, and an fi_close from those may still reach the marks): Done once the
// samples are printed, or when their memory could not be had (not asked for again).
enum class TscState : uint8_t { Unused, Active, Done };
thread_local TscState tsc_state = TscState::Unused;
thread_local uint64_t start_tsc = 0;

// One thread's turnarounds in TSC ticks, constructed at its first completed turnaround and
// printed by its destructor when the thread exits.
struct TscSamples {
  static constexpr size_t kMaxSamples = size_t(1) << 20;
  std::unique_ptr<uint32_t[]> ticks;
  size_t n = 0;
  ~TscSamples() {
    print();
    tsc_state = TscState::Done;
  }
  void print() noexcept {
    if (!n || !ticks) return;
    const TscCalibration* c = tsc_calibration();
    if (!c) return;
    const size_t kept = std::min(n, kMaxSamples);
    std::sort(ticks.get(), ticks.get() + kept);
    auto ns = [&](double q) {
      return double(ticks[std::min(kept - 1, size_t(q * double(kept)))]) / c->ghz;
    };
    // The mean of the middle 80% as well: where the counter ticks coarsely (the median of a
    // VM's readings moves in steps of ~10 ns here), it resolves a few ns.
    double sum = 0;
    const size_t lo = kept / 10, hi = kept - kept / 10;
    for (size_t i = lo; i < hi; ++i) sum += double(ticks[i]);
    const double mid = hi > lo ? sum / double(hi - lo) / c->ghz : 0;
    std::fprintf(stderr,
                 "critical-path tsc: %zu turnarounds p10=%.0f p50=%.0f p90=%.0f mean10-90=%.1f ns\n",
                 n, ns(0.1), ns(0.5), ns(0.9), mid);
  }
};
thread_local TscSamples samples;  // touched only while tsc_state is not Done

}  // namespace

CriticalPathMarks::CriticalPathMarks() noexcept {
  const char* v = std::getenv("PF_CRITICAL_PATH_MARKS");
  if (!v) return;
  if (std::strcmp(v, "tsc") == 0) {
    if (tsc_calibration()) mode_ = Mode::Tsc;
    return;
  }
#ifdef PF_HAVE_CALLGRIND
  if (std::strcmp(v, "1") == 0 && RUNNING_ON_VALGRIND) mode_ = Mode::Callgrind;
#endif
}

void CriticalPathMarks::start() noexcept {
  on_ = true;
  if (mode_ == Mode::Tsc) {
    start_tsc = fenced_tsc();
    return;
  }
#ifdef PF_HAVE_CALLGRIND
  CALLGRIND_TOGGLE_COLLECT;  // last: what runs before it here is not counted
#endif
}

void CriticalPathMarks::stop() noexcept {
  if (mode_ == Mode::Callgrind) {
#ifdef PF_HAVE_CALLGRIND
    CALLGRIND_TOGGLE_COLLECT;  // at once: of stop() only the call and this test count
#endif
    on_ = false;
    return;
  }
  const uint64_t d = fenced_tsc() - start_tsc;
  on_ = false;
  if (tsc_state == TscState::Done) return;
  TscSamples& s = samples;
  if (tsc_state == TscState::Unused) {
    s.ticks.reset(new (std::nothrow) uint32_t[TscSamples::kMaxSamples]);
    tsc_state = s.ticks ? TscState::Active : TscState::Done;
    if (!s.ticks) return;
  }
  if (s.n < TscSamples::kMaxSamples)
    s.ticks[s.n] = static_cast<uint32_t>(std::min<uint64_t>(d, UINT32_MAX));
  ++s.n;
}

}  // namespace pollfab::util
