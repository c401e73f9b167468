// Generators, fault schedules and helpers of the transport property tests (test_property.cpp):
// message specs, fault probabilities, time windows of faults, payload patterns, iov splits.
#pragma once
#include <rapidcheck.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/transport/harness.hpp"

namespace pollfab::transport::proptest {

using namespace pollfab::transport;
using namespace pollfab::transport::test;
using pollfab::transport::FaultConfig;
using pollfab::transport::FaultWindow;
using pollfab::util::Status;

// Corrupting faults (a random bit flipped in a packet, header or payload): the engine's
// CRC-32C check (wire::verify) drops them and counts them in stats().drop_checksum.
constexpr bool kCorruptFaults = true;

constexpr uint64_t kUs = 1'000, kMs = 1'000'000;
constexpr uint32_t kMaxPacket = 1472;
constexpr uint32_t kSeg = kMaxPacket - 72;  // wire::kHeaderBytes
constexpr uint32_t kInjectSize = 1024;

inline uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Content of message idx of direction dir: a function of (seed, dir, idx, offset).
inline void fill(uint8_t* p, size_t len, uint64_t seed, int dir, uint64_t idx) {
  test::fill_xorshift(p, len, mix(seed ^ mix(idx * 2 + uint64_t(dir))) | 1);
}

// ---- generated inputs ----

struct MsgSpec {
  uint32_t size = 0;
  bool tagged = false;
  bool inject = false;       // kOpInject (honoured only if size <= inject_size)
  bool completion = true;    // kOpCompletion on send and receive
  bool cq_data = false;
  uint64_t tag = 0;
  uint64_t ignore = 0;       // the receive's ignore bits
  bool directed = false;     // receive from this peer only (else from any)
  uint32_t send_iovs = 1, recv_iovs = 1;
  uint32_t slack = 0;        // receive buffer bytes beyond the message
  uint64_t send_gap_ns = 0;  // posted this long after the previous send of the direction
  uint64_t recv_gap_ns = 0;  // posted this long after the previous receive of the direction
};

inline std::ostream& operator<<(std::ostream& os, const MsgSpec& m) {
  os << "{" << m.size << "B" << (m.tagged ? " tag=" + std::to_string(m.tag) : std::string())
     << (m.tagged && m.ignore ? " ign=" + std::to_string(m.ignore) : std::string())
     << (m.inject ? " inject" : "") << (m.completion ? "" : " nocomp")
     << (m.cq_data ? " cqdata" : "") << (m.directed ? " directed" : "") << " iov="
     << m.send_iovs << "/" << m.recv_iovs << " slack=" << m.slack << " gap=" << m.send_gap_ns
     << "/" << m.recv_gap_ns << "}";
  return os;
}

struct Probs {
  uint32_t drop_pm = 0, dup_pm = 0, reorder_pm = 0, corrupt_pm = 0;  // per mille
  FaultConfig config(uint64_t seed) const {
    FaultConfig f;
    f.drop = drop_pm / 1000.0;
    f.dup = dup_pm / 1000.0;
    f.reorder = reorder_pm / 1000.0;
    f.corrupt = kCorruptFaults ? corrupt_pm / 1000.0 : 0.0;
    f.seed = seed;
    return f;
  }
};

inline std::ostream& operator<<(std::ostream& os, const Probs& p) {
  os << "{drop=" << p.drop_pm << "‰ dup=" << p.dup_pm << "‰ reorder=" << p.reorder_pm << "‰";
  if (kCorruptFaults) os << " corrupt=" << p.corrupt_pm << "‰";
  return os << "}";
}

enum class WinKind : uint8_t { DropBurst, Dead, DelaySpike, Chaos };

struct WinSpec {
  WinKind kind = WinKind::DropBurst;
  uint64_t start_ns = 0;  // after the start of the case
  uint64_t len_ns = 0;
  uint64_t extra_ns = 0;  // DelaySpike
  Probs probs;            // Chaos
};

inline std::ostream& operator<<(std::ostream& os, const WinSpec& w) {
  static const char* names[] = {"drop-burst", "dead", "delay-spike", "chaos"};
  os << "{" << names[int(w.kind)] << " @" << w.start_ns << "+" << w.len_ns;
  if (w.kind == WinKind::DelaySpike) os << " extra=" << w.extra_ns;
  if (w.kind == WinKind::Chaos) os << " " << w.probs;
  return os << "}";
}

inline rc::Gen<uint32_t> gen_size() {
  using namespace rc;
  // log-uniform: an exponent e, then a size in (2^(e-1), 2^e], up to 256 KiB
  auto log_uniform = gen::mapcat(gen::inRange<uint32_t>(0, 19), [](uint32_t e) {
    uint32_t lo = e ? (1u << (e - 1)) + 1 : 0;
    return gen::inRange<uint32_t>(lo, (1u << e) + 1);
  });
  return gen::weightedOneOf<uint32_t>({
      {60, log_uniform},
      {12, gen::elementOf(std::vector<uint32_t>{0, 1, 256, 257, kInjectSize, kInjectSize + 1,
                                                kSeg - 1, kSeg, kSeg + 1, 2 * kSeg - 1, 2 * kSeg,
                                                2 * kSeg + 1})},
      {2, gen::inRange<uint32_t>(1u << 20, (3u << 20) + 1)},
  });
}

inline rc::Gen<uint64_t> gen_gap() {
  using namespace rc;
  return gen::weightedOneOf<uint64_t>({
      {70, gen::just<uint64_t>(0)},
      {20, gen::inRange<uint64_t>(0, 200 * kUs)},
      {10, gen::inRange<uint64_t>(0, 5 * kMs)},
  });
}

inline rc::Gen<MsgSpec> gen_msg() {
  using namespace rc;
  return gen::build<MsgSpec>(
      gen::set(&MsgSpec::size, gen_size()),
      gen::set(&MsgSpec::tagged, gen::arbitrary<bool>()),
      gen::set(&MsgSpec::inject, gen::weightedElement<bool>({{3, false}, {1, true}})),
      gen::set(&MsgSpec::completion, gen::weightedElement<bool>({{4, true}, {1, false}})),
      gen::set(&MsgSpec::cq_data, gen::arbitrary<bool>()),
      gen::set(&MsgSpec::tag, gen::weightedOneOf<uint64_t>({{3, gen::inRange<uint64_t>(0, 4)},
                                                            {1, gen::arbitrary<uint64_t>()}})),
      gen::set(&MsgSpec::ignore, gen::weightedOneOf<uint64_t>({{4, gen::just<uint64_t>(0)},
                                                               {1, gen::arbitrary<uint64_t>()}})),
      gen::set(&MsgSpec::directed, gen::arbitrary<bool>()),
      gen::set(&MsgSpec::send_iovs, gen::inRange<uint32_t>(1, kMaxIov + 1)),
      gen::set(&MsgSpec::recv_iovs, gen::inRange<uint32_t>(1, kMaxIov + 1)),
      gen::set(&MsgSpec::slack, gen::weightedOneOf<uint32_t>({{3, gen::just<uint32_t>(0)},
                                                              {1, gen::inRange<uint32_t>(1, 3000)}})),
      gen::set(&MsgSpec::send_gap_ns, gen_gap()),
      gen::set(&MsgSpec::recv_gap_ns, gen_gap()));
}

inline rc::Gen<Probs> gen_probs(uint32_t drop_max, uint32_t dup_max, uint32_t reorder_max,
                                uint32_t corrupt_max) {
  using namespace rc;
  return gen::build<Probs>(gen::set(&Probs::drop_pm, gen::inRange<uint32_t>(0, drop_max + 1)),
                           gen::set(&Probs::dup_pm, gen::inRange<uint32_t>(0, dup_max + 1)),
                           gen::set(&Probs::reorder_pm, gen::inRange<uint32_t>(0, reorder_max + 1)),
                           gen::set(&Probs::corrupt_pm, gen::inRange<uint32_t>(0, corrupt_max + 1)));
}

// rapidcheck scales gen::inRange by the test size (0..100, growing over a run). Only the
// traffic grows with it; fault parameters use their full ranges from the first case.
template <class T>
rc::Gen<T> full_range(rc::Gen<T> g) {
  return rc::gen::resize(100, std::move(g));
}

// Static per-direction faults: none (often) or mild.
inline rc::Gen<Probs> gen_base_probs() {
  using namespace rc;
  return full_range(
      gen::weightedOneOf<Probs>({{2, gen::just(Probs{})}, {3, gen_probs(80, 30, 80, 20)}}));
}

inline rc::Gen<WinSpec> gen_window() {
  using namespace rc;
  auto start = gen::weightedOneOf<uint64_t>(
      {{1, gen::just<uint64_t>(0)}, {4, gen::inRange<uint64_t>(0, 20 * kMs)}});
  return gen::mapcat(
      gen::element(WinKind::DropBurst, WinKind::Dead, WinKind::DelaySpike, WinKind::Chaos),
      [start](WinKind k) {
        auto kind = gen::set(&WinSpec::kind, gen::just(k));
        switch (k) {
          case WinKind::DropBurst:
            return gen::build<WinSpec>(kind, gen::set(&WinSpec::start_ns, start),
                                       gen::set(&WinSpec::len_ns, gen::inRange<uint64_t>(kUs, 2 * kMs)));
          case WinKind::Dead:  // far below the peer timeout (10 s) when that is enabled
            return gen::build<WinSpec>(kind, gen::set(&WinSpec::start_ns, start),
                                       gen::set(&WinSpec::len_ns, gen::inRange<uint64_t>(2 * kMs, 300 * kMs)));
          case WinKind::DelaySpike:
            return gen::build<WinSpec>(kind, gen::set(&WinSpec::start_ns, start),
                                       gen::set(&WinSpec::len_ns, gen::inRange<uint64_t>(10 * kUs, 10 * kMs)),
                                       gen::set(&WinSpec::extra_ns, gen::inRange<uint64_t>(100 * kUs, 20 * kMs)));
          case WinKind::Chaos:
          default:
            return gen::build<WinSpec>(kind, gen::set(&WinSpec::start_ns, start),
                                       gen::set(&WinSpec::len_ns, gen::inRange<uint64_t>(100 * kUs, 50 * kMs)),
                                       gen::set(&WinSpec::probs, gen_probs(500, 200, 300, 100)));
        }
      });
}

inline std::vector<FaultWindow> to_schedule(const std::vector<WinSpec>& ws, uint64_t t0, uint64_t seed) {
  std::vector<FaultWindow> out;
  for (const WinSpec& w : ws) {
    FaultWindow f;
    f.start_ns = t0 + w.start_ns;
    f.end_ns = f.start_ns + w.len_ns;
    f.blackout = w.kind == WinKind::DropBurst || w.kind == WinKind::Dead;
    f.extra_delay_ns = w.kind == WinKind::DelaySpike ? w.extra_ns : 0;
    f.override_faults = w.kind == WinKind::Chaos;
    f.faults = w.probs.config(seed);
    out.push_back(f);
  }
  return out;
}

// Splits [0, len) into n pieces at pseudo-random cut points (some may be empty).
inline void split_iov(iovec* iov, uint32_t n, uint8_t* base, size_t len, uint64_t h) {
  std::vector<size_t> cuts{0, len};
  for (uint32_t i = 1; i < n; ++i) cuts.push_back(len ? (h = mix(h)) % (len + 1) : 0);
  std::sort(cuts.begin(), cuts.end());
  for (uint32_t i = 0; i < n; ++i) iov[i] = {base + cuts[i], cuts[i + 1] - cuts[i]};
}

inline std::string stats_line(const Engine& e) {
  const EngineStats& s = e.stats();
  std::ostringstream os;
  os << "tx=" << s.tx_pkts << " rx=" << s.rx_pkts << " retx=" << s.retx_pkts
     << " rto=" << s.rto_events << " fast=" << s.fast_retx_events << " dup=" << s.dup_pkts
     << " ooo=" << s.ooo_pkts << " drop_window=" << s.drop_window
     << " drop_unexp_full=" << s.drop_unexpected_full << " drop_protocol=" << s.drop_protocol
     << " drop_checksum=" << s.drop_checksum << " stale=" << s.drop_stale_epoch
     << " resets=" << s.peer_resets << " dead=" << s.peers_dead
     << " sends=" << e.sends_in_use() << " recvs=" << e.recvs_in_use()
     << " unexp=" << e.unexpected_in_use() << " held=" << e.held_packets()
     << " cached=" << e.cached_packets();
  return os.str();
}
inline rc::Gen<std::vector<MsgSpec>> gen_msgs() {
  return rc::gen::scale(0.5, rc::gen::container<std::vector<MsgSpec>>(gen_msg()));  // <= 50
}

inline rc::Gen<std::vector<WinSpec>> gen_schedule(size_t max_windows = 6,
                                                  rc::Gen<WinSpec> window = gen_window()) {
  using namespace rc;
  return full_range(gen::mapcat(gen::inRange<size_t>(0, max_windows + 1), [window](size_t n) {
    return gen::container<std::vector<WinSpec>>(n, window);
  }));
}

}  // namespace pollfab::transport::proptest
