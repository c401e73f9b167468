// A one-endpoint node for the waiting and progress tests: an RDM endpoint on a fabric and domain
// of its own (so its own port: a peer's packets cross a real socket), with a CQ and a receive
// counter of a chosen wait kind and an FI_AV_MAP AV; and CPU-time readers for "it slept" checks.
#pragma once
#include <rdma/fi_eq.h>
#include <sys/resource.h>

#include <chrono>
#include <vector>

#include "tests/ofi/ofi_fixture.hpp"

namespace pollfab::ofitest {

// CPU time (user + system) in ms: RUSAGE_THREAD (this thread) or RUSAGE_SELF (the process).
inline double cpu_ms(int who) {
  rusage ru{};
  getrusage(who, &ru);
  return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 + ru.ru_stime.tv_sec * 1e3 +
         ru.ru_stime.tv_usec / 1e3;
}

struct Node {
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_cq* cq = nullptr;
  fid_cntr* cntr = nullptr;
  fid_ep* ep = nullptr;
  std::vector<uint8_t> name = std::vector<uint8_t>(64);

  Node(fi_info* info, fi_wait_obj kind) {
    EXPECT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
    EXPECT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
    fi_av_attr aa{};
    aa.type = FI_AV_MAP;
    EXPECT_EQ(fi_av_open(domain, &aa, &av, nullptr), 0);
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_CONTEXT;
    ca.wait_obj = kind;
    ca.size = 4096;
    EXPECT_EQ(fi_cq_open(domain, &ca, &cq, nullptr), 0);
    fi_cntr_attr na{};
    na.events = FI_CNTR_EVENTS_COMP;
    na.wait_obj = kind;
    EXPECT_EQ(fi_cntr_open(domain, &na, &cntr, nullptr), 0);
    EXPECT_EQ(fi_endpoint(domain, info, &ep, nullptr), 0);
    EXPECT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
    EXPECT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
    EXPECT_EQ(fi_ep_bind(ep, &cntr->fid, FI_RECV), 0);
    EXPECT_EQ(fi_enable(ep), 0);
    size_t len = name.size();
    EXPECT_EQ(fi_getname(&ep->fid, name.data(), &len), 0);
    name.resize(len);
  }
  ~Node() {
    for (fid* f : {ep ? &ep->fid : nullptr, cq ? &cq->fid : nullptr,
                   cntr ? &cntr->fid : nullptr, av ? &av->fid : nullptr,
                   domain ? &domain->fid : nullptr, fabric ? &fabric->fid : nullptr})
      if (f) fi_close(f);
  }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Sends len bytes to dest and waits (up to 10 s) for the send's completion on cq (this
  // thread progresses): polling, or with block in fi_cq_sread (cq needs a wait object).
  void send_and_wait(fi_addr_t dest, size_t len = 8, bool block = false) {
    std::vector<char> buf(len, 'x');
    fi_context ctx;
    ssize_t r;
    do r = fi_send(ep, buf.data(), len, nullptr, dest, &ctx);
    while (r == -FI_EAGAIN);
    ASSERT_EQ(r, 0);
    fi_cq_entry e;
    if (block) {
      EXPECT_EQ(fi_cq_sread(cq, &e, 1, nullptr, 10000), 1);
      return;
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (fi_cq_read(cq, &e, 1) != 1 && std::chrono::steady_clock::now() < end) {
    }
  }
  fi_addr_t insert(const Node& peer) {
    fi_addr_t a = FI_ADDR_NOTAVAIL;
    EXPECT_EQ(fi_av_insert(av, peer.name.data(), 1, &a, 0, nullptr), 1);
    return a;
  }
};

}  // namespace pollfab::ofitest
