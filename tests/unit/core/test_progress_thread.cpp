// core::ProgressThread in assist mode (lib/core/progress_thread.hpp): it stays out of the way
// of an application that keeps calling, with checks that space out (up to kAssistBackoff
// intervals) so that its wake-ups do not keep landing on busy-polled CPUs, and it runs
// progress once the application stops calling.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "lib/core/progress_thread.hpp"

namespace pollfab::core {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

TEST(ProgressThreadAssist, BacksOffWhileTheApplicationCallsAndRunsOnceItStops) {
  ProgressThread t;
  std::atomic<int> runs{0};
  t.start_assist("test-assist", std::chrono::microseconds(1000), [&] {
    runs.fetch_add(1);
    return true;
  });
  // An application calling all the time for 200 intervals: not assisted, and the thread
  // looked far fewer than 200 times (one look per interval without the backoff; a loaded
  // machine only makes it look less often).
  // A gap between two calls longer than the interval (this thread descheduled, as under the
  // parallel test suite on 2 CPUs) is a real stall to the thread, which may then run once.
  const auto busy_until = Clock::now() + milliseconds(200);
  auto last = Clock::now();
  int long_gaps = 0;
  while (Clock::now() < busy_until) {
    t.note_progress();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    const auto now = Clock::now();
    long_gaps += now - last > milliseconds(1);
    last = now;
  }
  EXPECT_LE(runs.load(), 2 + long_gaps) << long_gaps << " gaps over the interval";
  EXPECT_LE(t.checks(), 60u);  // about 30 with doubling up to 8 intervals
  // The application stops calling: the thread runs progress (the bound is liveness only).
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (runs.load() == 0 && Clock::now() < give_up) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_GT(runs.load(), 0);
  // Once it has found a stall it looks every interval again: while the application stays
  // away, it keeps running progress.
  const int after_first = runs.load();
  while (runs.load() < after_first + 5 && Clock::now() < give_up)
    std::this_thread::sleep_for(milliseconds(1));
  EXPECT_GE(runs.load(), after_first + 5);
  t.stop();
}

}  // namespace
}  // namespace pollfab::core
