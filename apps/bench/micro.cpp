// pollfab-bench-micro: Google Benchmark microbenchmarks of hot-path building blocks.
//   BM_Crc32c/<bytes>     CRC-32C as the transport seals and verifies packets (hardware path,
//                         three-way interleaved), bytes/s in the report
//   BM_Crc32cTable/<bytes> the portable slicing-by-8 table path (machines without SSE4.2)
//   BM_Crc32cOneChain/<bytes> a single CRC32-instruction chain (the pre-interleave code), kept
//                         as the baseline the interleaved path is measured against
//   BM_ClockMonotonic     one transport clock reading from CLOCK_MONOTONIC (transport.clock)
//   BM_ClockTsc           one reading from the calibrated TSC, monotonic clamp included
// A benchmark, not a test: run build/apps/pollfab-bench-micro (see README, Benchmarks).
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "lib/util/crc32c.hpp"
#include "transport/clock.hpp"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace {

std::vector<uint8_t> buffer(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + 7);
  return v;
}

void BM_Crc32c(benchmark::State& st) {
  auto v = buffer(size_t(st.range(0)));
  for (auto _ : st) benchmark::DoNotOptimize(pollfab::util::crc32c(v.data(), v.size()));
  st.SetBytesProcessed(int64_t(st.iterations()) * st.range(0));
}

void BM_Crc32cTable(benchmark::State& st) {
  auto v = buffer(size_t(st.range(0)));
  for (auto _ : st) benchmark::DoNotOptimize(pollfab::util::crc32c_sw(v.data(), v.size()));
  st.SetBytesProcessed(int64_t(st.iterations()) * st.range(0));
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t one_chain(const uint8_t* p, size_t len) {
  uint64_t c = 0xffffffffu;
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t x;
    std::memcpy(&x, p, 8);
    c = _mm_crc32_u64(c, x);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (len--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

void BM_Crc32cOneChain(benchmark::State& st) {
  auto v = buffer(size_t(st.range(0)));
  for (auto _ : st) benchmark::DoNotOptimize(one_chain(v.data(), v.size()));
  st.SetBytesProcessed(int64_t(st.iterations()) * st.range(0));
}
BENCHMARK(BM_Crc32cOneChain)->Arg(64)->Arg(1472)->Arg(9000);
#endif

BENCHMARK(BM_Crc32c)->Arg(64)->Arg(1472)->Arg(9000);
BENCHMARK(BM_Crc32cTable)->Arg(64)->Arg(1472)->Arg(9000);

void BM_ClockMonotonic(benchmark::State& st) {
  pollfab::transport::SystemClock clk;
  for (auto _ : st) benchmark::DoNotOptimize(clk.now_ns());
}
BENCHMARK(BM_ClockMonotonic);

void BM_ClockTsc(benchmark::State& st) {
  pollfab::transport::SystemClock clk;
  clk.use_tsc(pollfab::util::tsc_calibration());
  if (!clk.uses_tsc()) return st.SkipWithError("no usable TSC");
  for (auto _ : st) benchmark::DoNotOptimize(clk.now_ns());
}
BENCHMARK(BM_ClockTsc);

}  // namespace

BENCHMARK_MAIN();
