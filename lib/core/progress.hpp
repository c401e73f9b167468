// Progressable: something the application's calls drive forward under FI_PROGRESS_MANUAL
// (fi_domain(3) "Progress"): CQ and counter reads and data calls call progress().
#pragma once
#include <cstddef>
#include <cstdint>

namespace pollfab::core {

class Progressable {
 public:
  virtual ~Progressable() = default;
  // Polls the device, runs protocol timers, writes completions. Never blocks.
  virtual void progress() noexcept = 0;

  // The wait source a blocked caller sleeps on between progress calls (lib/core/waiter.hpp):
  // wait_fd() polls readable when progress has input (-1: none);
  // prepare_wait() is called right before sleeping and returns true if a sleeper will be woken
  // (input shows on wait_fd(), or, without one, another thread progresses and its completions
  // notify the sleeper), false (the sleeper naps) if sleeping now could
  // miss work (input the descriptor cannot show; a wake-up that could not be armed);
  // next_deadline_ns() is when progress has timer work (monotonic ns; UINT64_MAX: none).
  // Called under no lock of the caller's; the implementation takes its own.
  virtual int wait_fd() noexcept { return -1; }
  virtual bool prepare_wait() noexcept { return false; }
  virtual uint64_t next_deadline_ns() noexcept { return UINT64_MAX; }
};

// Calls f(p) once for each distinct non-null p = source(item) of items (wait and poll sets:
// each member domain's progress once). Few items: a quadratic scan, no allocation.
template <class Items, class Source, class F>
void for_each_source(const Items& items, Source&& source, F&& f) {
  for (size_t i = 0; i < items.size(); ++i) {
    Progressable* p = source(items[i]);
    if (!p) continue;
    bool seen = false;
    for (size_t j = 0; j < i && !seen; ++j) seen = source(items[j]) == p;
    if (!seen) f(p);
  }
}

}  // namespace pollfab::core
