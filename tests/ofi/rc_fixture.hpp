// The RC tests' application (tests/ofi/test_rc*.cpp): verbs FI_EP_MSG over RC queue pairs as an
// application that registers its memory (FI_MR_LOCAL | VIRT_ADDR | ALLOCATED | PROV_KEY) sees
// it. Rc: a fabric, an EQ, a listening passive endpoint and a client/server pair of nodes (each
// its own domain, CQ and registered 64 KiB buffer), connected with CM data both ways. The tests
// run where the provider under test offers RC (PF_TEST_PROV=verbs in the soft-RoCE guest,
// tests/verbs/guest_checks.sh); elsewhere REQUIRE_RC() says there is none and skips (on verbs
// a missing RC candidate fails). Waits are bounded (10 s).
#pragma once
#include <arpa/inet.h>
#include <rdma/fi_eq.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "tests/ofi/ofi_fixture.hpp"

namespace pollfab::ofitest {

using namespace std::chrono_literals;

inline constexpr int kRcMrMode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;

inline InfoPtr rc_info(int mr_mode = kRcMrMode, uint64_t caps = FI_MSG,
                fi_progress progress = FI_PROGRESS_UNSPEC, fi_threading threading = FI_THREAD_UNSPEC) {
  fi_info* hints = fi_allocinfo();
  hints->domain_attr->data_progress = progress;
  hints->domain_attr->threading = threading;
  hints->ep_attr->type = FI_EP_MSG;
  hints->caps = caps;
  hints->mode = FI_CONTEXT;
  if (caps & FI_RMA) hints->rx_attr->mode = FI_RX_CQ_DATA;  // fi_writedata consumes a receive
  hints->domain_attr->mr_mode = mr_mode;
  hints->fabric_attr->prov_name = strdup(test_provider());
  fi_info* info = nullptr;
  const int rc = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  return InfoPtr(rc == 0 ? info : nullptr);
}

inline bool offers_rc() {
  InfoPtr i = rc_info();
  return i && i->ep_attr->protocol == FI_PROTO_RDMA_CM_IB_RC;
}

#define REQUIRE_RC()                                                                    \
  do {                                                                                  \
    if (std::string(test_provider()) == "verbs") { ASSERT_TRUE(offers_rc()); }          \
    if (!offers_rc()) { GTEST_SKIP() << test_provider() << " has no RC FI_EP_MSG (verbs only)"; } \
  } while (0)

struct Node {
  fid_domain* domain = nullptr;
  fid_ep* ep = nullptr;
  fid_cq* cq = nullptr;
  fid_mr* mr = nullptr;
  std::vector<char> buf = std::vector<char>(64 * 1024);
  void* desc() const { return fi_mr_desc(mr); }
  void close() {
    if (ep) fi_close(&ep->fid);
    if (mr) fi_close(&mr->fid);
    if (cq) fi_close(&cq->fid);
    if (domain) fi_close(&domain->fid);
    ep = nullptr, mr = nullptr, cq = nullptr, domain = nullptr;
  }
};

class Rc {
 public:
  explicit Rc(uint64_t caps = FI_MSG, fi_progress progress = FI_PROGRESS_UNSPEC,
              fi_threading threading = FI_THREAD_UNSPEC)
      : info_(rc_info(kRcMrMode, caps, progress, threading)) {
    if (!info_) return;
    EXPECT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    fi_eq_attr ea{};
    ea.wait_obj = FI_WAIT_UNSPEC;
    EXPECT_EQ(fi_eq_open(fabric_, &ea, &eq_, nullptr), 0);
  }
  ~Rc() {
    client.close();
    server.close();
    if (pep_) fi_close(&pep_->fid);
    if (eq_) fi_close(&eq_->fid);
    if (fabric_) fi_close(&fabric_->fid);
  }
  fi_info* info() const { return info_.get(); }
  fid_pep* pep() const { return pep_; }
  fid_fabric* fabric() const { return fabric_; }
  fid_eq* eq() const { return eq_; }
  // A listening passive endpoint; its name (sockaddr_in).
  sockaddr_in listen() {
    EXPECT_EQ(fi_passive_ep(fabric_, info_.get(), &pep_, nullptr), 0);
    EXPECT_EQ(fi_listen(pep_), -FI_ENOEQ);
    EXPECT_EQ(fi_pep_bind(pep_, &eq_->fid, 0), 0);
    EXPECT_EQ(fi_listen(pep_), 0);
    EXPECT_EQ(fi_listen(pep_), -FI_EOPBADSTATE);
    sockaddr_in a{};
    size_t len = sizeof a;
    EXPECT_EQ(fi_getname(&pep_->fid, &a, &len), 0);
    EXPECT_EQ(len, sizeof a);
    EXPECT_EQ(a.sin_family, AF_INET);
    EXPECT_NE(a.sin_port, 0);
    return a;
  }
  // An enabled endpoint on its own domain with a registered 64 KiB buffer.
  void open(Node& n, fi_info* info, uint64_t access = FI_SEND | FI_RECV) {
    ASSERT_EQ(fi_domain(fabric_, info, &n.domain, nullptr), 0);
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_DATA;
    ca.wait_obj = cq_wait;
    ASSERT_EQ(fi_cq_open(n.domain, &ca, &n.cq, nullptr), 0);
    ASSERT_EQ(fi_mr_reg(n.domain, n.buf.data(), n.buf.size(), access, 0, 0, 0, &n.mr, nullptr), 0);
    ASSERT_EQ(fi_endpoint(n.domain, info, &n.ep, nullptr), 0);
    ASSERT_EQ(fi_enable(n.ep), -FI_ENOCQ);
    ASSERT_EQ(fi_ep_bind(n.ep, &eq_->fid, 0), 0);
    ASSERT_EQ(fi_ep_bind(n.ep, &n.cq->fid, FI_TRANSMIT | FI_RECV), 0);
    ASSERT_EQ(fi_enable(n.ep), 0);
  }
  // The next EQ event within 10 s (CQs read meanwhile): 1, -FI_EAVAIL (err filled), -FI_EAGAIN.
  int next(uint32_t& event, std::vector<uint8_t>& buf, fi_eq_err_entry* err = nullptr) {
    buf.assign(sizeof(fi_eq_cm_entry) + 256, 0);
    const ssize_t n = fi_eq_sread(eq_, &event, buf.data(), buf.size(), 10000, 0);
    if (n >= 0) {
      buf.resize(size_t(n));
      return 1;
    }
    if (n == -FI_EAVAIL && err) {
      EXPECT_EQ(fi_eq_readerr(eq_, err, 0), ssize_t(sizeof *err));
    }
    return int(n);
  }
  // Connects client to the listener with CM data; the server accepts with its own after
  // posting one receive of `rx_len` bytes. Returns false on any failure.
  bool connect(const sockaddr_in& to, size_t rx_len, fi_context* rctx,
               uint64_t server_access = FI_SEND | FI_RECV) {
    open(client, info_.get(), FI_SEND | FI_RECV | FI_READ | FI_WRITE);
    if (fi_connect(client.ep, &to, "hello", 5) != 0) return false;
    uint32_t event = 0;
    std::vector<uint8_t> ev;
    if (next(event, ev) != 1 || event != FI_CONNREQ) return false;
    auto* cm = reinterpret_cast<fi_eq_cm_entry*>(ev.data());
    EXPECT_EQ(std::string(reinterpret_cast<char*>(ev.data()) + sizeof *cm, ev.size() - sizeof *cm),
              "hello");
    fi_info* req = cm->info;
    EXPECT_EQ(req->ep_attr->protocol, uint32_t(FI_PROTO_RDMA_CM_IB_RC));
    EXPECT_EQ(req->addr_format, uint32_t(FI_SOCKADDR_IN));
    open(server, req, server_access);
    fi_freeinfo(req);
    EXPECT_EQ(fi_recv(server.ep, server.buf.data(), rx_len, server.desc(), 0, rctx), 0);
    if (fi_accept(server.ep, "welcome", 7) != 0) return false;
    for (int i = 0; i < 2; ++i) {
      if (next(event, ev) != 1 || event != FI_CONNECTED) return false;
      cm = reinterpret_cast<fi_eq_cm_entry*>(ev.data());
      if (cm->fid == &client.ep->fid) {
        EXPECT_EQ(std::string(reinterpret_cast<char*>(ev.data()) + sizeof *cm,
                              ev.size() - sizeof *cm), "welcome");
      }
    }
    return true;
  }

  Node client, server;
  fi_wait_obj cq_wait = FI_WAIT_NONE;  // the CQs' wait object

 private:
  InfoPtr info_;
  fid_fabric* fabric_ = nullptr;
  fid_eq* eq_ = nullptr;
  fid_pep* pep_ = nullptr;
};

// One completion (or error: -FI_EAVAIL with err read) within 10 s.
inline ssize_t wait_cq(fid_cq* cq, fi_cq_data_entry& e, fi_cq_err_entry* err = nullptr) {
  const auto end = std::chrono::steady_clock::now() + 10s;
  do {
    const ssize_t n = fi_cq_read(cq, &e, 1);
    if (n == -FI_EAVAIL && err) {
      EXPECT_EQ(fi_cq_readerr(cq, err, 0), 1);
      return n;
    }
    if (n != -FI_EAGAIN) return n;
  } while (std::chrono::steady_clock::now() < end);
  return -FI_EAGAIN;
}

}  // namespace pollfab::ofitest
