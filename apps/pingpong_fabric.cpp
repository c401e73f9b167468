// `pollfab pingpong`'s fabric: opening it (fi_getinfo from the options, domain, CQs with
// their wait object, AV or passive endpoint, the endpoint, its buffers' registration), the
// name exchange or service introduction, and the calls every run uses (post a send or a
// receive, wait for completions). pingpong.cpp runs the ping-pong and streaming tests on it.
#include "apps/pingpong_fabric.hpp"

#include <poll.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace pollfab::apps::pingpong {

using Clock = std::chrono::steady_clock;

int fail(const char* what, int r) {
  fprintf(stderr, "pollfab pingpong: %s: %s (%d)\n", what, fi_strerror(-r), r);
  return r < 0 ? -r : 1;
}

namespace {

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

}  // namespace

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

}  // namespace pollfab::apps::pingpong
