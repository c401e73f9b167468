// pollfab-bench-rate: message rate between two processes over any libfabric provider, public
// fi_* calls only (a libfabric application: it runs on pollfab's drop-in or, with
// LD_LIBRARY_PATH naming another libfabric.so.1, on the reference library).
//   receiver: pollfab-bench-rate -p PROV [options]
//   sender:   pollfab-bench-rate -p PROV [options] RECEIVER_ADDR
// FI_EP_RDM. The sender keeps a window of W sends in flight (fi_send or, with -m tagged,
// fi_tsend; each with a completion; -b B gives every B-th send without FI_MORE, the others
// with it) and re-posts as completions come; the receiver keeps as many receives posted as the
// run has messages left (at most -R, default 1024) and re-posts as they complete. Names are exchanged out
// of band (TCP); the out-of-band channel also starts each size (with the sender's --breakdown)
// and returns the receiver's end time, CPU time and (--breakdown) time breakdown.
// Both processes must run on one machine: the rate is messages / (the receiver's last
// completion - the sender's first post) on CLOCK_MONOTONIC, which only one host shares. Both
// sides need the same -S (the receiver sizes its buffers from its own).
// Columns per size: bytes, messages, window, Mmsg/s, MB/s (payload), CPU ns per message
// of the sender and of the receiver (getrusage over the run: every thread of the process, so a
// progress thread counts).
// --breakdown (the sender's; the receiver follows it) times each side's round with the TSC: a
// line after each row says, per side, the ns per message spent posting (the sender's fi_send
// loop with the flushes it triggers; the receiver's re-posts), in fi_cq_read calls that
// returned completions (each a progress round: the ns per call and the completions it
// returned) and waiting (fi_cq_read calls that found nothing, as a share of the round: both
// near 0 means both sides are busy all the time). The timing costs a few ns per call, so the
// rate it prints is a little lower than without. --spin-ns N adds N ns of busy work per
// completed message on the side it is given to (TSC-timed; each completion read that spins adds
// two TSC reads, ~20 ns, shared by its completions): if the rate falls by about N ns a message,
// that side is on the critical path. --period-ms N (the sender's) counts its completions by
// period of CLOCK_MONOTONIC, floor(t / N ms), past --period-guard-ms G of each (default 20),
// and prints each whole period's rate after the size's row ("#  period K even|odd M msg/s"):
// with a setting that alternates by period (fault.period_ms, or a build's experiment), the
// odd periods compare with the even ones beside them, which ran on the same vCPUs (the
// placement flips between runs and within them: docs/performance.md item 77). The clock read
// per completion batch costs ~1 ns a message. Both sides must run the same build (the
// out-of-band messages' layout).
#include <CLI/CLI.hpp>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <sys/resource.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "apps/common/oob.hpp"
#include "apps/common/periods.hpp"
#include "apps/common/sizes.hpp"
#include "lib/util/tsc.hpp"

using namespace pollfab;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kTag = 0x5a;
constexpr size_t kMaxPosted = 1024;

struct Args {
  std::string prov, server, sizes = "64,4k", mode = "msg", threading = "domain";
  uint64_t msgs = 1000000;
  uint32_t window = 64, batch = 1;
  uint32_t posted = kMaxPosted;  // receiver: receives kept posted
  uint32_t spin_ns = 0;          // busy work per completed message (--spin-ns)
  bool breakdown = false;        // sender: time posts, reads and waits (--breakdown)
  uint32_t period_ms = 0;        // sender: completions counted by period (--period-ms)
  uint32_t period_guard_ms = 20;
  double spin_tpn = 0;           // TSC ticks per ns, measured at start when spin_ns is set
  uint16_t oob_port = 47595;
  int timeout_s = 60;
};

struct Ofi {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_ep* ep = nullptr;
  fid_av* av = nullptr;
  fid_cq* txcq = nullptr;
  fid_cq* rxcq = nullptr;
  fid_mr* mr = nullptr;
  void* desc = nullptr;
  fi_addr_t peer = FI_ADDR_UNSPEC;
  std::vector<uint8_t> buf;
  std::vector<fi_context> ctx;
  bool tagged = false;
  ~Ofi() {
    if (ep) fi_close(&ep->fid);
    if (mr) fi_close(&mr->fid);
    if (av) fi_close(&av->fid);
    if (txcq) fi_close(&txcq->fid);
    if (rxcq) fi_close(&rxcq->fid);
    if (domain) fi_close(&domain->fid);
    if (fabric) fi_close(&fabric->fid);
    if (info) fi_freeinfo(info);
  }
};

int fail(const char* what, int r) {
  fprintf(stderr, "pollfab-bench-rate: %s: %s\n", what, fi_strerror(r < 0 ? -r : r));
  return 1;
}

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

// A cheap tick (the TSC on x86-64, converted with the round's own CLOCK_MONOTONIC span).
uint64_t ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return now_ns();
#endif
}

// --breakdown: one side's round, per message (ns) and per fi_cq_read call. The receiver sends
// its own to the sender out of band (both sides run this binary: same layout).
struct Breakdown {
  double post_ns = 0;       // posting, per message (the receiver's: with the fi_cq_read a refused
                            // re-post retries)
  double read_ns = 0;       // fi_cq_read calls that returned completions, per message
  double per_read_ns = 0;   // ... per call
  double per_read_msgs = 0; // completions per such call
  double wait_pct = 0;      // fi_cq_read calls that found nothing, % of the round
};

// --breakdown's accumulators, in ticks; inert (no clock reads) without it.
struct SideTimes {
  bool on = false;
  uint64_t t0 = 0, ns0 = 0, idle = 0, reads = 0, read_ticks = 0, got = 0, post_ticks = 0;
  explicit SideTimes(bool enabled) : on(enabled) {
    if (on) {
      t0 = ticks();
      ns0 = now_ns();
    }
  }
  uint64_t mark() const { return on ? ticks() : 0; }
  void posted(uint64_t from) {
    if (on) post_ticks += ticks() - from;
  }
  void read(uint64_t from, ssize_t n) {
    if (!on) return;
    const uint64_t d = ticks() - from;
    if (n > 0) {
      ++reads;
      read_ticks += d;
      got += uint64_t(n);
    } else {
      idle += d;
    }
  }
  Breakdown report(uint64_t msgs) const {
    Breakdown b;
    if (!on || !msgs) return b;
    const uint64_t span = std::max<uint64_t>(1, ticks() - t0);
    const double ns_per_tick = double(now_ns() - ns0) / double(span);
    b.post_ns = double(post_ticks) * ns_per_tick / double(msgs);
    b.read_ns = double(read_ticks) * ns_per_tick / double(msgs);
    b.per_read_ns = reads ? double(read_ticks) * ns_per_tick / double(reads) : 0;
    b.per_read_msgs = reads ? double(got) / double(reads) : 0;
    b.wait_pct = 100.0 * double(idle) / double(span);
    return b;
  }
};

// Ticks per ns (for --spin-ns): the process's TSC calibration (lib/util/tsc.hpp); none (not
// x86-64, where ticks() reads CLOCK_MONOTONIC): 1 a ns.
double ticks_per_ns() {
  const util::TscCalibration* c = util::tsc_calibration();
  return c ? c->ghz : 1.0;
}

// --spin-ns: n messages' worth of busy work, on the TSC.
void spin(const Args& a, ssize_t n) {
  if (!a.spin_ns || n <= 0) return;
  const uint64_t end = ticks() + uint64_t(double(uint64_t(n) * a.spin_ns) * a.spin_tpn);
  while (ticks() < end) {
  }
}

uint64_t cpu_ns() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ns = [](const timeval& t) { return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_usec) * 1000ull; };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

int open_ofi(Ofi& o, const Args& a, size_t max_size) {
  fi_info* hints = fi_allocinfo();
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG | FI_TAGGED;
  hints->mode = FI_CONTEXT;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = a.threading == "safe" ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
  if (!a.prov.empty()) hints->fabric_attr->prov_name = strdup(a.prov.c_str());
  int r = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &o.info);
  fi_freeinfo(hints);
  if (r) return fail("fi_getinfo", r);
  if ((r = fi_fabric(o.info->fabric_attr, &o.fabric, nullptr))) return fail("fi_fabric", r);
  if ((r = fi_domain(o.fabric, o.info, &o.domain, nullptr))) return fail("fi_domain", r);
  fi_cq_attr cq{};
  cq.format = FI_CQ_FORMAT_CONTEXT;
  cq.size = 4096;
  if ((r = fi_cq_open(o.domain, &cq, &o.txcq, nullptr))) return fail("fi_cq_open", r);
  if ((r = fi_cq_open(o.domain, &cq, &o.rxcq, nullptr))) return fail("fi_cq_open", r);
  fi_av_attr av{};
  av.type = FI_AV_MAP;
  if ((r = fi_av_open(o.domain, &av, &o.av, nullptr))) return fail("fi_av_open", r);
  if ((r = fi_endpoint(o.domain, o.info, &o.ep, nullptr))) return fail("fi_endpoint", r);
  if ((r = fi_ep_bind(o.ep, &o.av->fid, 0))) return fail("fi_ep_bind av", r);
  if ((r = fi_ep_bind(o.ep, &o.txcq->fid, FI_TRANSMIT))) return fail("fi_ep_bind txcq", r);
  if ((r = fi_ep_bind(o.ep, &o.rxcq->fid, FI_RECV))) return fail("fi_ep_bind rxcq", r);
  if ((r = fi_enable(o.ep))) return fail("fi_enable", r);
  o.buf.assign(kMaxPosted * std::max<size_t>(max_size, 1), 0x6b);
  o.ctx.resize(kMaxPosted);
  if (o.info->domain_attr->mr_mode & FI_MR_LOCAL) {
    if ((r = fi_mr_reg(o.domain, o.buf.data(), o.buf.size(), FI_SEND | FI_RECV, 0, 1, 0, &o.mr, nullptr)))
      return fail("fi_mr_reg", r);
    o.desc = fi_mr_desc(o.mr);
  }
  o.tagged = a.mode == "tagged";
  return 0;
}

int exchange_names(Ofi& o, apps::Oob& oob) {
  char name[256], peer[256];
  size_t len = sizeof name;
  uint32_t plen = 0;
  int r = fi_getname(&o.ep->fid, name, &len);
  if (r) return fail("fi_getname", r);
  if (!oob.send_blob(name, uint32_t(len)) || !oob.recv_blob(peer, sizeof peer, plen))
    return fail("name exchange", -FI_EIO);
  if ((r = fi_av_insert(o.av, peer, 1, &o.peer, 0, nullptr)) != 1)
    return fail("fi_av_insert", r < 0 ? r : -FI_EINVAL);
  return 0;
}

// Reads up to 64 completions; -1 on an error completion or call failure.
ssize_t drain(fid_cq* cq, fi_cq_entry* e, SideTimes& st) {
  const uint64_t t = st.mark();
  ssize_t n = fi_cq_read(cq, e, 64);
  st.read(t, n);
  if (n >= 0 || n == -FI_EAGAIN) return n < 0 ? 0 : n;
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    fi_cq_readerr(cq, &err, 0);
    fprintf(stderr, "pollfab-bench-rate: completion error: %s\n", fi_strerror(err.err));
  } else {
    fail("fi_cq_read", int(n));
  }
  return -1;
}

ssize_t post_recv(Ofi& o, size_t slot, size_t size) {
  void* p = o.buf.data() + slot * size;
  return o.tagged ? fi_trecv(o.ep, p, size, o.desc, FI_ADDR_UNSPEC, kTag, 0, &o.ctx[slot])
                  : fi_recv(o.ep, p, size, o.desc, FI_ADDR_UNSPEC, &o.ctx[slot]);
}

// Waits for the out-of-band channel's next bytes while driving the fabric (manual progress: an
// ACK the peer still waits for goes out only from inside a libfabric call).
void await_oob(Ofi& o, apps::Oob& oob) {
  fi_cq_entry e[8];
  while (!oob.readable(0)) {
    fi_cq_read(o.txcq, e, 0);
    fi_cq_read(o.rxcq, e, 0);
  }
}

struct Round {
  uint64_t size, msgs;
  uint64_t breakdown;  // the sender's --breakdown: the receiver times its round too
};

// One round's receives: re-posts each completed receive until rd.msgs messages are in (posted:
// the receives posted so far). A function of its own, never inlined: scripts/bench-instructions.sh
// counts its instructions (callgrind --toggle-collect), and the out-of-band waits stay outside.
[[gnu::noinline]] int receive_round(Ofi& o, const Args& a, const Round& rd, uint64_t posted,
                                    SideTimes& st) {
  uint64_t got = 0;
  auto deadline = Clock::now() + std::chrono::seconds(a.timeout_s);
  fi_cq_entry e[64];
  uint32_t spins = 0;
  while (got < rd.msgs) {
    ssize_t n = drain(o.rxcq, e, st);
    if (n < 0) return 1;
    spin(a, n);
    const uint64_t t = st.mark();
    for (ssize_t i = 0; i < n; ++i) {
      size_t slot = static_cast<size_t>(static_cast<fi_context*>(e[i].op_context) - o.ctx.data());
      if (posted < rd.msgs) {
        ssize_t r;
        while ((r = post_recv(o, slot, rd.size)) == -FI_EAGAIN) fi_cq_read(o.rxcq, nullptr, 0);
        if (r) return fail("fi_recv", int(r));
        ++posted;
      }
    }
    st.posted(t);
    got += uint64_t(n);
    if (n == 0 && (++spins & 4095) == 0 && Clock::now() > deadline) {
      fprintf(stderr, "pollfab-bench-rate: %llu of %llu messages within %d s\n",
              (unsigned long long)got, (unsigned long long)rd.msgs, a.timeout_s);
      return 1;
    }
  }
  return 0;
}

// What the receiver returns out of band after a round.
struct RxEnd {
  uint64_t end_ns;  // its last completion (CLOCK_MONOTONIC)
  uint64_t cpu_ns;  // its CPU time over the round
  Breakdown b;      // --breakdown
};

int receive(Ofi& o, apps::Oob& oob, const Args& a) {
  for (;;) {
    Round rd{};
    await_oob(o, oob);
    if (!oob.recv_all(&rd, sizeof rd) || rd.msgs == 0) return 0;
    if (rd.size * kMaxPosted > o.buf.size()) {  // its buffers hold kMaxPosted of its own -S
      fprintf(stderr, "pollfab-bench-rate: the sender's %llu-byte messages exceed the receiver's -S "
              "(give both sides the same -S)\n", (unsigned long long)rd.size);
      return 1;
    }
    uint64_t posted = 0;
    size_t slots = std::min<uint64_t>(a.posted, rd.msgs);
    for (size_t s = 0; s < slots; ++s, ++posted) {
      ssize_t r;
      while ((r = post_recv(o, s, rd.size)) == -FI_EAGAIN) fi_cq_read(o.rxcq, nullptr, 0);
      if (r) return fail("fi_recv", int(r));
    }
    uint64_t c0 = cpu_ns();
    if (!oob.sync()) return 1;
    SideTimes st(rd.breakdown != 0);
    if (int r = receive_round(o, a, rd, posted, st)) return r;
    RxEnd end{now_ns(), cpu_ns() - c0, st.report(rd.msgs)};
    if (!oob.send_all(&end, sizeof end)) return 1;
  }
}

// One round's sends (never inlined: scripts/bench-instructions.sh counts its instructions).
[[gnu::noinline]] int send_round(Ofi& o, const Args& a, const Round& rd, uint64_t& t0,
                                 SideTimes& st, apps::MessagesByPeriod* periods) {
  uint64_t posted = 0, done = 0;
  fi_cq_entry e[64];
  auto deadline = Clock::now() + std::chrono::seconds(a.timeout_s);
  uint32_t spins = 0;
  t0 = now_ns();
  while (done < rd.msgs) {
    const uint64_t t = st.mark();
    while (posted - done < a.window && posted < rd.msgs) {
      void* p = o.buf.data();
      fi_context* ctx = &o.ctx[posted % kMaxPosted];
      // FI_MORE on all but every batch-th send and the last one.
      bool more = a.batch > 1 && (posted + 1) % a.batch != 0 && posted + 1 < rd.msgs &&
                  posted + 1 - done < a.window;
      ssize_t r;
      if (!more) {
        r = o.tagged ? fi_tsend(o.ep, p, rd.size, o.desc, o.peer, kTag, ctx)
                     : fi_send(o.ep, p, rd.size, o.desc, o.peer, ctx);
      } else {
        iovec iov{p, rd.size};
        if (o.tagged) {
          fi_msg_tagged m{&iov, &o.desc, 1, o.peer, kTag, 0, ctx, 0};
          r = fi_tsendmsg(o.ep, &m, FI_MORE | FI_COMPLETION);
        } else {
          fi_msg m{&iov, &o.desc, 1, o.peer, ctx, 0};
          r = fi_sendmsg(o.ep, &m, FI_MORE | FI_COMPLETION);
        }
      }
      if (r == -FI_EAGAIN) break;
      if (r) return fail("fi_send", int(r));
      ++posted;
    }
    st.posted(t);
    ssize_t n = drain(o.txcq, e, st);
    if (n < 0) return 1;
    spin(a, n);
    if (periods && n > 0) periods->add(now_ns(), uint64_t(n));
    done += uint64_t(n);
    if (n == 0 && (++spins & 4095) == 0 && Clock::now() > deadline) {
      fprintf(stderr, "pollfab-bench-rate: %llu of %llu sends completed within %d s\n",
              (unsigned long long)done, (unsigned long long)rd.msgs, a.timeout_s);
      return 1;
    }
  }
  return 0;
}

int send(Ofi& o, apps::Oob& oob, const Args& a, const std::vector<size_t>& sizes) {
  printf("%-8s %-9s %6s %10s %10s %12s %12s\n", "bytes", "#msgs", "window", "Mmsg/s", "MB/s",
         "tx_cpu_ns", "rx_cpu_ns");
  std::vector<size_t> all{64};  // an untimed warm-up round first
  all.insert(all.end(), sizes.begin(), sizes.end());
  for (size_t i = 0; i < all.size(); ++i) {
    Round rd{all[i], i == 0 ? std::min<uint64_t>(a.msgs, 20000) : a.msgs, a.breakdown};
    if (!oob.send_all(&rd, sizeof rd) || !oob.sync()) return fail("out-of-band", -FI_EIO);
    uint64_t c0 = cpu_ns(), t0 = 0;
    SideTimes st(a.breakdown);
    std::optional<apps::MessagesByPeriod> periods;
    if (a.period_ms)
      periods.emplace(uint64_t(a.period_ms) * 1'000'000, uint64_t(a.period_guard_ms) * 1'000'000);
    if (int r = send_round(o, a, rd, t0, st, periods ? &*periods : nullptr)) return r;
    uint64_t tx_cpu = cpu_ns() - c0;
    const Breakdown tx = st.report(rd.msgs);
    RxEnd end{};
    await_oob(o, oob);
    if (!oob.recv_all(&end, sizeof end)) return fail("out-of-band", -FI_EIO);
    if (i == 0) continue;
    double sec = double(end.end_ns - t0) / 1e9;
    double rate = double(rd.msgs) / sec;
    printf("%-8llu %-9llu %6u %10.3f %10.1f %12.0f %12.0f\n", (unsigned long long)rd.size,
           (unsigned long long)rd.msgs, a.window, rate / 1e6, rate * double(rd.size) / 1e6,
           double(tx_cpu) / double(rd.msgs), double(end.cpu_ns) / double(rd.msgs));
    if (a.breakdown) {
      const Breakdown& rx = end.b;
      printf("#  tx: posts %.1f ns/msg, reads %.1f ns/msg (%.0f ns x %.1f completions), "
             "wait %.1f%%;  rx: reads %.1f ns/msg (%.0f ns x %.1f), re-posts %.1f ns/msg, "
             "wait %.1f%%\n",
             tx.post_ns, tx.read_ns, tx.per_read_ns, tx.per_read_msgs, tx.wait_pct, rx.read_ns,
             rx.per_read_ns, rx.per_read_msgs, rx.post_ns, rx.wait_pct);
    }
    if (periods) {
      for (const auto& p : periods->rates())
        printf("#  period %llu %s %.3f M msg/s\n", (unsigned long long)p.index,
               p.index % 2 ? "odd" : "even", p.per_s / 1e6);
    }
    fflush(stdout);
  }
  Round stop{0, 0, 0};
  oob.send_all(&stop, sizeof stop);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"message rate over libfabric (windowed sends, FI_EP_RDM)"};
  Args a;
  app.add_option("addr", a.server, "receiver's address for the out-of-band channel (sender)");
  app.add_option("-p,--provider", a.prov, "provider name");
  app.add_option("-S,--sizes", a.sizes, "message sizes, comma-separated (k, m suffixes)");
  app.add_option("-n,--messages", a.msgs, "messages per size");
  app.add_option("-W,--window", a.window, "sends in flight")->check(CLI::Range(1, 1024));
  app.add_option("-R,--posted", a.posted,
                 "receiver: receives kept posted (each re-posted as it completes; default 1024)")
      ->check(CLI::Range(1, int(kMaxPosted)));
  app.add_option("-b,--batch", a.batch, "sends per FI_MORE batch (1 = no FI_MORE)")->check(CLI::Range(1, 1024));
  app.add_option("-m,--mode", a.mode, "msg or tagged")->check(CLI::IsMember({"msg", "tagged"}));
  app.add_option("-B,--oob-port", a.oob_port, "out-of-band TCP port");
  app.add_option("-T,--timeout", a.timeout_s, "seconds a size may take");
  app.add_flag("--breakdown", a.breakdown,
               "sender: time each side's posts, completion reads and waits (the receiver "
               "follows)");
  app.add_option("--spin-ns", a.spin_ns,
                 "busy work per completed message, ns (which side binds the rate)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--period-ms", a.period_ms,
                 "sender: print the rate of each period of the clock, N ms (0: none)")
      ->check(CLI::Range(0, 60000));
  app.add_option("--period-guard-ms", a.period_guard_ms,
                 "sender: completions in the first G ms of a period not counted (20)")
      ->check(CLI::Range(0, 60000));
  app.add_option("-t,--threading", a.threading, "domain threading asked: domain or safe")
      ->check(CLI::IsMember({"domain", "safe"}));
  CLI11_PARSE(app, argc, argv);
  if (a.spin_ns) a.spin_tpn = ticks_per_ns();
  if (a.period_ms && a.period_guard_ms >= a.period_ms) {
    fprintf(stderr, "pollfab-bench-rate: --period-guard-ms must be below --period-ms\n");
    return 2;
  }

  std::vector<size_t> sizes;
  try {
    sizes = apps::parse_size_list(a.sizes);
  } catch (const std::exception&) {
    fprintf(stderr, "pollfab-bench-rate: -S %s: not a list of sizes\n", a.sizes.c_str());
    return 2;
  }
  size_t max_size = 64;
  for (size_t s : sizes) max_size = std::max(max_size, s);
  apps::Oob oob;
  std::string err;
  bool sender = !a.server.empty();
  if (sender ? !oob.connect(a.server, a.oob_port, 30, err) : !oob.serve(a.oob_port, 60, err)) {
    fprintf(stderr, "pollfab-bench-rate: out-of-band: %s\n", err.c_str());
    return 1;
  }
  Ofi o;
  if (int r = open_ofi(o, a, max_size)) return r;
  if (int r = exchange_names(o, oob)) return r;
  return sender ? send(o, oob, a, sizes) : receive(o, oob, a);
}
