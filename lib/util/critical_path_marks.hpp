// Critical-path marks: what a ping-pong's round trip waits for on one side, from the receive
// burst that brings a packet to the return of the next transmit burst (a server's turnaround:
// the request in, the reply out). Everything else the process runs (empty polls, frees and
// timers left for later, the application's own waiting) is left out. The dpdk provider (DpdkIo)
// and pollfab-rawpp, the raw floor, mark the same two points. Two modes, chosen by
// PF_CRITICAL_PATH_MARKS in the environment:
//   - "1": count instructions under callgrind. In a process run under `valgrind --tool=callgrind
//     --collect-atstart=no` the marks toggle collection (CALLGRIND_TOGGLE_COLLECT);
//     scripts/bench-instructions.sh reports the count. Outside valgrind, or in a build without
//     valgrind's headers, this mode does nothing.
//   - "tsc": time each turnaround on the real clock (RDTSC after LFENCE at both marks; ~15 ns
//     of its own). A thread that completed a turnaround prints one line to stderr when it
//     exits (the main thread at process exit; not a thread still running then, nor a process
//     that ends with _exit): the count, the 10th, 50th and 90th percentile and the mean of the
//     middle 80%, in ns ("critical-path tsc: ..."). A server's turnaround plus the link (the
//     peer's tx return to our rx return: memif's copies and the poll) is about a half round
//     trip when the client's turnaround is as long, so the median against a ping-pong's
//     median half round trip splits it. scripts/bench-turnaround.sh reports it for pollfab
//     and the floor. The first 2^20 turnarounds of a thread are kept (4 MiB, allocated at its
//     first completed turnaround; without the memory the thread's samples are dropped).
// Without the variable the marks do nothing: one predictable branch a burst.
// Thread-safety: any thread. callgrind keeps a collection state per thread, and so do the marks
// (thread_local: it outlives any one object, e.g. a port closed between its receive and its
// transmit). A thread that receives and never transmits (the liveness assist running a round
// while the application is away) counts on until it does: the percentiles and the trimmed mean
// leave such outliers out.
#pragma once
#include <cstdint>

namespace pollfab::util {

class CriticalPathMarks {
 public:
  CriticalPathMarks() noexcept;  // reads PF_CRITICAL_PATH_MARKS (and whether valgrind runs us)

  // After a receive burst of `got` packets: the path starts at the first one.
  void after_rx(unsigned got) noexcept {
    if (mode_ != Mode::Off && got && !on_) start();
  }
  // After a transmit burst returned: the path ends.
  void after_tx() noexcept {
    if (mode_ != Mode::Off && on_) stop();
  }

 private:
  enum class Mode : uint8_t { Off, Callgrind, Tsc };
  void start() noexcept;
  void stop() noexcept;
  Mode mode_ = Mode::Off;
  static inline thread_local bool on_ = false;
};

}  // namespace pollfab::util
