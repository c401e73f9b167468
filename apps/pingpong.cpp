// `pollfab pingpong`: latency (ping-pong) and bandwidth (windowed streaming) between two
// processes over any libfabric provider, using public fi_* calls only (like fabtests).
//   server: pollfab pingpong [options] [-P SERVICE]
//   client: pollfab pingpong [options] SERVER_ADDR[:SERVICE]
// Without a service the two sides exchange fi_getname names over the out-of-band TCP channel.
// With one, the client names the server by address and service alone: the server's domain takes
// that UDP port (fi_getinfo(NULL, SERVICE): a service alone names the source), the client inserts it with
// fi_av_insertsvc(SERVER_ADDR, SERVICE) and introduces itself in its first message (its
// fi_getname), which the server inserts. The TCP channel then only paces the sizes.
// -e msg: the server listens on a passive endpoint and accepts; the client connects to the
// passive endpoint's name (exchanged), or with ADDR:SERVICE to fi_getinfo(ADDR, SERVICE)'s
// dest_addr: no name exchange at all.
// Columns match Debian's fi_pingpong: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
// (ping-pong: 2 transfers per iteration). --bw adds a streaming run per size; --bw-only runs it
// alone (no ping-pong phase), and with --period-ms (client) also its goodput per period of the
// clock, to compare with fault.period_ms (apps/common/periods.hpp). --json prints one JSON
// object per size instead of the table.
// --progress auto asks fi_getinfo for automatic progress; --wait fd|unspec|yield opens the CQs
// with that wait object and awaits completions by fi_trywait + poll(2) on FI_GETWAIT (fd) or
// fi_cq_sread (docs/progress.md).
// The fabric (opening it, the name exchange or introduction, the connection, and the post and
// wait calls) is pingpong_fabric.cpp; this file has the runs, their results and the options.
#include "apps/pingpong.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "apps/common/half_rtt.hpp"
#include "apps/common/oob.hpp"
#include "apps/common/periods.hpp"
#include "apps/common/sizes.hpp"
#include "apps/pingpong_fabric.hpp"

namespace pollfab::apps {
namespace {

using Clock = std::chrono::steady_clock;
using pingpong::Fabric;
using pingpong::fail;
using pingpong::post_recv;
using pingpong::post_send;
using pingpong::setup;
using pingpong::wait_cq;

std::vector<size_t> sizes_for(const std::string& spec, size_t max) {
  std::vector<size_t> v;
  if (spec == "all") {  // fi_pingpong's -S all: 0,1,2,3,4,6,8,12,... up to max (at most its 6 MiB)
    max = std::min<size_t>(max, 6u << 20);
    v.push_back(0);
    for (size_t p = 1; p <= max; p *= 2) {
      v.push_back(p);
      if (p >= 2 && p + p / 2 <= max) v.push_back(p + p / 2);
    }
    return v;
  }
  if (spec.empty()) {
    for (size_t s = 8; s <= (1u << 20); s *= 2) v.push_back(s);
  } else {
    v = parse_size_list(spec);
  }
  std::vector<size_t> out;
  for (size_t s : v) if (s <= max) out.push_back(s);
  return out;
}

void fill(char* p, size_t n, uint64_t iter) {
  static const char kAlpha[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  for (size_t i = 0; i < n; ++i) p[i] = kAlpha[(iter * 7 + i) % 62];
}
bool verify(const char* p, size_t n, uint64_t iter, size_t& bad) {
  static const char kAlpha[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  for (size_t i = 0; i < n; ++i)
    if (p[i] != kAlpha[(iter * 7 + i) % 62]) { bad = i; return false; }
  return true;
}

struct Result {
  size_t size;
  uint64_t iters;
  double elapsed_us;
  double bw_mbps = 0;  // streaming MB/s (if --bw)
  double cpu_s[2] = {-1, -1};  // --cpu: CPU seconds (all threads) of the ping-pong, client and server
  double p50_us = -1, p99_us = -1;  // --lat: half round trips, median and 99th percentile
  std::vector<PeriodGoodput> periods;  // --period-ms: the stream's goodput per period
};

// This process's CPU time, user + system, every thread (the library's progress threads too).
double process_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

void print_header(const PingpongArgs& a) {
  if (a.bw_only) {
    printf("%-10s %-8s %14s\n", "bytes", "#sent", "stream_MB/sec");
    return;
  }
  printf("%-10s %-8s %-8s %-8s %-8s %10s %10s %10s%s%s%s\n", "bytes", "#sent", "#ack", "total", "time",
         "MB/sec", "usec/xfer", "Mxfers/sec", a.bw ? "  stream_MB/sec" : "",
         a.cpu ? "  cpu_s/10k(client) cpu_s/10k(server)" : "", a.lat ? "  p50_usec  p99_usec" : "");
}

std::string human(double bytes) {
  char b[32];
  if (bytes >= 1e9) snprintf(b, sizeof b, "%.0fg", bytes / (1 << 30));
  else if (bytes >= 1e6) snprintf(b, sizeof b, "%.0fm", bytes / (1 << 20));
  else if (bytes >= 1e4) snprintf(b, sizeof b, "%.0fk", bytes / 1024);
  else snprintf(b, sizeof b, "%.0f", bytes);
  return b;
}

void print_result(const Result& r, const PingpongArgs& a) {
  if (a.bw_only) {  // no ping-pong phase: its columns would be empty
    if (a.json) {
      printf("{\"bytes\": %zu, \"stream_messages\": %llu, \"stream_mb_per_sec\": %.2f", r.size,
             (unsigned long long)r.iters, r.bw_mbps);
      if (a.period_ms) {  // [index, faulty, bytes, us] per period with counted windows
        printf(", \"period_ms\": %u, \"periods\": [", a.period_ms);
        for (size_t i = 0; i < r.periods.size(); ++i)
          printf("%s[%llu, %d, %llu, %.1f]", i ? ", " : "", (unsigned long long)r.periods[i].index,
                 r.periods[i].faulty ? 1 : 0, (unsigned long long)r.periods[i].bytes,
                 r.periods[i].us);
        printf("]");
      }
      printf("}\n");
    } else {
      printf("%-10s %-8llu %14.2f\n", human(double(r.size)).c_str(), (unsigned long long)r.iters,
             r.bw_mbps);
      for (const PeriodGoodput& p : r.periods)
        printf("# period %llu %-6s %10.2f MB/s (%u windows)\n", (unsigned long long)p.index,
               p.faulty ? "faulty" : "clean", double(p.bytes) / p.us, p.windows);
    }
    return;
  }
  double usec_per_xfer = r.elapsed_us / double(r.iters) / 2.0;
  double mbps = double(r.iters) * double(r.size) * 2.0 / r.elapsed_us;
  const double per10k = 10000.0 / double(r.iters);
  if (a.json) {
    printf("{\"bytes\": %zu, \"iterations\": %llu, \"elapsed_us\": %.1f, \"usec_per_xfer\": %.3f, "
           "\"mb_per_sec\": %.2f, \"mxfers_per_sec\": %.4f, \"stream_mb_per_sec\": %.2f",
           r.size, (unsigned long long)r.iters, r.elapsed_us, usec_per_xfer, mbps,
           1.0 / usec_per_xfer, r.bw_mbps);
    if (a.cpu)
      printf(", \"cpu_s_per_10k_client\": %.4f, \"cpu_s_per_10k_server\": %.4f",
             r.cpu_s[0] * per10k, r.cpu_s[1] * per10k);
    if (a.lat) printf(", \"p50_usec\": %.3f, \"p99_usec\": %.3f", r.p50_us, r.p99_us);
    printf("}\n");
    return;
  }
  char sent[32], total[32], time[32];
  snprintf(sent, sizeof sent, "%llu", (unsigned long long)r.iters);
  snprintf(total, sizeof total, "%s", human(double(r.iters) * double(r.size) * 2).c_str());
  snprintf(time, sizeof time, "%.2fs", r.elapsed_us / 1e6);
  printf("%-10s %-8s =%-7s %-8s %-8s %10.2f %10.2f %10.2f", human(double(r.size)).c_str(), sent,
         sent, total, time, mbps, usec_per_xfer, 1.0 / usec_per_xfer);
  if (a.bw) printf("  %14.2f", r.bw_mbps);
  if (a.cpu) printf("  %17.4f %18.4f", r.cpu_s[0] * per10k, r.cpu_s[1] * per10k);
  if (a.lat) printf("  %8.2f  %8.2f", r.p50_us, r.p99_us);
  printf("\n");
}

// One ping-pong run of iters round trips; us: its length. rtt (client, may be null): each
// iteration's half round trip in us (one clock reading per iteration). Never inlined:
// scripts/bench-instructions.sh counts its instructions by name (callgrind --toggle-collect).
[[gnu::noinline]] int run_pingpong(Fabric& f, size_t size, uint64_t iters, bool client,
                                   bool check, double& us, std::vector<float>* rtt = nullptr) {
  auto t0 = Clock::now();
  auto prev = t0;
  for (uint64_t i = 0; i < iters; ++i) {
    int r;
    if (client) {
      if (check) fill(f.txbuf.data(), size, i);
      if ((r = post_send(f, size, true))) return r;
      if ((r = wait_cq(f, f.rxcq, 1))) return r;
      if (rtt) {
        const auto t = Clock::now();
        rtt->push_back(std::chrono::duration<float, std::micro>(t - prev).count() / 2);
        prev = t;
      }
    } else {
      if ((r = wait_cq(f, f.rxcq, 1))) return r;
    }
    size_t bad = 0;
    if (check && !verify(f.rxbuf.data(), size, i, bad)) {
      fprintf(stderr, "pollfab pingpong: data error at iteration=%llu size=%zu byte=%zu\n",
              (unsigned long long)i, size, bad);
      return 255;
    }
    if ((r = post_recv(f, f.rxbuf.size()))) return r;
    if (!client) {
      if (check) fill(f.txbuf.data(), size, i);
      if ((r = post_send(f, size, true))) return r;
    }
  }
  us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  return 0;
}

// Streaming: the client sends `window` messages back to back, the server acknowledges each
// window with one 0-byte message. Returns client-side MB/s in mbps; spans (client, may be
// null): each window's start and end (apps/common/periods.hpp). Never inlined: callgrind's
// --toggle-collect names it (the receiver's instructions per packet under loss,
// docs/performance.md).
[[gnu::noinline]] int run_stream(Fabric& f, size_t size, uint64_t msgs, uint32_t window,
                                 bool client, double& mbps,
                                 std::vector<WindowSpan>* spans = nullptr) {
  uint64_t windows = std::max<uint64_t>(1, msgs / window);
  if (spans) spans->reserve(windows);
  auto ns = [](Clock::time_point t) {
    using std::chrono::nanoseconds;
    return uint64_t(std::chrono::duration_cast<nanoseconds>(t.time_since_epoch()).count());
  };
  auto t0 = Clock::now();
  auto tw = t0;  // the window's start
  int r;
  for (uint64_t w = 0; w < windows; ++w) {
    if (client) {
      size_t done = 0;  // send completions already reaped while the window was posted
      for (uint32_t k = 0; k < window; ++k)
        for (;;) {
          ssize_t s = fi_send(f.ep, f.txbuf.data(), size, f.desc, f.peer, &f.txctx);
          if (s == 0) break;
          if (s != -FI_EAGAIN) return fail("fi_send", static_cast<int>(s));
          fi_cq_entry e[16];
          ssize_t c = fi_cq_read(f.txcq, e, 16);
          if (c > 0) done += static_cast<size_t>(c);
          else if (c == -FI_EAVAIL) return wait_cq(f, f.txcq, 1);  // reports the error
        }
      if ((r = wait_cq(f, f.txcq, window - done))) return r;
      if ((r = wait_cq(f, f.rxcq, 1))) return r;  // window ack
      if ((r = post_recv(f, f.rxbuf.size()))) return r;  // for the next window ack
      if (spans) {
        const auto t = Clock::now();
        spans->push_back({ns(tw), ns(t)});
        tw = t;
      }
    } else {
      if ((r = wait_cq(f, f.rxcq, window))) return r;
      for (uint32_t k = 0; k < window; ++k)
        if ((r = post_recv(f, f.rxbuf.size()))) return r;
      if ((r = post_send(f, 0, true))) return r;
    }
  }
  double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  mbps = double(windows) * window * double(size) / us;
  return 0;
}

}  // namespace

void add_pingpong_options(CLI::App& app, PingpongArgs& a) {
  app.add_option("addr", a.server, "client mode: the server's address, ADDR or ADDR:SERVICE "
                 "(naming the server's fabric service; no name exchange)");
  app.add_option("-P,--service", a.service, "server: the fabric service (UDP port) to take");
  app.add_option("-p,--provider", a.provider, "provider (default: the first fi_getinfo result)");
  app.add_option("-d,--domain", a.domain, "domain name");
  app.add_option("-e,--ep", a.ep_type, "endpoint type: rdm, dgram or msg (connected)")
      ->check(CLI::IsMember({"rdm", "dgram", "msg"}));
  app.add_option("-S,--sizes", a.sizes, "sizes: list (8,64,4k,1m), 'all' (fi_pingpong's), "
                 "default powers of two 8 B .. 1 MiB");
  app.add_option("-I,--iterations", a.iterations, "iterations per size");
  app.add_flag("-c,--check", a.check, "verify the data of every message");
  app.add_flag("--bw", a.bw, "also run a streaming bandwidth test per size");
  app.add_flag("--bw-only", a.bw_only, "run only the streaming test (no ping-pong phase; "
               "bench-loss.sh, and profiles of the stream alone)");
  app.add_option("-w,--window", a.window, "messages per window in the streaming test");
  CLI::Option* period = app.add_option(
      "--period-ms", a.period_ms,
      "client, with --bw-only: also the stream's goodput per period of this many ms of "
      "CLOCK_MONOTONIC, as fault.period_ms alternates clean and faulty periods (JSON: periods, "
      "[index, faulty, bytes, us] each; apps/common/periods.hpp)")
      ->check(CLI::Range(1u, 3600000u));
  app.add_option("--period-guard-ms", a.period_guard_ms, "with --period-ms: count a period's "
                 "windows that start at least this long into it (the recovery after a switch "
                 "stays out)")
      ->needs(period);
  app.add_option("-B,--port", a.port, "out-of-band TCP port");
  app.add_option("--timeout-ms", a.timeout_ms, "give up when no completion arrives for this long");
  app.add_flag("--json", a.json, "one JSON object per size");
  CLI::Option* lat = app.add_flag("--lat", a.lat, "also print the median and 99th percentile half round trip "
               "(us; the client reads the clock once per iteration)");
  app.add_option("--lat-log", a.lat_log, "with --lat: the client writes every half round trip "
                 "(us, one a line in iteration order, after a '# size N' line per size) to this "
                 "file (a warm-up, or a stall, shows where it happened)")
      ->needs(lat);
  app.add_flag("--cpu", a.cpu, "also print the CPU seconds (all threads) each side used per "
               "10,000 round trips (server and client must both pass it)");
  app.add_option("--progress", a.progress, "data progress asked of fi_getinfo: manual (the "
                 "application's reads drive it) or auto (a thread per port)")
      ->check(CLI::IsMember({"manual", "auto"}));
  app.add_option("--wait", a.wait, "how completions are awaited: none (poll), fd (fi_trywait, "
                 "then poll(2) on FI_GETWAIT), unspec or yield (fi_cq_sread)")
      ->check(CLI::IsMember({"none", "fd", "unspec", "yield"}));
}

int pingpong_main(const PingpongArgs& in) {
  PingpongArgs a = in;
  if (a.bw_only) {
    a.bw = true;
    a.lat = a.cpu = false;  // both describe the ping-pong phase
  } else if (a.period_ms) {
    fprintf(stderr, "pollfab pingpong: --period-ms needs --bw-only\n");
    return 1;
  }
  std::string host = a.server;
  if (size_t colon = a.server.rfind(':'); colon != std::string::npos) {
    host = a.server.substr(0, colon);
    a.service = a.server.substr(colon + 1);
  }
  Oob oob;
  std::string err;
  bool client = !a.server.empty();
  HalfRttLog lat_log;
  if (client && !a.lat_log.empty() && !lat_log.open(a.lat_log, err)) {
    fprintf(stderr, "pollfab pingpong: --lat-log %s\n", err.c_str());
    return 1;
  }
  if (client ? !oob.connect(host, a.port, 30, err) : !oob.serve(a.port, 120, err)) {
    fprintf(stderr, "pollfab pingpong: out-of-band channel: %s\n", err.c_str());
    return 1;
  }
  Fabric f;
  f.timeout_ms = a.timeout_ms;
  PingpongArgs args = a;
  args.max_size = 1u << 20;
  for (size_t s : sizes_for(a.sizes, SIZE_MAX)) args.max_size = std::max(args.max_size, s);
  if (int r = setup(f, args, oob)) return r;
  std::vector<size_t> sizes = sizes_for(a.sizes, std::min<size_t>(f.info->ep_attr->max_msg_size, args.max_size));
  if (int r = post_recv(f, f.rxbuf.size())) return r;
  // Untimed warm-up: first-packet costs (bridge learning, caches, page faults) stay out of
  // the first size's numbers.
  if (!oob.sync()) return fail("out-of-band sync", -FI_EIO);
  double warm_us = 0;
  if (int r = run_pingpong(f, std::min<size_t>(64, f.rxbuf.size()), 200, client, false, warm_us)) return r;
  if (!a.json && client) print_header(a);
  for (size_t size : sizes) {
    if (!oob.sync()) return fail("out-of-band sync", -FI_EIO);
    uint64_t iters = a.iterations;
    Result res{size, iters, 0};
    if (a.bw_only)  // what run_stream sends: whole windows
      res.iters = std::max<uint64_t>(1, std::max<uint64_t>(iters, a.window) / a.window) * a.window;
    const double cpu0 = process_cpu_s();
    std::vector<float> rtt;
    if (a.lat && client) rtt.reserve(iters);
    if (!a.bw_only)
      if (int r = run_pingpong(f, size, iters, client, a.check, res.elapsed_us,
                               a.lat && client ? &rtt : nullptr))
        return r;
    lat_log.write(size, rtt);
    res.p50_us = percentile(rtt, 50);
    res.p99_us = percentile(rtt, 99);
    if (a.cpu) {  // the server's figure travels to the client on the out-of-band channel
      double mine = process_cpu_s() - cpu0;
      if (client) {
        res.cpu_s[0] = mine;
        if (!oob.recv_all(&res.cpu_s[1], sizeof(double))) return fail("out-of-band cpu", -FI_EIO);
      } else if (!oob.send_all(&mine, sizeof mine)) {
        return fail("out-of-band cpu", -FI_EIO);
      }
    }
    if (a.bw) {
      if (!oob.sync()) return fail("out-of-band sync", -FI_EIO);
      // The server pre-posts a window of receives; the client's posted receive is for acks.
      if (!client) {
        fi_cancel(&f.ep->fid, &f.rxctx);  // the spare receive from the ping-pong phase
        fi_cq_err_entry e{};
        fi_cq_entry ce;
        while (fi_cq_read(f.rxcq, &ce, 1) == -FI_EAVAIL) fi_cq_readerr(f.rxcq, &e, 0);
        for (uint32_t k = 0; k < a.window; ++k)
          if (int r = post_recv(f, f.rxbuf.size())) return r;
      }
      if (!oob.sync()) return fail("out-of-band sync", -FI_EIO);
      std::vector<WindowSpan> spans;
      if (int r = run_stream(f, size, std::max<uint64_t>(iters, a.window), a.window, client,
                             res.bw_mbps, client && a.period_ms ? &spans : nullptr))
        return r;
      if (client && a.period_ms)
        res.periods = goodput_by_period(spans, uint64_t(a.window) * size,
                                        uint64_t(a.period_ms) * 1'000'000,
                                        uint64_t(a.period_guard_ms) * 1'000'000);
      if (!oob.sync()) return fail("out-of-band sync", -FI_EIO);
      if (!client) {
        for (uint32_t k = 0; k < a.window; ++k) fi_cancel(&f.ep->fid, &f.rxctx);
        fi_cq_err_entry e{};
        fi_cq_entry ce;
        while (fi_cq_read(f.rxcq, &ce, 1) == -FI_EAVAIL) fi_cq_readerr(f.rxcq, &e, 0);
        if (int r = post_recv(f, f.rxbuf.size())) return r;
      }
      if (!oob.sync()) return fail("out-of-band sync", -FI_EIO);
    }
    if (client) print_result(res, a);
    fflush(stdout);
  }
  oob.sync();
  if (!lat_log.close(err)) {
    fprintf(stderr, "pollfab pingpong: --lat-log %s\n", err.c_str());
    return 1;
  }
  return 0;
}

}  // namespace pollfab::apps
