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
// (ping-pong: 2 transfers per iteration). --bw adds a streaming run per size. --json prints one
// JSON object per size instead of the table. --progress auto asks fi_getinfo for automatic
// progress; --wait fd|unspec|yield opens the CQs with that wait object and awaits completions
// by fi_trywait + poll(2) on FI_GETWAIT (fd) or fi_cq_sread (docs/progress.md).
#include "apps/pingpong.hpp"

#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
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
#include "apps/common/sizes.hpp"

namespace pollfab::apps {
namespace {

using Clock = std::chrono::steady_clock;

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

struct Fabric {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_cq* txcq = nullptr;
  fid_cq* rxcq = nullptr;
  fid_av* av = nullptr;
  fid_eq* eq = nullptr;      // -e msg
  fid_pep* pep = nullptr;    // -e msg, server
  fi_info* conn_info = nullptr;  // -e msg, server: the FI_CONNREQ's info
  fid_ep* ep = nullptr;
  fid_mr* mr = nullptr;
  void* desc = nullptr;
  fi_addr_t peer = FI_ADDR_UNSPEC;
  std::vector<char> txbuf, rxbuf;
  fi_context2 txctx{}, rxctx{};
  size_t inject = 0;
  int timeout_ms = 10000;
  fi_wait_obj wait = FI_WAIT_NONE;
  int txfd = -1, rxfd = -1;  // FI_GETWAIT descriptors (wait fd)

  ~Fabric() {
    if (mr) fi_close(&mr->fid);
    if (ep) fi_close(&ep->fid);
    if (pep) fi_close(&pep->fid);
    if (rxcq) fi_close(&rxcq->fid);
    if (txcq) fi_close(&txcq->fid);
    if (av) fi_close(&av->fid);
    if (eq) fi_close(&eq->fid);
    if (domain) fi_close(&domain->fid);
    if (conn_info) fi_freeinfo(conn_info);
    if (fabric) fi_close(&fabric->fid);
    if (info) fi_freeinfo(info);
  }
};

int fail(const char* what, int r) {
  fprintf(stderr, "pollfab pingpong: %s: %s (%d)\n", what, fi_strerror(-r), r);
  return r < 0 ? -r : 1;
}

// One read for wait_cq: polls (FI_WAIT_NONE), blocks in fi_cq_sread (UNSPEC, YIELD), or, with
// FI_WAIT_FD, sleeps in poll(2) on the CQ's FI_GETWAIT descriptor once fi_trywait allows it
// (fi_poll(3)), then reads.
ssize_t read_cq(Fabric& f, fid_cq* cq, fi_cq_entry* e, size_t n) {
  if (f.wait == FI_WAIT_NONE) return fi_cq_read(cq, e, n);
  if (f.wait != FI_WAIT_FD) return fi_cq_sread(cq, e, n, nullptr, 100);
  fid* fids[] = {&cq->fid};
  if (fi_trywait(f.fabric, fids, 1) == 0) {
    pollfd p{cq == f.txcq ? f.txfd : f.rxfd, POLLIN, 0};
    poll(&p, 1, 100);
  }
  return fi_cq_read(cq, e, n);
}

// Waits for n completions on cq; errors are printed. Returns 0 or a positive error.
int wait_cq(Fabric& f, fid_cq* cq, size_t n) {
  fi_cq_entry e[16];
  auto deadline = Clock::now() + std::chrono::milliseconds(f.timeout_ms);
  uint32_t spins = 0;
  while (n) {
    ssize_t r = read_cq(f, cq, e, std::min<size_t>(n, 16));
    if (r > 0) {
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      fi_cq_readerr(cq, &err, 0);
      fprintf(stderr, "pollfab pingpong: completion error: %s (%s)\n", fi_strerror(err.err),
              fi_cq_strerror(cq, err.prov_errno, err.err_data, nullptr, 0));
      return err.err ? err.err : 1;
    }
    if (r != -FI_EAGAIN) return fail("fi_cq_read", static_cast<int>(r));
    if ((f.wait != FI_WAIT_NONE || (++spins & 1023) == 0) && Clock::now() > deadline) {
      fprintf(stderr, "pollfab pingpong: no completion within %d ms\n", f.timeout_ms);
      return FI_ETIMEDOUT;
    }
  }
  return 0;
}

int post_recv(Fabric& f, size_t len) {
  for (;;) {
    ssize_t r = fi_recv(f.ep, f.rxbuf.data(), len, f.desc, FI_ADDR_UNSPEC, &f.rxctx);
    if (r == 0) return 0;
    if (r != -FI_EAGAIN) return fail("fi_recv", static_cast<int>(r));
    fi_cq_entry e;
    ssize_t c = fi_cq_read(f.rxcq, &e, 0);
    if (c < 0 && c != -FI_EAGAIN && c != -FI_EAVAIL) return fail("fi_cq_read", static_cast<int>(c));
  }
}

int post_send(Fabric& f, size_t len, bool wait) {
  for (;;) {
    ssize_t r = len <= f.inject ? fi_inject(f.ep, f.txbuf.data(), len, f.peer)
                                : fi_send(f.ep, f.txbuf.data(), len, f.desc, f.peer, &f.txctx);
    if (r == 0) break;
    if (r != -FI_EAGAIN) return fail("fi_send", static_cast<int>(r));
    fi_cq_entry e;
    fi_cq_read(f.txcq, &e, 0);
    fi_cq_read(f.rxcq, &e, 0);
  }
  if (len > f.inject && wait) return wait_cq(f, f.txcq, 1);
  return 0;
}

// Service mode: the client inserts the server by address and service and sends its own name as
// the first message; the server inserts the name it receives.
int introduce(Fabric& f, const PingpongArgs& a, Oob& oob, const char* host) {
  char name[256];
  size_t len = sizeof name;
  int r;
  if ((r = fi_getname(&f.ep->fid, name, &len))) return fail("fi_getname", r);
  if (!a.server.empty()) {
    if ((r = fi_av_insertsvc(f.av, host, a.service.c_str(), &f.peer, 0, nullptr)) != 1)
      return fail("fi_av_insertsvc", r < 0 ? r : -FI_EHOSTUNREACH);
    if (!oob.sync()) return fail("out-of-band sync", -FI_EIO);  // the server's receive is posted
    std::memcpy(f.txbuf.data(), name, len);
    return post_send(f, len, true);
  }
  if ((r = post_recv(f, f.rxbuf.size()))) return r;
  if (!oob.sync()) return fail("out-of-band sync", -FI_EIO);
  if ((r = wait_cq(f, f.rxcq, 1))) return r;
  if ((r = fi_av_insert(f.av, f.rxbuf.data(), 1, &f.peer, 0, nullptr)) != 1)
    return fail("fi_av_insert", r < 0 ? r : -FI_EINVAL);
  return 0;
}

// -e msg: waits for one EQ event (the liveness assist thread progresses the port meanwhile).
int wait_eq(Fabric& f, uint32_t want, std::vector<uint8_t>& buf) {
  buf.assign(sizeof(fi_eq_cm_entry) + 256, 0);
  uint32_t event = 0;
  ssize_t n = fi_eq_sread(f.eq, &event, buf.data(), buf.size(), f.timeout_ms, 0);
  if (n == -FI_EAVAIL) {
    fi_eq_err_entry err{};
    fi_eq_readerr(f.eq, &err, 0);
    fprintf(stderr, "pollfab pingpong: connection: %s\n", fi_strerror(err.err));
    return err.err ? err.err : 1;
  }
  if (n < 0) return fail("fi_eq_sread", static_cast<int>(n));
  if (event != want) {
    fprintf(stderr, "pollfab pingpong: unexpected EQ event %u (waiting for %u)\n", event, want);
    return 1;
  }
  return 0;
}

// -e msg server: a passive endpoint on the info's port; its name goes to the client out of band
// unless the client names it by address and service. Returns the FI_CONNREQ's info in
// f.conn_info.
int listen_msg(Fabric& f, const PingpongArgs& a, Oob& oob) {
  int r;
  if ((r = fi_passive_ep(f.fabric, f.info, &f.pep, nullptr))) return fail("fi_passive_ep", r);
  if ((r = fi_pep_bind(f.pep, &f.eq->fid, 0))) return fail("fi_pep_bind", r);
  if ((r = fi_listen(f.pep))) return fail("fi_listen", r);
  if (a.service.empty()) {
    char name[256];
    size_t len = sizeof name;
    if ((r = fi_getname(&f.pep->fid, name, &len))) return fail("fi_getname", r);
    if (!oob.send_blob(name, static_cast<uint32_t>(len))) return fail("address exchange", -FI_EIO);
  }
  std::vector<uint8_t> ev;
  if ((r = wait_eq(f, FI_CONNREQ, ev))) return r;
  f.conn_info = reinterpret_cast<fi_eq_cm_entry*>(ev.data())->info;
  return 0;
}

// -e msg: the client connects (to the out-of-band name, or to the info's dest_addr when it named
// the server by address and service); the server accepts. Both wait for FI_CONNECTED.
int connect_msg(Fabric& f, const PingpongArgs& a, Oob& oob) {
  int r;
  std::vector<uint8_t> ev;
  if (!a.server.empty()) {
    char peer[256];
    uint32_t plen = 0;
    const void* addr = f.info->dest_addr;
    if (a.service.empty()) {
      if (!oob.recv_blob(peer, sizeof peer, plen)) return fail("address exchange", -FI_EIO);
      addr = peer;
    }
    if (!addr) return fail("fi_connect", -FI_EINVAL);
    if ((r = fi_connect(f.ep, addr, nullptr, 0))) return fail("fi_connect", r);
  } else {
    if ((r = fi_accept(f.ep, nullptr, 0))) return fail("fi_accept", r);
  }
  return wait_eq(f, FI_CONNECTED, ev);
}

int setup(Fabric& f, const PingpongArgs& a, Oob& oob) {
  fi_info* hints = fi_allocinfo();
  hints->caps = FI_MSG;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->ep_attr->type = a.ep_type == "dgram" ? FI_EP_DGRAM
                         : a.ep_type == "msg" ? FI_EP_MSG
                                              : FI_EP_RDM;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
  hints->domain_attr->data_progress = a.progress == "auto" ? FI_PROGRESS_AUTO : FI_PROGRESS_MANUAL;
  if (!a.provider.empty()) hints->fabric_attr->prov_name = strdup(a.provider.c_str());
  if (!a.domain.empty()) hints->domain_attr->name = strdup(a.domain.c_str());
  const bool service = !a.service.empty();
  const std::string host = a.server.substr(0, a.server.rfind(':'));
  const char* node = service && !a.server.empty() ? host.c_str() : nullptr;
  // A server with a service takes that port: fi_getinfo(NULL, SERVICE) names the source.
  int r = fi_getinfo(FI_VERSION(1, 17), node, service ? a.service.c_str() : nullptr,
                     0, hints, &f.info);
  fi_freeinfo(hints);
  if (r) return fail("fi_getinfo", r);
  if ((r = fi_fabric(f.info->fabric_attr, &f.fabric, nullptr))) return fail("fi_fabric", r);
  const bool msg = f.info->ep_attr->type == FI_EP_MSG;
  fi_info* ep_info = f.info;
  if (msg) {
    fi_eq_attr ea{};
    ea.wait_obj = FI_WAIT_UNSPEC;
    if ((r = fi_eq_open(f.fabric, &ea, &f.eq, nullptr))) return fail("fi_eq_open", r);
    if (a.server.empty()) {
      if ((r = listen_msg(f, a, oob))) return r;
      ep_info = f.conn_info;
    }
  }
  if ((r = fi_domain(f.fabric, ep_info, &f.domain, nullptr))) return fail("fi_domain", r);
  size_t max = std::min<size_t>(f.info->ep_attr->max_msg_size, a.max_size);
  f.txbuf.resize(std::max<size_t>(max, 64));
  f.rxbuf.resize(std::max<size_t>(max, 64));
  f.inject = f.info->tx_attr->inject_size;
  if (f.info->domain_attr->mr_mode & FI_MR_LOCAL) {
    // One registration per buffer is enough for the provider to learn both.
    if ((r = fi_mr_reg(f.domain, f.txbuf.data(), f.txbuf.size(), FI_SEND | FI_RECV, 0, 0xC0DE, 0,
                       &f.mr, nullptr)))
      return fail("fi_mr_reg", r);
    f.desc = fi_mr_desc(f.mr);
  }
  fi_cq_attr cq{};
  cq.format = FI_CQ_FORMAT_CONTEXT;
  f.wait = a.wait == "fd" ? FI_WAIT_FD : a.wait == "unspec" ? FI_WAIT_UNSPEC
           : a.wait == "yield" ? FI_WAIT_YIELD : FI_WAIT_NONE;
  cq.wait_obj = f.wait;
  cq.size = std::max<size_t>(f.info->tx_attr->size, 256);
  if ((r = fi_cq_open(f.domain, &cq, &f.txcq, nullptr))) return fail("fi_cq_open", r);
  cq.size = std::max<size_t>(f.info->rx_attr->size, 256);
  if ((r = fi_cq_open(f.domain, &cq, &f.rxcq, nullptr))) return fail("fi_cq_open", r);
  if (f.wait == FI_WAIT_FD) {
    if ((r = fi_control(&f.txcq->fid, FI_GETWAIT, &f.txfd))) return fail("FI_GETWAIT", r);
    if ((r = fi_control(&f.rxcq->fid, FI_GETWAIT, &f.rxfd))) return fail("FI_GETWAIT", r);
  }
  if (!msg) {
    fi_av_attr av{};
    av.type = f.info->domain_attr->av_type;
    if ((r = fi_av_open(f.domain, &av, &f.av, nullptr))) return fail("fi_av_open", r);
  }
  if ((r = fi_endpoint(f.domain, ep_info, &f.ep, nullptr))) return fail("fi_endpoint", r);
  if ((r = fi_ep_bind(f.ep, msg ? &f.eq->fid : &f.av->fid, 0)) ||
      (r = fi_ep_bind(f.ep, &f.txcq->fid, FI_TRANSMIT)) ||
      (r = fi_ep_bind(f.ep, &f.rxcq->fid, FI_RECV)))
    return fail("fi_ep_bind", r);
  if ((r = fi_enable(f.ep))) return fail("fi_enable", r);
  if (msg) return connect_msg(f, a, oob);  // one peer: f.peer stays FI_ADDR_UNSPEC
  if (service) return introduce(f, a, oob, host.c_str());
  // Exchange names out of band, then insert the peer.
  char name[256], peer[256];
  size_t len = sizeof name;
  if ((r = fi_getname(&f.ep->fid, name, &len))) return fail("fi_getname", r);
  uint32_t plen = 0;
  if (!oob.send_blob(name, static_cast<uint32_t>(len)) || !oob.recv_blob(peer, sizeof peer, plen)) {
    fprintf(stderr, "pollfab pingpong: address exchange failed\n");
    return 1;
  }
  if ((r = fi_av_insert(f.av, peer, 1, &f.peer, 0, nullptr)) != 1)
    return fail("fi_av_insert", r < 0 ? r : -FI_EINVAL);
  return 0;
}

struct Result {
  size_t size;
  uint64_t iters;
  double elapsed_us;
  double bw_mbps = 0;  // streaming MB/s (if --bw)
  double cpu_s[2] = {-1, -1};  // --cpu: CPU seconds (all threads) of the ping-pong, client and server
  double p50_us = -1, p99_us = -1;  // --lat: half round trips, median and 99th percentile
};

// This process's CPU time, user + system, every thread (the library's progress threads too).
double process_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

void print_header(const PingpongArgs& a) {
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
// window with one 0-byte message. Returns client-side MB/s in mbps. Never inlined: callgrind's
// --toggle-collect names it (the receiver's instructions per packet under loss,
// docs/performance.md).
[[gnu::noinline]] int run_stream(Fabric& f, size_t size, uint64_t msgs, uint32_t window, bool client, double& mbps) {
  uint64_t windows = std::max<uint64_t>(1, msgs / window);
  auto t0 = Clock::now();
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
  app.add_option("-w,--window", a.window, "messages per window in the streaming test");
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
    const double cpu0 = process_cpu_s();
    std::vector<float> rtt;
    if (a.lat && client) rtt.reserve(iters);
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
      if (int r = run_stream(f, size, std::max<uint64_t>(iters, a.window), a.window, client, res.bw_mbps)) return r;
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
