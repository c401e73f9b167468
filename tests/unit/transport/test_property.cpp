// Property tests of the transport engine (rapidcheck): two Engines over a MemLink driven by a
// ManualClock (no sleeps, no threads, no wall-clock dependence), random traffic under random
// fault SCHEDULES.
//
// Generated per case: message sizes (0 B .. 256 KiB log-uniform, segment-boundary sizes, now
// and then 1..3 MiB), counts, both directions, tagged/untagged (colliding tags, ignore masks),
// inject/normal, with/without completion and CQ data, 1..4 iovecs, receive buffers with slack,
// send and receive posting times (so receives are posted before, during or after arrival:
// posted, claimed and unexpected paths); engine window, ACK coalescing, unexpected budget,
// send/receive pool sizes (NoResource paths), link packet pool size, failure detection
// on/off; per direction static drop/dup/reorder probabilities plus a
// schedule of time windows: drop bursts, a direction dead for up to 300 ms (shorter than the
// peer timeout), delay spikes, windows of heavy random drop/dup/reorder(/corrupt).
//
// Properties (RDM): every send completes once with Ok; every message is received exactly
// once, intact (bytes from a pattern of (seed, direction, index); slack bytes untouched), in
// send order per direction, with its tag / CQ data / length; after quiescence nothing leaks
// (sends/recvs/unexpected/held all 0, link buffers == what the engines cache).
// Properties (RDM, peer failure): with a short peer timeout and dead periods longer than it,
// sends complete Ok or TimedOut; what is received Ok is an in-order, intact prefix holding
// every message whose send completed Ok; other receives fail or are canceled; no leaks.
// Properties (DGRAM): sends complete at once, received datagrams are intact and were sent,
// never more receptions than sends + duplicates; no leaks after canceling unused receives.
// PropFindings.DISABLED_*: engine behaviour found by these properties, kept as disabled tests
// (run with --gtest_also_run_disabled_tests).
//
// Randomness: every fault-injector decision, engine epoch and iovec split derives from
// `fault_seed` (rapidcheck-generated, shown in the counterexample and RC_LOG), so a case is
// fully determined by rapidcheck's generated values.
//
// Corrupting faults (kCorruptFaults) flip random bits; the engine's CRC-32C check must drop
// every such packet (stats().drop_checksum) so nothing corrupt is ever delivered.
//
// Replaying a failure: rapidcheck prints the (shrunk) counterexample, including fault_seed,
// and at the end of the run a line such as
//     Some of your RapidCheck properties had failures. To reproduce these, run with:
//     RC_PARAMS="reproduce=BchVHZ..."
// Run exactly that case (and its shrunk form) with:
//     RC_PARAMS="reproduce=BchVHZ..." build/tests/test_property --gtest_filter=Prop.<name>
// PF_PROP_TRACE=1 prints every completion with its simulated time (use it with the reproduce
// string). The meson test pins `seed` (CI is deterministic); to explore new cases run the binary
// directly, e.g. RC_PARAMS="max_success=2000" build/tests/test_property (a random seed is
// printed as "Using configuration: seed=..."; RC_PARAMS="seed=<n>" replays the whole run).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/transport/harness.hpp"

using namespace pollfab::transport;
using namespace pollfab::transport::test;
using pollfab::transport::testing::FaultConfig;
using pollfab::transport::testing::FaultWindow;
using pollfab::util::Status;

namespace {

// Corrupting faults (a random bit flipped in a packet, header or payload): the engine's
// CRC-32C check (wire::verify) drops them and counts them in stats().drop_checksum.
constexpr bool kCorruptFaults = true;

constexpr uint64_t kUs = 1'000, kMs = 1'000'000;
constexpr uint32_t kMaxPacket = 1472;
constexpr uint32_t kSeg = kMaxPacket - 72;  // wire::kHeaderBytes
constexpr uint32_t kInjectSize = 1024;

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Content of message idx of direction dir: a function of (seed, dir, idx, offset).
void fill(uint8_t* p, size_t len, uint64_t seed, int dir, uint64_t idx) {
  uint64_t x = mix(seed ^ mix(idx * 2 + uint64_t(dir))) | 1;
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    std::memcpy(p + i, &x, 8);
  }
  for (; i < len; ++i) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; p[i] = uint8_t(x); }
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

std::ostream& operator<<(std::ostream& os, const MsgSpec& m) {
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

std::ostream& operator<<(std::ostream& os, const Probs& p) {
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

std::ostream& operator<<(std::ostream& os, const WinSpec& w) {
  static const char* names[] = {"drop-burst", "dead", "delay-spike", "chaos"};
  os << "{" << names[int(w.kind)] << " @" << w.start_ns << "+" << w.len_ns;
  if (w.kind == WinKind::DelaySpike) os << " extra=" << w.extra_ns;
  if (w.kind == WinKind::Chaos) os << " " << w.probs;
  return os << "}";
}

rc::Gen<uint32_t> gen_size() {
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

rc::Gen<uint64_t> gen_gap() {
  using namespace rc;
  return gen::weightedOneOf<uint64_t>({
      {70, gen::just<uint64_t>(0)},
      {20, gen::inRange<uint64_t>(0, 200 * kUs)},
      {10, gen::inRange<uint64_t>(0, 5 * kMs)},
  });
}

rc::Gen<MsgSpec> gen_msg() {
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

rc::Gen<Probs> gen_probs(uint32_t drop_max, uint32_t dup_max, uint32_t reorder_max,
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
rc::Gen<Probs> gen_base_probs() {
  using namespace rc;
  return full_range(
      gen::weightedOneOf<Probs>({{2, gen::just(Probs{})}, {3, gen_probs(80, 30, 80, 20)}}));
}

rc::Gen<WinSpec> gen_window() {
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

std::vector<FaultWindow> to_schedule(const std::vector<WinSpec>& ws, uint64_t t0, uint64_t seed) {
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
void split_iov(iovec* iov, uint32_t n, uint8_t* base, size_t len, uint64_t h) {
  std::vector<size_t> cuts{0, len};
  for (uint32_t i = 1; i < n; ++i) cuts.push_back(len ? (h = mix(h)) % (len + 1) : 0);
  std::sort(cuts.begin(), cuts.end());
  for (uint32_t i = 0; i < n; ++i) iov[i] = {base + cuts[i], cuts[i + 1] - cuts[i]};
}

std::string stats_line(const Engine& e) {
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

// ---- one reliable-mode case ----

class RdmCase {
 public:
  struct Params {
    uint64_t seed = 0;
    uint32_t window_pkts = 256;
    uint32_t ack_coalesce = 16;
    uint64_t unexpected_budget = 64ull << 20;
    bool failure_detection = false;
    // Peer-failure mode: peer_timeout_ns is short (below some dead windows), so peers may be
    // declared dead; sends and receives may then fail with TimedOut (see run_with_failures).
    uint64_t peer_timeout_ns = 0;
    // Schedules and traffic start this long after the clock's start; run_with_failures first
    // exchanges one message each way in that time, so each engine knows its peer's epoch.
    uint64_t start_offset_ns = 0;
    uint32_t tx_size = 1024, rx_size = 1024;  // engine pools (small: NoResource paths)
    uint32_t link_buffers = 16384;            // packet pool shared by both engines
    Probs base[2];
    std::vector<WinSpec> sched[2];
    std::vector<MsgSpec> msgs[2];  // [0]: a -> b, [1]: b -> a
  };

  explicit RdmCase(const Params& p) : p_(p), t_(link_config(p), engine_config(p, 0), engine_config(p, 1)) {
    const uint64_t t0 = t_.clock.now_ns() + p.start_offset_ns;
    for (int d = 0; d < 2; ++d) {
      Dir& D = dir_[d];
      D.tx = d == 0 ? t_.a.get() : t_.b.get();
      D.rx = d == 0 ? t_.b.get() : t_.a.get();
      D.to = d == 0 ? t_.a_to_b : t_.b_to_a;
      D.from = d == 0 ? t_.b_to_a : t_.a_to_b;
      const size_t n = p_.msgs[d].size();
      D.sbuf.resize(n);
      D.rbuf.resize(n);
      D.send_state.assign(n, 0);
      D.recv_state.assign(n, 0);
      D.send_at.resize(n);
      D.recv_at.resize(n);
      uint64_t ts = t0, tr = t0;
      for (size_t i = 0; i < n; ++i) {
        D.send_at[i] = ts += p_.msgs[d][i].send_gap_ns;
        D.recv_at[i] = tr += p_.msgs[d][i].recv_gap_ns;
      }
    }
    t_.sink_a.hook = nullptr;
    t_.sink_b.hook = nullptr;
  }

  void run() {
    RC_LOG() << "fault_seed=" << p_.seed << "\n";
    const bool ok = drive([&] { return all_done(); }, 600'000ull * kMs);
    if (!ok) RC_FAIL("stalled before all messages completed\n" + describe());
    // Quiesce: the last ACKs settle, nothing in flight.
    const bool quiet = drive([&] {
      return !t_.a->busy() && !t_.b->busy() && t_.link.in_flight() == 0;
    }, 600'000ull * kMs);
    if (!quiet) RC_FAIL("did not quiesce\n" + describe());
    consume_completions();
    check_no_leaks();
    classify();
  }

  // With a short peer timeout a peer may be declared dead. Then: every send completes once,
  // Ok or TimedOut; the messages received Ok are exactly a prefix of each direction's
  // sequence, in order and intact, and include every message whose send completed Ok; the
  // other receives complete with TimedOut, or (posted after the sender was declared dead)
  // stay posted and are canceled at the end; no leaks.
  void run_with_failures() {
    RC_LOG() << "fault_seed=" << p_.seed << " peer_timeout_ns=" << p_.peer_timeout_ns << "\n";
    failures_ok_ = true;
    // Warm-up: one message each way, so that each engine learns its peer's epoch before any
    // peer is declared dead (see DISABLED_DeadPeerRevivedByItsFirstPacket for what happens
    // otherwise).
    RC_ASSERT(t_.b->recv(make_recv(warm_buf_[0], 8, kWarmUpCtx)) == Status::Ok);
    RC_ASSERT(t_.a->recv(make_recv(warm_buf_[1], 8, kWarmUpCtx)) == Status::Ok);
    RC_ASSERT(t_.a->send(make_send(t_.a_to_b, warm_buf_[2], 8, kWarmUpCtx)) == Status::Ok);
    RC_ASSERT(t_.b->send(make_send(t_.b_to_a, warm_buf_[3], 8, kWarmUpCtx)) == Status::Ok);
    if (!drive([&] { return warm_done_ == 4; }, p_.start_offset_ns))
      RC_DISCARD("warm-up exchange did not finish in time");
    auto settled = [&] {
      for (int d = 0; d < 2; ++d) {
        const Dir& D = dir_[d];
        if (D.sends_done != D.send_state.size() || D.next_recv != D.recv_state.size()) return false;
        if (D.recvs_done != D.recv_state.size() && !D.rx->peer_stats(D.from).dead) return false;
      }
      return !t_.a->busy() && !t_.b->busy() && t_.link.in_flight() == 0;
    };
    if (!drive(settled, 600'000ull * kMs)) RC_FAIL("stalled\n" + describe());
    // Let liveness resolve what is left half-way (a message half received from a peer that
    // gave up): two more timeouts of idle time.
    const uint64_t until = t_.clock.now_ns() + 2 * p_.peer_timeout_ns;
    if (!drive([&] { return t_.clock.now_ns() >= until && settled(); }, 600'000ull * kMs))
      RC_FAIL("stalled\n" + describe());
    canceling_ = true;
    for (int d = 0; d < 2; ++d) {
      Dir& D = dir_[d];
      for (size_t i = 0; i < D.recv_state.size(); ++i)
        if (D.recv_state[i] == 1 && !D.rx->cancel_recv(ctx(i)))
          RC_FAIL("dir " + std::to_string(d) + " recv " + std::to_string(i) +
                  " pending but not cancelable\n" + describe());
    }
    consume_completions();
    size_t drained_total = 0;
    for (int d = 0; d < 2; ++d) {
      const Dir& D = dir_[d];
      RC_ASSERT(D.recvs_done == D.recv_state.size());
      // Messages that arrived after their receives failed wait in the unexpected queue
      // (the engine revives a peer declared dead before its first packet was heard, see
      // below). They must be the messages right after the received prefix, in order, intact.
      const size_t drained = drain_unexpected(d);
      drained_total += drained;
      for (size_t i = 0; i < D.send_state.size(); ++i)
        if (D.send_state[i] == 2 && D.recv_state[i] != 2 && i >= D.next_recv_completion + drained)
          RC_FAIL("dir " + std::to_string(d) + " send " + std::to_string(i) +
                  " completed Ok but the message was not received\n" + describe());
    }
    // A peer declared dead before any packet of it arrived (remote epoch unknown) is taken
    // back by its first packet as a "new incarnation", although it is the same one.
    RC_CLASSIFY(drained_total > 0, "dead peer taken back by its first packet");
    check_no_leaks();
    RC_CLASSIFY(t_.link.window_stats(0).blackout_dropped + t_.link.window_stats(1).blackout_dropped > 0, "blackout");
    RC_CLASSIFY(t_.a->stats().peers_dead + t_.b->stats().peers_dead > 0, "a peer was declared dead");
  }

 private:
  struct Dir {
    Engine* tx = nullptr;
    Engine* rx = nullptr;
    PeerId to = kNoPeer;    // the receiver, as the sender knows it
    PeerId from = kNoPeer;  // the sender, as the receiver knows it
    std::vector<std::vector<uint8_t>> sbuf, rbuf;
    std::vector<uint8_t> send_state, recv_state;  // 0 not posted, 1 posted, 2 completed
    std::vector<uint64_t> send_at, recv_at;
    size_t next_send = 0, next_recv = 0;
    size_t sends_done = 0, recvs_done = 0;
    size_t next_recv_completion = 0;  // receive completions must come in index order
    bool send_blocked = false, recv_blocked = false;  // NoResource: retried after every step
  };

  static MemLinkConfig link_config(const Params& p) {
    MemLinkConfig lc;
    lc.max_packet_bytes = kMaxPacket;
    lc.pool_buffers = p.link_buffers;
    lc.fault_ab = p.base[0].config(mix(p.seed ^ 0xab));
    lc.fault_ba = p.base[1].config(mix(p.seed ^ 0xba));
    const uint64_t t0 = ManualClock().now_ns() + p.start_offset_ns;  // the Pair's clock starts there
    lc.schedule_ab = to_schedule(p.sched[0], t0, 0);
    lc.schedule_ba = to_schedule(p.sched[1], t0, 0);
    return lc;
  }

  static EngineConfig engine_config(const Params& p, int side) {
    EngineConfig c;
    c.epoch = uint32_t(mix(p.seed + 11 + side)) | 1;  // deterministic incarnations
    c.window_pkts = p.window_pkts;
    c.ack_coalesce_pkts = p.ack_coalesce;
    c.max_unexpected_bytes = p.unexpected_budget;
    c.inject_size = kInjectSize;
    c.tx_size = p.tx_size;
    c.rx_size = p.rx_size;
    c.peer_timeout_ns = p.peer_timeout_ns ? p.peer_timeout_ns
                        : p.failure_detection ? EngineConfig{}.peer_timeout_ns : 0;
    // With a short peer timeout keep the RTO backoff well below it: a sender whose backed-off
    // RTO exceeds the timeout declares a live peer dead between two retransmissions.
    if (p.peer_timeout_ns) c.rto_max_ns = std::min<uint64_t>(c.rto_max_ns, p.peer_timeout_ns / 5);
    return c;
  }

  static void* ctx(size_t idx) { return reinterpret_cast<void*>(uintptr_t(idx + 1)); }
  static size_t idx_of(void* c) { return reinterpret_cast<uintptr_t>(c) - 1; }

  bool all_done() const {
    for (const Dir& D : dir_)
      if (D.sends_done != D.send_state.size() || D.recvs_done != D.recv_state.size()) return false;
    return true;
  }

  uint64_t next_post_ns() const {
    uint64_t t = UINT64_MAX;
    for (const Dir& D : dir_) {
      if (D.next_send < D.send_at.size() && !D.send_blocked) t = std::min(t, D.send_at[D.next_send]);
      if (D.next_recv < D.recv_at.size() && !D.recv_blocked) t = std::min(t, D.recv_at[D.next_recv]);
    }
    return t;
  }

  void post_due() {
    const uint64_t now = t_.clock.now_ns();
    for (int d = 0; d < 2; ++d) {
      Dir& D = dir_[d];
      const auto& msgs = p_.msgs[d];
      while (D.next_recv < msgs.size() && D.recv_at[D.next_recv] <= now) {
        const size_t i = D.next_recv;
        const MsgSpec& m = msgs[i];
        auto& buf = D.rbuf[i];
        buf.assign(size_t(m.size) + m.slack + 1, 0xEE);  // +1: never a null base
        RecvOp op;
        op.peer = m.directed ? D.from : kAnyPeer;
        op.iov_count = m.recv_iovs;
        split_iov(op.iov, m.recv_iovs, buf.data(), buf.size() - 1, mix(p_.seed ^ (i << 8) ^ 0x77 ^ d));
        op.flags = (m.completion ? kOpCompletion : 0) | (m.tagged ? kOpTagged : 0);
        op.tag = m.tag;
        op.ignore = m.ignore;
        op.context = ctx(i);
        D.recv_state[i] = 1;
        const Status st = D.rx->recv(op);
        D.recv_blocked = st == Status::NoResource;
        if (D.recv_blocked) { D.recv_state[i] = 0; break; }
        RC_ASSERT(st == Status::Ok);
        ++D.next_recv;
      }
      while (D.next_send < msgs.size() && D.send_at[D.next_send] <= now) {
        const size_t i = D.next_send;
        const MsgSpec& m = msgs[i];
        auto& buf = D.sbuf[i];
        buf.resize(size_t(m.size) + 1);
        fill(buf.data(), m.size, p_.seed, d, i);
        const bool inject = m.inject && m.size <= kInjectSize;
        SendOp op;
        op.peer = D.to;
        op.iov_count = m.send_iovs;
        split_iov(op.iov, m.send_iovs, buf.data(), m.size, mix(p_.seed ^ (i << 8) ^ 0x55 ^ d));
        op.flags = (m.completion ? kOpCompletion : 0) | (m.tagged ? kOpTagged : 0) |
                   (m.cq_data ? kOpCqData : 0) | (inject ? kOpInject : 0);
        op.tag = m.tag;
        op.cq_data = m.cq_data ? mix(i ^ 0xc0de) : 0;
        op.context = ctx(i);
        D.send_state[i] = 1;
        const Status st = D.tx->send(op);
        D.send_blocked = st == Status::NoResource;
        if (D.send_blocked) { D.send_state[i] = 0; break; }
        RC_ASSERT(st == Status::Ok);
        ++D.next_send;
        if (inject) std::memset(buf.data(), 0x5A, buf.size());  // the engine must have copied
      }
    }
  }

  // Checks completions reported since the last call (throws on violation: outside the
  // engine's noexcept callbacks).
  void consume_completions() {
    for (int side = 0; side < 2; ++side) {
      RecordingSink& sink = side == 0 ? t_.sink_a : t_.sink_b;
      for (const Completion& c : sink.comps) {
        if (c.context == kWarmUpCtx) {
          RC_ASSERT(c.status == Status::Ok);
          ++warm_done_;
          continue;
        }
        if (trace_)
          std::fprintf(stderr, "t=%lu %c: %s %zu %s len=%lu\n",
                       (unsigned long)(t_.clock.now_ns() - ManualClock().now_ns()), "ab"[side],
                       (c.flags & kCompSend) ? "send" : "recv", idx_of(c.context),
                       pollfab::util::to_string(c.status), (unsigned long)c.len);
        if (c.flags & kCompSend) on_send_completion(side == 0 ? 0 : 1, c);
        else if (c.flags & kCompRecv) on_recv_completion(side == 0 ? 1 : 0, c);
        else RC_FAIL("completion with neither send nor recv flag");
      }
      sink.comps.clear();
    }
  }

  void check_no_leaks() const {
    for (const Engine* e : {t_.a.get(), t_.b.get()}) {
      const char* n = e == t_.a.get() ? "a" : "b";
      if (e->sends_in_use() || e->recvs_in_use() || e->unexpected_in_use() || e->held_packets())
        RC_FAIL(std::string("engine ") + n + " leaks at quiescence\n" + describe());
    }
    if (t_.link.buffers_in_use() != t_.a->cached_packets() + t_.b->cached_packets())
      RC_FAIL("link buffers leaked: " + std::to_string(t_.link.buffers_in_use()) + " in use\n" +
              describe());
  }

  // Receives, one by one, what waits in direction d's receiver's unexpected queue, checking
  // it is message k, k+1, ... (k = size of the received prefix). Returns how many.
  size_t drain_unexpected(int d) {
    Dir& D = dir_[d];
    RecordingSink& sink = D.rx == t_.a.get() ? t_.sink_a : t_.sink_b;
    size_t j = D.next_recv_completion, n = 0;
    for (; D.rx->unexpected_in_use() > 0 && j < p_.msgs[d].size(); ++j, ++n) {
      const MsgSpec& m = p_.msgs[d][j];
      std::vector<uint8_t> buf(size_t(m.size) + 1, 0xEE), expect(m.size);
      RecvOp op = make_recv(buf.data(), m.size, reinterpret_cast<void*>(uintptr_t(0xd0000000 + j)));
      if (m.tagged) { op.flags |= kOpTagged; op.ignore = ~0ull; }
      sink.comps.clear();
      RC_ASSERT(D.rx->recv(op) == Status::Ok);
      if (sink.comps.size() != 1) {
        D.rx->cancel_recv(op.context);
        sink.comps.clear();
        break;
      }
      const Completion c = sink.comps[0];
      sink.comps.clear();
      const std::string what = "dir " + std::to_string(d) + " drained message " + std::to_string(j);
      if (c.status != Status::Ok || c.len != m.size)
        RC_FAIL(what + ": " + pollfab::util::to_string(c.status) + " len " + std::to_string(c.len));
      fill(expect.data(), m.size, p_.seed, d, j);
      if (m.size && std::memcmp(expect.data(), buf.data(), m.size) != 0) RC_FAIL(what + " corrupt");
      if (m.tagged) RC_ASSERT(c.tag == m.tag);
    }
    if (D.rx->unexpected_in_use() != 0)
      RC_FAIL("dir " + std::to_string(d) + ": unexpected messages left that are not the next "
              "ones in sequence\n" + describe());
    return n;
  }

  void on_send_completion(int d, const Completion& c) {
    Dir& D = dir_[d];
    const size_t i = idx_of(c.context);
    RC_ASSERT(i < D.send_state.size());
    RC_ASSERT(D.send_state[i] == 1);  // posted and completed once
    if (failures_ok_ && c.status == Status::TimedOut) {
      RC_ASSERT(c.cq_entry);  // errors always write an entry
      D.send_state[i] = 3;
      ++D.sends_done;
      std::vector<uint8_t>().swap(D.sbuf[i]);
      return;
    }
    if (c.status != Status::Ok)
      RC_FAIL("dir " + std::to_string(d) + " send " + std::to_string(i) + " failed: " +
              pollfab::util::to_string(c.status) + "\n" + describe());
    const MsgSpec& m = p_.msgs[d][i];
    RC_ASSERT(c.len == m.size);
    RC_ASSERT(c.cq_entry == m.completion);
    RC_ASSERT(bool(c.flags & kCompTagged) == m.tagged);
    D.send_state[i] = 2;
    ++D.sends_done;
    std::vector<uint8_t>().swap(D.sbuf[i]);
  }

  void on_recv_completion(int d, const Completion& c) {
    Dir& D = dir_[d];
    const size_t i = idx_of(c.context);
    RC_ASSERT(i < D.recv_state.size());
    const std::string what = "dir " + std::to_string(d) + " recv " + std::to_string(i);
    if (failures_ok_ && ((c.status == Status::TimedOut && !canceling_) ||
                         (c.status == Status::Canceled && canceling_))) {
      if (D.recv_state[i] != 1) RC_FAIL(what + " completed twice or before it was posted");
      if (i < D.next_recv_completion) RC_FAIL(what + " failed below the received prefix");
      RC_ASSERT(c.cq_entry);
      D.recv_state[i] = 3;
      ++D.recvs_done;
      return;
    }
    if (c.status != Status::Ok)
      RC_FAIL(what + " failed: " + pollfab::util::to_string(c.status) + "\n" + describe());
    if (D.recv_state[i] != 1) RC_FAIL(what + " completed twice or before it was posted");
    if (i != D.next_recv_completion)
      RC_FAIL(what + " completed out of order, expected " + std::to_string(D.next_recv_completion));
    for (size_t k = 0; k < i; ++k)
      if (D.recv_state[k] != 2) RC_FAIL(what + " received Ok after receive " + std::to_string(k) + " failed");
    const MsgSpec& m = p_.msgs[d][i];
    RC_ASSERT(c.len == m.size);
    RC_ASSERT(c.olen == 0u);
    RC_ASSERT(c.peer == D.from);
    RC_ASSERT(c.cq_entry == m.completion);
    RC_ASSERT(bool(c.flags & kCompTagged) == m.tagged);
    if (m.tagged) RC_ASSERT(c.tag == m.tag);
    RC_ASSERT(bool(c.flags & kCompRemoteCqData) == m.cq_data);
    if (m.cq_data) RC_ASSERT(c.cq_data == mix(i ^ 0xc0de));
    std::vector<uint8_t> expect(m.size);
    fill(expect.data(), m.size, p_.seed, d, i);
    const auto& buf = D.rbuf[i];
    if (m.size && std::memcmp(expect.data(), buf.data(), m.size) != 0) {
      size_t at = 0;
      while (expect[at] == buf[at]) ++at;
      RC_FAIL(what + " (" + std::to_string(m.size) + " B) corrupt from byte " + std::to_string(at) +
              "\n" + describe());
    }
    for (size_t k = m.size; k < buf.size(); ++k)
      if (buf[k] != 0xEE) RC_FAIL(what + " wrote beyond the message at byte " + std::to_string(k));
    D.recv_state[i] = 2;
    ++D.recvs_done;
    ++D.next_recv_completion;
    std::vector<uint8_t>().swap(D.rbuf[i]);
  }

  // Steps both engines until done() holds. When nothing moves, jumps the clock to the next
  // event (packet delivery, engine timer, scheduled post). False on stall or time limit.
  bool drive(const std::function<bool()>& done, uint64_t max_sim_ns) {
    const uint64_t limit = t_.clock.now_ns() + max_sim_ns;
    for (uint64_t steps = 0; steps < 20'000'000; ++steps) {
      post_due();
      consume_completions();
      if (done()) return true;
      if (t_.step() == 0) {
        consume_completions();
        if (done()) return true;
        uint64_t next = std::min({t_.link.next_delivery_ns(), t_.a->next_deadline_ns(),
                                  t_.b->next_deadline_ns(), next_post_ns()});
        // Liveness checks (probes, peer timeout) run in progress() but are not reported by
        // next_deadline_ns(): when failure detection is on, idle time passes in slices.
        const uint64_t timeout = t_.a->config().peer_timeout_ns;
        if (timeout && (next == UINT64_MAX || next > t_.clock.now_ns() + timeout / 8))
          next = t_.clock.now_ns() + timeout / 8;
        if (next == UINT64_MAX) return false;  // nothing will ever happen again
        if (next > limit) return false;
        t_.clock.set(std::max(next, t_.clock.now_ns() + 1));
      }
    }
    return false;
  }

  std::string describe() const {
    std::ostringstream os;
    os << "fault_seed=" << p_.seed << " t=" << t_.clock.now_ns() - ManualClock().now_ns()
       << "ns in_flight=" << t_.link.in_flight() << "\n";
    for (int d = 0; d < 2; ++d) {
      const Dir& D = dir_[d];
      const auto& fs = t_.link.fault_stats(d);
      const auto& ws = t_.link.window_stats(d);
      os << "  dir " << d << (d ? " (b->a)" : " (a->b)") << ": sends " << D.sends_done << "/"
         << D.send_state.size() << " recvs " << D.recvs_done << "/" << D.recv_state.size()
         << " posted s/r " << D.next_send << "/" << D.next_recv << "; link seen=" << fs.seen
         << " drop=" << fs.dropped << " dup=" << fs.duplicated << " reorder=" << fs.reordered
         << " corrupt=" << fs.corrupted << " blackout=" << ws.blackout_dropped
         << " delayed=" << ws.delayed << "\n";
    }
    os << "  a: " << stats_line(*t_.a) << "\n  b: " << stats_line(*t_.b) << "\n";
    return os.str();
  }

  void classify() const {
    uint64_t blackout = 0, delayed = 0, faults = 0;
    for (int d = 0; d < 2; ++d) {
      blackout += t_.link.window_stats(d).blackout_dropped;
      delayed += t_.link.window_stats(d).delayed;
      const auto& fs = t_.link.fault_stats(d);
      faults += fs.dropped + fs.duplicated + fs.reordered + fs.corrupted;
    }
    const auto& sa = t_.a->stats();
    const auto& sb = t_.b->stats();
    RC_CLASSIFY(blackout > 0, "blackout hit");
    RC_CLASSIFY(delayed > 0, "delay spike hit");
    RC_CLASSIFY(faults > 0, "random faults hit");
    RC_CLASSIFY(sa.rto_events + sb.rto_events > 0, "RTO fired");
    RC_CLASSIFY(sa.drop_unexpected_full + sb.drop_unexpected_full > 0, "unexpected budget full");
  }

  Params p_;
  Pair t_;
  Dir dir_[2];
  static inline void* const kWarmUpCtx = reinterpret_cast<void*>(uintptr_t(0xfee1));
  uint8_t warm_buf_[4][8] = {};
  size_t warm_done_ = 0;
  const bool trace_ = std::getenv("PF_PROP_TRACE") != nullptr;  // completions to stderr
  bool failures_ok_ = false;  // run_with_failures: TimedOut is an allowed outcome
  bool canceling_ = false;    // the final cancel of receives nobody will satisfy
};

rc::Gen<std::vector<MsgSpec>> gen_msgs() {
  return rc::gen::scale(0.5, rc::gen::container<std::vector<MsgSpec>>(gen_msg()));  // <= 50
}

rc::Gen<std::vector<WinSpec>> gen_schedule(size_t max_windows = 6,
                                           rc::Gen<WinSpec> window = gen_window()) {
  using namespace rc;
  return full_range(gen::mapcat(gen::inRange<size_t>(0, max_windows + 1), [window](size_t n) {
    return gen::container<std::vector<WinSpec>>(n, window);
  }));
}

}  // namespace

// Exactly-once, intact, in-order delivery both ways under random fault schedules; no leaks.
RC_GTEST_PROP(Prop, RdmExactlyOnceInOrderIntactUnderFaultSchedules, ()) {
  RdmCase::Params p;
  p.seed = *rc::gen::arbitrary<uint64_t>().as("fault_seed");
  p.window_pkts = *rc::gen::elementOf(std::vector<uint32_t>{8, 16, 64, 256}).as("window_pkts");
  p.ack_coalesce = *rc::gen::elementOf(std::vector<uint32_t>{1, 4, 16}).as("ack_coalesce_pkts");
  p.unexpected_budget =
      *rc::gen::weightedElement<uint64_t>({{4, 64ull << 20}, {1, 256ull << 10}, {1, 4096ull}})
           .as("max_unexpected_bytes");
  p.failure_detection = *rc::gen::arbitrary<bool>().as("failure_detection (10 s timeout)");
  p.tx_size = *rc::gen::weightedElement<uint32_t>({{4, 1024}, {1, 4}, {1, 1}}).as("tx_size");
  p.rx_size = *rc::gen::weightedElement<uint32_t>({{4, 1024}, {1, 4}, {1, 1}}).as("rx_size");
  // A small packet pool: enough for both windows and the engines' allocation caches.
  p.link_buffers = *rc::gen::weightedElement<uint32_t>({{4, 16384}, {1, 4 * p.window_pkts + 160}})
                        .as("link pool_buffers");
  p.base[0] = *gen_base_probs().as("static faults a->b");
  p.base[1] = *gen_base_probs().as("static faults b->a");
  p.sched[0] = *gen_schedule().as("schedule a->b");
  p.sched[1] = *gen_schedule().as("schedule b->a");
  p.msgs[0] = *gen_msgs().as("messages a->b");
  p.msgs[1] = *gen_msgs().as("messages b->a");
  RdmCase(p).run();
}

// Peer failure: a short peer timeout (20..200 ms) and dead windows up to 500 ms, so peers
// are sometimes declared dead mid-transfer. Sends complete Ok or TimedOut; what is received
// Ok is an in-order, intact prefix containing every message whose send completed Ok; other
// receives fail or are canceled at the end; nothing leaks.
RC_GTEST_PROP(Prop, RdmPeerTimeoutFailsCleanly, ()) {
  RdmCase::Params p;
  p.seed = *rc::gen::arbitrary<uint64_t>().as("fault_seed");
  p.window_pkts = *rc::gen::elementOf(std::vector<uint32_t>{8, 64, 256}).as("window_pkts");
  p.start_offset_ns = 10 * kMs;
  p.peer_timeout_ns =
      *full_range(rc::gen::inRange<uint64_t>(20 * kMs, 200 * kMs)).as("peer_timeout_ns");
  p.unexpected_budget =
      *rc::gen::weightedElement<uint64_t>({{3, 64ull << 20}, {1, 4096ull}}).as("max_unexpected_bytes");
  p.base[0] = *gen_base_probs().as("static faults a->b");
  p.base[1] = *gen_base_probs().as("static faults b->a");
  auto dead = rc::gen::build<WinSpec>(
      rc::gen::set(&WinSpec::kind, rc::gen::just(WinKind::Dead)),
      rc::gen::set(&WinSpec::start_ns, rc::gen::weightedOneOf<uint64_t>(
                                             {{2, rc::gen::just<uint64_t>(0)},
                                              {2, rc::gen::inRange<uint64_t>(0, 500 * kUs)},
                                              {1, rc::gen::inRange<uint64_t>(0, 30 * kMs)}})),
      rc::gen::set(&WinSpec::len_ns, rc::gen::inRange<uint64_t>(5 * kMs, 500 * kMs)));
  auto window = rc::gen::weightedOneOf<WinSpec>({{3, dead}, {1, gen_window()}});
  p.sched[0] = *gen_schedule(3, window).as("schedule a->b");
  p.sched[1] = *gen_schedule(3, window).as("schedule b->a");
  p.msgs[0] = *gen_msgs().as("messages a->b");
  p.msgs[1] = *gen_msgs().as("messages b->a");
  RdmCase(p).run_with_failures();
}

// Datagram mode: one packet per message, no ACKs. Under drop/dup/reorder and blackouts every
// send completes Ok at once; what arrives is intact and was sent (never more receptions than
// sends + duplicates); without faults everything arrives in order. No leaks.
RC_GTEST_PROP(Prop, DgramIntactAtMostSentPlusDupNoLeaks, ()) {
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>().as("fault_seed");
  const Probs probs = *full_range(rc::gen::weightedOneOf<Probs>(
                                {{1, rc::gen::just(Probs{})}, {3, gen_probs(300, 200, 300, 100)}}))
                           .as("faults a->b");
  const auto sched = *gen_schedule().as("schedule a->b");
  const auto sizes = *rc::gen::container<std::vector<uint32_t>>(rc::gen::inRange<uint32_t>(0, kSeg + 1))
                          .as("sizes");
  const auto tagged = *rc::gen::container<std::vector<bool>>(sizes.size(), rc::gen::arbitrary<bool>())
                           .as("tagged");
  RC_LOG() << "fault_seed=" << seed << "\n";

  MemLinkConfig lc;
  lc.max_packet_bytes = kMaxPacket;
  lc.fault_ab = probs.config(mix(seed ^ 0xab));
  lc.schedule_ab = to_schedule(sched, ManualClock().now_ns(), 0);
  EngineConfig ca, cb;
  ca.reliable = cb.reliable = false;
  ca.epoch = uint32_t(mix(seed + 11)) | 1;
  cb.epoch = uint32_t(mix(seed + 12)) | 1;
  Pair t(lc, ca, cb);
  const size_t n = sizes.size();
  // One receive per send and class, posted up front: untagged ones, and tagged ones that
  // accept any tag, so the k-th datagram to arrive in a class lands in the k-th receive.
  std::vector<std::vector<uint8_t>> rbuf(n, std::vector<uint8_t>(kSeg + 8, 0xEE));
  for (size_t i = 0; i < n; ++i) {
    RecvOp op = make_recv(rbuf[i].data(), rbuf[i].size(), reinterpret_cast<void*>(i + 1));
    if (tagged[i]) { op.flags |= kOpTagged; op.ignore = ~0ull; }
    RC_ASSERT(t.b->recv(op) == Status::Ok);
  }
  std::vector<uint8_t> sbuf(kSeg);
  for (size_t i = 0; i < n; ++i) {
    fill(sbuf.data(), sizes[i], seed, 0, i);
    SendOp op = make_send(t.a_to_b, sbuf.data(), sizes[i], reinterpret_cast<void*>(i + 1),
                          kOpCompletion | kOpCqData | (tagged[i] ? kOpTagged : 0));
    op.cq_data = i;  // which message this is
    op.tag = i * 7;
    Status st = t.a->send(op);
    for (int k = 0; k < 1000 && st == Status::NoResource; ++k) {
      t.step();
      st = t.a->send(op);
    }
    RC_ASSERT(st == Status::Ok);
    t.clock.advance(1 + (mix(seed ^ i) % 20) * kUs);
    t.step();
  }
  RC_ASSERT(t.run_until([&] { return t.link.in_flight() == 0; }));
  size_t sends = 0, recvs = 0;
  std::vector<size_t> got(n, 0);
  std::vector<uint8_t> expect;
  size_t last = 0;
  bool in_order = true;
  for (const Completion& c : t.sink_a.comps) {
    RC_ASSERT((c.flags & kCompSend) != 0u);
    RC_ASSERT(c.status == Status::Ok);
    ++sends;
  }
  for (const Completion& c : t.sink_b.comps) {
    RC_ASSERT((c.flags & kCompRecv) != 0u);
    RC_ASSERT(c.status == Status::Ok);
    RC_ASSERT((c.flags & kCompRemoteCqData) != 0u);
    const size_t i = c.cq_data;
    RC_ASSERT(i < n);
    const size_t slot = reinterpret_cast<uintptr_t>(c.context) - 1;
    RC_ASSERT(bool(c.flags & kCompTagged) == tagged[i]);
    RC_ASSERT(tagged[slot] == tagged[i]);
    RC_ASSERT(c.len == sizes[i]);
    if (tagged[i]) RC_ASSERT(c.tag == i * 7);
    expect.resize(sizes[i]);
    fill(expect.data(), sizes[i], seed, 0, i);
    RC_ASSERT(std::memcmp(expect.data(), rbuf[slot].data(), sizes[i]) == 0);
    for (size_t k = sizes[i]; k < rbuf[slot].size(); ++k) RC_ASSERT(rbuf[slot][k] == 0xEE);
    if (recvs && i < last) in_order = false;
    last = i;
    ++got[i];
    ++recvs;
  }
  RC_ASSERT(sends == n);
  const auto& fs = t.link.fault_stats(0);
  RC_ASSERT(recvs + t.b->stats().drop_no_recv <= n + fs.duplicated);
  if (fs.dropped + fs.duplicated + fs.reordered + fs.corrupted +
          t.link.window_stats(0).blackout_dropped + t.link.window_stats(0).delayed == 0) {
    RC_ASSERT(recvs == n);
    RC_ASSERT(in_order);
  }
  // Cancel what was not consumed; then nothing may be left.
  for (size_t i = 0; i < n; ++i) t.b->cancel_recv(reinterpret_cast<void*>(i + 1));
  RC_ASSERT(t.a->sends_in_use() == 0u);
  RC_ASSERT(t.b->recvs_in_use() == 0u);
  RC_ASSERT(t.b->unexpected_in_use() == 0u);
  RC_ASSERT(t.link.buffers_in_use() == t.a->cached_packets() + t.b->cached_packets());
}

// A finding, kept as a disabled test (run it with --gtest_also_run_disabled_tests): a peer
// declared dead before any of its packets was heard (its epoch still unknown, 0) is taken back
// by its first packet as if it were a new incarnation (engine_rx.cpp, on_packet: remote_epoch
// 0 != src_epoch, so `p.dead = false`), although it is the very incarnation declared dead.
// Here b times out on a (a -> b is dark for 18 ms, b's send and receive fail with TimedOut),
// then a's retransmission at ~31 ms revives it: b acknowledges, a's send completes Ok and the
// message waits in b's unexpected queue although b's application was told it failed. With a
// small unexpected budget the undeliverable head then pins held packets and the sender
// retransmits forever (found by RdmPeerTimeoutFailsCleanly before it got its warm-up).
TEST(PropFindings, DISABLED_DeadPeerRevivedByItsFirstPacket) {
  const uint64_t t0 = ManualClock().now_ns();
  MemLinkConfig lc;
  FaultWindow dark;
  dark.start_ns = t0;
  dark.end_ns = t0 + 18 * kMs;
  dark.blackout = true;
  lc.schedule_ab = {dark};
  EngineConfig ca, cb;
  ca.peer_timeout_ns = cb.peer_timeout_ns = 20 * kMs;
  ca.epoch = 0xa;
  cb.epoch = 0xb;
  Pair t(lc, ca, cb);
  std::vector<uint8_t> msg(1401, 7), rbuf(1401), nothing(1);
  ASSERT_EQ(t.b->recv(make_recv(rbuf.data(), rbuf.size(), &rbuf)), Status::Ok);
  ASSERT_EQ(t.a->recv(make_recv(nothing.data(), 0, &nothing)), Status::Ok);
  ASSERT_EQ(t.a->send(make_send(t.a_to_b, msg.data(), msg.size(), &msg)), Status::Ok);
  ASSERT_EQ(t.b->send(make_send(t.b_to_a, nothing.data(), 0, &nothing)), Status::Ok);
  for (int i = 0; i < 400; ++i) {  // 200 ms in 0.5 ms slices (liveness has no deadline)
    t.step();
    t.clock.advance(500 * kUs);
  }
  ASSERT_EQ(t.b->stats().peers_dead, 1u);  // b declared a dead at ~20 ms ...
  EXPECT_TRUE(t.b->peer_stats(t.b_to_a).dead) << "... and took it back";
  for (const Completion& c : t.sink_a.comps) {
    if (c.flags & kCompSend) {
      EXPECT_EQ(c.status, Status::TimedOut) << "a's send completed although b gave up on a";
    }
  }
  EXPECT_EQ(t.b->unexpected_in_use(), 0u) << "a message of the dead incarnation was accepted";
}
