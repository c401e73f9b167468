// Critical-path marks: count, under callgrind, only the instructions a ping-pong's round trip
// waits for on one side: from the receive burst that brings a packet to the return of the next
// transmit burst (a server's turnaround: the request in, the reply out). Everything else the
// process runs (empty polls, frees and timers left for later, the application's own waiting)
// is not counted. scripts/bench-instructions.sh reports it for pollfab's dpdk provider and for
// pollfab-rawpp, the raw floor, which mark the same two points.
//
// Use: PF_CRITICAL_PATH_MARKS=1 in the environment of a process run under
// `valgrind --tool=callgrind --collect-atstart=no`; the marks toggle collection
// (CALLGRIND_TOGGLE_COLLECT). Without the variable, or outside valgrind, or in a build without
// valgrind's headers, they do nothing: one predictable branch a burst.
// Thread-safety: any thread. callgrind keeps a collection state per thread, and so do the
// marks (thread_local: it outlives any one object, e.g. a port closed between its receive and
// its transmit). A thread that receives and never transmits (the liveness assist running a
// round while the application is away) counts on until it does: bench-instructions reads the
// application thread's ping-pong, where that is rare.
#pragma once

namespace pollfab::util {

class CriticalPathMarks {
 public:
  CriticalPathMarks() noexcept;  // reads PF_CRITICAL_PATH_MARKS (and whether valgrind runs us)

  // After a receive burst of `got` packets: the path starts at the first one.
  void after_rx(unsigned got) noexcept {
    if (enabled_ && got && !on_) toggle();
  }
  // After a transmit burst returned: the path ends.
  void after_tx() noexcept {
    if (enabled_ && on_) toggle();
  }

 private:
  static void toggle() noexcept;
  bool enabled_ = false;
  static inline thread_local bool on_ = false;
};

}  // namespace pollfab::util
