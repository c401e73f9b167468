// pollfab-bench-xcore: round trip of one cache line between two CPUs, in ns.
//
// Two threads pinned to --cpus A,B bounce a counter for --ms milliseconds; the result is the
// median of 10 slices (ns per round trip = two cache-line transfers). On a VM this shows where
// the host placed the vCPUs right now: on this project's 2-vCPU CI machine it is either ~50 ns
// (vCPUs sharing a core's caches) or ~330 ns (further apart), and flips between runs. Shared-
// memory links (net_memif) move every payload byte between the two CPUs, so their throughput
// follows it (about 3x); scripts/bench-loss.sh probes before and after each run and compares
// only runs made under the same placement. Prints "xcore_rtt_ns=N". A benchmark tool, not a test.
#include <pthread.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

bool pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return pthread_setaffinity_np(pthread_self(), sizeof s, &s) == 0;
}

alignas(64) std::atomic<uint64_t> g_ball{0};
alignas(64) std::atomic<bool> g_stop{false};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pollfab-bench-xcore: cache-line round trip between two CPUs (ns)"};
  std::vector<int> cpus{0, 1};
  int ms = 100;
  app.add_option("--cpus", cpus, "the two CPUs")->delimiter(',')->expected(2);
  app.add_option("--ms", ms, "duration in milliseconds")->check(CLI::Range(10, 10000));
  CLI11_PARSE(app, argc, argv);
  bool ok = true;
  std::thread peer([&] {
    if (!pin(cpus[1])) ok = false;
    uint64_t v = 1;
    while (!g_stop.load(std::memory_order_relaxed)) {
      if (g_ball.load(std::memory_order_acquire) == v) {
        g_ball.store(v + 1, std::memory_order_release);
        v += 2;
      }
    }
  });
  if (!pin(cpus[0])) ok = false;
  using Clock = std::chrono::steady_clock;
  std::vector<double> slices;
  const auto slice = std::chrono::milliseconds(std::max(1, ms / 10));
  uint64_t v = 0;
  for (int s = 0; s < 10; ++s) {
    const auto t0 = Clock::now();
    uint64_t trips = 0;
    Clock::time_point t1;
    do {
      for (int i = 0; i < 1000; ++i) {
        g_ball.store(v + 1, std::memory_order_release);  // serve
        while (g_ball.load(std::memory_order_acquire) != v + 2) {
          if (g_stop.load(std::memory_order_relaxed)) break;
        }
        v += 2;
      }
      trips += 1000;
      t1 = Clock::now();
    } while (t1 - t0 < slice);
    slices.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / double(trips));
  }
  g_stop.store(true);
  peer.join();
  if (!ok) {
    fprintf(stderr, "pollfab-bench-xcore: cannot pin to CPUs %d,%d\n", cpus[0], cpus[1]);
    return 1;
  }
  std::sort(slices.begin(), slices.end());
  printf("xcore_rtt_ns=%.0f\n", slices[slices.size() / 2]);
  return 0;
}
