// pollfab-bench-loss: goodput of the transport under random loss over the in-memory link.
//
// Two transport engines stream `--msgs` messages of `--size` bytes (a -> b, `--depth` sends
// outstanding, receives pre-posted) over a MemLink with a bandwidth model (`--rate-mbps`,
// one-way `--latency-us`, a switch queue of `--queue-us`) and random drop on both directions
// (data and ACKs). Time is virtual (ManualClock): the result measures the protocol, not this
// machine, and is deterministic for a seed. Goodput = message bytes delivered / virtual time
// from the first send to the last receive completion, in MB/s (10^6 bytes per second).
//
// Prints one row per drop rate: goodput, ratio to the lossless run, packets retransmitted per
// packet sent, RTO and fast/RACK retransmission counts. A benchmark, not a test (scripts/bench-loss.sh).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/engine.hpp"
#include "transport/testing/manual_clock.hpp"
#include "transport/testing/mem_link.hpp"

using namespace pollfab::transport;
using namespace pollfab::transport::testing;

namespace {

struct Sink final : CompletionSink {
  uint64_t sends = 0, recvs = 0, errors = 0;
  void on_completion(const Completion& c) noexcept override {
    if (c.status != pollfab::util::Status::Ok) ++errors;
    if (c.flags & kCompRecv) ++recvs; else ++sends;
  }
};

struct Result {
  double goodput_mbs = 0;
  double retx_ratio = 0;
  uint64_t rto = 0, fast = 0, rack = 0, cc_dec = 0, queue_drops = 0;
  bool ok = false;
};

struct Params {
  uint32_t size = 1 << 20, msgs = 64, depth = 4;
  uint64_t rate_mbps = 25000, latency_us = 2, queue_us = 300;
  uint32_t window = 256;
  uint32_t reorder_window = 1024;
  bool cc = true;
  uint64_t seed = 1;
  double dup = 0, reorder = 0;
  uint64_t reorder_us = 20;
};

Result run(const Params& pr, double drop) {
  ManualClock clock;
  MemLinkConfig lc;
  lc.rate_mbps = pr.rate_mbps;
  lc.latency_ns = pr.latency_us * 1000;
  lc.queue_limit_ns = pr.queue_us * 1000;
  lc.pool_buffers = 4 * std::max(pr.window, pr.reorder_window) + 1024;
  lc.reorder_delay_ns = pr.reorder_us * 1000;
  lc.fault_ab.dup = lc.fault_ba.dup = pr.dup;
  lc.fault_ab.reorder = lc.fault_ba.reorder = pr.reorder;
  lc.fault_ab.drop = drop;
  lc.fault_ab.seed = pr.seed;
  lc.fault_ba.drop = drop;
  lc.fault_ba.seed = pr.seed + 1;
  MemLink link(lc, clock);
  EngineConfig ca, cb;
  ca.ep_id = 1;
  cb.ep_id = 2;
  ca.window_pkts = cb.window_pkts = pr.window;
  ca.reorder_window_pkts = cb.reorder_window_pkts = pr.reorder_window;
  ca.cc = cb.cc = pr.cc;
  ca.peer_timeout_ns = cb.peer_timeout_ns = 0;
  Sink sa, sb;
  Engine a(ca, link.a(), clock, sa), b(cb, link.b(), clock, sb);
  PeerId ab = a.peer(PeerAddr{link.host(1), 2});
  b.peer(PeerAddr{link.host(0), 1});

  std::vector<uint8_t> src(pr.size, 0x5a), dst(size_t(pr.size) * pr.depth);
  uint32_t posted = 0, sent = 0;
  auto post_recvs = [&] {
    while (posted < pr.msgs && posted < sb.recvs + pr.depth) {
      RecvOp op;
      op.iov[0] = {dst.data() + size_t(posted % pr.depth) * pr.size, pr.size};
      op.iov_count = 1;
      op.flags = kOpCompletion;
      if (b.recv(op) != pollfab::util::Status::Ok) break;
      ++posted;
    }
  };
  auto post_sends = [&] {
    while (sent < pr.msgs && sent < sa.sends + pr.depth) {
      SendOp op;
      op.peer = ab;
      op.iov[0] = {src.data(), pr.size};
      op.iov_count = 1;
      op.flags = kOpCompletion;
      if (a.send(op) != pollfab::util::Status::Ok) break;
      ++sent;
    }
  };
  const uint64_t t0 = clock.now_ns();
  PacketBuf bufs[64];
  for (uint64_t guard = 0; guard < 500'000'000 && sb.recvs < pr.msgs; ++guard) {
    post_recvs();
    post_sends();
    size_t moved = 0;
    uint16_t n;
    while ((n = link.a().rx_burst(bufs, 64)) > 0) { for (uint16_t i = 0; i < n; ++i) a.on_packet(bufs[i]); moved += n; }
    while ((n = link.b().rx_burst(bufs, 64)) > 0) { for (uint16_t i = 0; i < n; ++i) b.on_packet(bufs[i]); moved += n; }
    a.progress();
    b.progress();
    if (!moved) {
      uint64_t t = std::min({link.next_delivery_ns(), a.next_deadline_ns(), b.next_deadline_ns()});
      if (t == UINT64_MAX) break;
      clock.set(std::max(t, clock.now_ns() + 1));
    }
  }
  Result r;
  r.ok = sb.recvs == pr.msgs && sa.errors == 0 && sb.errors == 0;
  double secs = double(clock.now_ns() - t0) / 1e9;
  r.goodput_mbs = secs > 0 ? double(sb.recvs) * pr.size / secs / 1e6 : 0;
  const EngineStats& s = a.stats();
  r.retx_ratio = s.tx_pkts ? double(s.retx_pkts) / double(s.tx_pkts) : 0;
  r.rto = s.rto_events;
  r.fast = s.fast_retx_events;
  r.rack = s.rack_retx_events;
  r.cc_dec = s.cc_decreases;
  r.queue_drops = link.queue_drops();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pollfab-bench-loss: transport goodput under random loss (in-memory link, virtual time)"};
  Params pr;
  std::vector<double> drops{0, 0.001, 0.01, 0.05, 0.10};
  bool no_cc = false;
  app.add_option("--drop", drops, "drop probabilities (both directions)")->delimiter(',');
  app.add_option("--size", pr.size, "message size, bytes");
  app.add_option("--msgs", pr.msgs, "messages per run");
  app.add_option("--depth", pr.depth, "sends outstanding");
  app.add_option("--rate-mbps", pr.rate_mbps, "link rate, Mbit/s");
  app.add_option("--latency-us", pr.latency_us, "one-way latency, us");
  app.add_option("--queue-us", pr.queue_us, "switch queue limit, us of serialisation (0 = unbounded)");
  app.add_option("--window", pr.window, "packets in flight (the pipe), transport.window_pkts");
  app.add_option("--reorder-window", pr.reorder_window,
                 "PSNs past the cumulative ACK, transport.reorder_window_pkts");
  app.add_option("--seed", pr.seed, "fault seed");
  app.add_flag("--no-cc", no_cc, "congestion control off");
  app.add_option("--dup", pr.dup, "duplication probability (both directions)");
  app.add_option("--reorder", pr.reorder, "reorder probability (both directions)");
  app.add_option("--reorder-us", pr.reorder_us, "a reordered packet is late by 1..4 times this");
  CLI11_PARSE(app, argc, argv);
  pr.cc = !no_cc;

  fmt::print("in-memory link: {} Mbit/s, {} us one way, queue {} us, window {} pkts, "
             "reorder window {}, cc {}, {} x {} B, depth {}, dup {}, reorder {}\n", pr.rate_mbps,
             pr.latency_us, pr.queue_us, pr.window, pr.reorder_window, pr.cc ? "on" : "off", pr.msgs, pr.size, pr.depth, pr.dup,
             pr.reorder);
  fmt::print("{:>7} {:>12} {:>7} {:>9} {:>6} {:>7} {:>7} {:>7}\n", "drop%", "goodput MB/s",
             "ratio", "retx/tx", "RTOs", "fastrx", "rackrx", "cc_dec");
  double base = 0;
  int rc = 0;
  for (double d : drops) {
    Result r = run(pr, d);
    if (d == 0 || base == 0) base = base ? base : r.goodput_mbs;
    fmt::print("{:>7.1f} {:>12.1f} {:>7.3f} {:>9.4f} {:>6} {:>7} {:>7} {:>7}{}\n", d * 100,
               r.goodput_mbs, base ? r.goodput_mbs / base : 0, r.retx_ratio, r.rto, r.fast,
               r.rack, r.cc_dec, r.ok ? "" : "  INCOMPLETE");
    if (!r.ok) rc = 1;
  }
  return rc;
}
