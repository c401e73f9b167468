// verbs FI_EP_MSG over RC queue pairs (fi_verbs(7), fi_cm(3), fi_msg(3); providers/verbs/rc_*):
// what an application that registers its memory (FI_MR_LOCAL | VIRT_ADDR | ALLOCATED |
// PROV_KEY) sees. Runs where the provider under test offers RC (PF_TEST_PROV=verbs in the
// soft-RoCE guest, tests/verbs/guest_checks.sh); elsewhere there is no RC candidate and the
// tests say so and skip. Covers getinfo's choice, connect/accept with CM data, send, senddata,
// inject and receive with descriptors, completion errors with the verbs status (a message
// longer than the receive breaks the connection cleanly; flushed receives), reject with CM
// data, shutdown, and the error codes of bad calls (memory that cannot be registered, buffers
// without descriptors).
#include <arpa/inet.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <poll.h>
#include <sys/mman.h>

#include <random>
#include <thread>

#include <cstring>
#include <string>
#include <vector>

#include "tests/ofi/ofi_fixture.hpp"
#include "tests/ofi/rdma_resources.hpp"

namespace pollfab::ofitest {
namespace {

using namespace std::chrono_literals;

constexpr int kRcMrMode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;

InfoPtr rc_info(int mr_mode = kRcMrMode, uint64_t caps = FI_MSG,
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

bool offers_rc() {
  InfoPtr i = rc_info();
  return i && i->ep_attr->protocol == FI_PROTO_RDMA_CM_IB_RC;
}

#define REQUIRE_RC()                                                                    \
  do {                                                                                  \
    if (std::string(test_provider()) == "verbs") ASSERT_TRUE(offers_rc());              \
    if (!offers_rc()) GTEST_SKIP() << test_provider() << " has no RC FI_EP_MSG (verbs only)"; \
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
    if (n == -FI_EAVAIL && err) EXPECT_EQ(fi_eq_readerr(eq_, err, 0), ssize_t(sizeof *err));
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
      if (cm->fid == &client.ep->fid)
        EXPECT_EQ(std::string(reinterpret_cast<char*>(ev.data()) + sizeof *cm,
                              ev.size() - sizeof *cm), "welcome");
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
ssize_t wait_cq(fid_cq* cq, fi_cq_data_entry& e, fi_cq_err_entry* err = nullptr) {
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

TEST(OfiRc, GetinfoOffersRcToApplicationsThatRegisterTheirMemory) {
  REQUIRE_RC();
  InfoPtr rc = rc_info();
  EXPECT_EQ(rc->addr_format, uint32_t(FI_SOCKADDR_IN));
  EXPECT_EQ(rc->domain_attr->mr_mode & kRcMrMode, kRcMrMode);
  EXPECT_EQ(rc->domain_attr->cq_data_size, 4u);
  // Without FI_MR_LOCAL the application gets the transport's FI_EP_MSG over UD.
  InfoPtr ud = rc_info(FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY);
  ASSERT_TRUE(ud);
  EXPECT_NE(ud->ep_attr->protocol, uint32_t(FI_PROTO_RDMA_CM_IB_RC));
}

TEST(OfiRc, ConnectSendSenddataInjectReceiveThenShutdownFlushesReceives) {
  REQUIRE_RC();
  Rc r;
  const sockaddr_in to = r.listen();
  fi_context rctx[4], sctx[4];
  // Before the connection: not connected; CM data above the limit refused.
  r.open(r.client, r.info());
  EXPECT_EQ(fi_send(r.client.ep, r.client.buf.data(), 8, r.client.desc(), 0, &sctx[0]), -FI_ENOTCONN);
  size_t sz = 0, len = sizeof sz;
  ASSERT_EQ(fi_getopt(&r.client.ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &sz, &len), 0);
  EXPECT_EQ(sz, 54u);
  std::vector<char> big(sz + 1);
  EXPECT_EQ(fi_connect(r.client.ep, &to, big.data(), big.size()), -FI_EINVAL);
  r.client.close();
  ASSERT_TRUE(r.connect(to, 4096, &rctx[0]));
  sockaddr_in me{}, peer{};
  size_t mlen = sizeof me, plen = sizeof peer;
  ASSERT_EQ(fi_getname(&r.client.ep->fid, &me, &mlen), 0);
  ASSERT_EQ(fi_getpeer(r.server.ep, &peer, &plen), 0);
  EXPECT_EQ(std::memcmp(&me, &peer, sizeof me), 0);

  // 4 KiB from registered memory.
  for (size_t i = 0; i < 4096; ++i) r.client.buf[i] = char(i * 7);
  ASSERT_EQ(fi_send(r.client.ep, r.client.buf.data(), 4096, r.client.desc(), 0, &sctx[0]), 0);
  fi_cq_data_entry e{};
  ASSERT_EQ(wait_cq(r.server.cq, e), 1);
  EXPECT_EQ(e.op_context, &rctx[0]);
  EXPECT_EQ(e.len, 4096u);
  EXPECT_EQ(e.flags & (FI_RECV | FI_MSG), FI_RECV | FI_MSG);
  EXPECT_EQ(std::memcmp(r.server.buf.data(), r.client.buf.data(), 4096), 0);
  ASSERT_EQ(wait_cq(r.client.cq, e), 1);
  EXPECT_EQ(e.op_context, &sctx[0]);
  EXPECT_EQ(e.flags & (FI_SEND | FI_MSG), FI_SEND | FI_MSG);

  // senddata: 32 bits of immediate data; inject: no completion, buffer reusable at once.
  ASSERT_EQ(fi_recv(r.server.ep, r.server.buf.data(), 64, r.server.desc(), 0, &rctx[1]), 0);
  ASSERT_EQ(fi_recv(r.server.ep, r.server.buf.data() + 64, 64, r.server.desc(), 0, &rctx[2]), 0);
  ASSERT_EQ(fi_senddata(r.client.ep, r.client.buf.data(), 16, r.client.desc(), 0xabcd1234, 0,
                        &sctx[1]), 0);
  char small[8] = "inject!";
  ASSERT_EQ(fi_inject(r.client.ep, small, sizeof small, 0), 0);
  std::memset(small, 0, sizeof small);
  ASSERT_EQ(wait_cq(r.server.cq, e), 1);
  EXPECT_EQ(e.op_context, &rctx[1]);
  EXPECT_TRUE(e.flags & FI_REMOTE_CQ_DATA);
  EXPECT_EQ(e.data, 0xabcd1234u);
  ASSERT_EQ(wait_cq(r.server.cq, e), 1);
  EXPECT_EQ(e.op_context, &rctx[2]);
  EXPECT_EQ(e.len, 8u);
  EXPECT_FALSE(e.flags & FI_REMOTE_CQ_DATA);
  EXPECT_STREQ(r.server.buf.data() + 64, "inject!");
  ASSERT_EQ(wait_cq(r.client.cq, e), 1);
  EXPECT_EQ(e.op_context, &sctx[1]);
  EXPECT_EQ(fi_cq_read(r.client.cq, &e, 1), -FI_EAGAIN);  // the inject wrote nothing

  // The client shuts down: the server hears FI_SHUTDOWN and its posted receive flushes.
  ASSERT_EQ(fi_recv(r.server.ep, r.server.buf.data(), 64, r.server.desc(), 0, &rctx[3]), 0);
  ASSERT_EQ(fi_shutdown(r.client.ep, 0), 0);
  EXPECT_EQ(fi_send(r.client.ep, r.client.buf.data(), 8, r.client.desc(), 0, &sctx[2]), -FI_ENOTCONN);
  uint32_t event = 0;
  std::vector<uint8_t> ev;
  ASSERT_EQ(r.next(event, ev), 1);
  EXPECT_EQ(event, uint32_t(FI_SHUTDOWN));
  EXPECT_EQ(reinterpret_cast<fi_eq_cm_entry*>(ev.data())->fid, &r.server.ep->fid);
  fi_cq_err_entry err{};
  ASSERT_EQ(wait_cq(r.server.cq, e, &err), -FI_EAVAIL);
  EXPECT_EQ(err.op_context, &rctx[3]);
  EXPECT_EQ(err.err, FI_ECANCELED);
  EXPECT_EQ(err.prov_errno, 5);  // IBV_WC_WR_FLUSH_ERR
  const char* text = fi_cq_strerror(r.server.cq, err.prov_errno, err.err_data, nullptr, 0);
  EXPECT_NE(std::string(text).find("Flush"), std::string::npos) << text;  // ibv_wc_status_str
}

TEST(OfiRc, AMessageLongerThanTheReceiveFailsTheConnectionCleanly) {
  REQUIRE_RC();
  Rc r;
  const sockaddr_in to = r.listen();
  fi_context rctx, sctx;
  ASSERT_TRUE(r.connect(to, 16, &rctx));
  ASSERT_EQ(fi_send(r.client.ep, r.client.buf.data(), 1024, r.client.desc(), 0, &sctx), 0);
  fi_cq_data_entry e{};
  fi_cq_err_entry err{};
  ASSERT_EQ(wait_cq(r.server.cq, e, &err), -FI_EAVAIL);
  EXPECT_EQ(err.op_context, &rctx);
  // IBV_WC_LOC_LEN_ERR (1) on hardware; soft-RoCE reports IBV_WC_LOC_QP_OP_ERR (2).
  EXPECT_TRUE((err.prov_errno == 1 && err.err == FI_ETRUNC) ||
              (err.prov_errno == 2 && err.err == FI_EIO)) << err.prov_errno << " " << err.err;
  err = fi_cq_err_entry{};
  ASSERT_EQ(wait_cq(r.client.cq, e, &err), -FI_EAVAIL);
  EXPECT_EQ(err.op_context, &sctx);
  EXPECT_NE(err.err, 0);
  // Both sides learn that the connection is gone; nothing hangs.
  uint32_t event = 0;
  std::vector<uint8_t> ev;
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(r.next(event, ev), 1);
    EXPECT_EQ(event, uint32_t(FI_SHUTDOWN));
  }
  EXPECT_EQ(fi_send(r.client.ep, r.client.buf.data(), 8, r.client.desc(), 0, &sctx), -FI_ENOTCONN);
}

// RDMA WRITE, READ and WRITE with immediate data (fi_writedata consumes a posted receive:
// FI_RX_CQ_DATA); then a bad key and an access beyond the region, each on a fresh connection:
// the initiator's completion is FI_EACCES with the verbs status, both sides get FI_SHUTDOWN.
TEST(OfiRc, RmaWriteReadWritedataAndRemoteAccessErrors) {
  REQUIRE_RC();
  const uint64_t caps = FI_MSG | FI_RMA;
  {
    Rc r(caps);
    EXPECT_TRUE(r.info()->rx_attr->mode & FI_RX_CQ_DATA);
    const sockaddr_in to = r.listen();
    fi_context rctx[2], sctx[3];
    ASSERT_TRUE(r.connect(to, 64, &rctx[0], FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE));
    char* remote = r.server.buf.data();
    const uint64_t addr = reinterpret_cast<uintptr_t>(remote);
    const uint64_t key = fi_mr_key(r.server.mr);
    for (size_t i = 0; i < 8192; ++i) r.client.buf[i] = char(i * 13 + 1);
    ASSERT_EQ(fi_write(r.client.ep, r.client.buf.data(), 8192, r.client.desc(), 0, addr + 1024,
                       key, &sctx[0]), 0);
    fi_cq_data_entry e{};
    ASSERT_EQ(wait_cq(r.client.cq, e), 1);
    EXPECT_EQ(e.op_context, &sctx[0]);
    EXPECT_EQ(e.flags & (FI_RMA | FI_WRITE), FI_RMA | FI_WRITE);
    EXPECT_EQ(std::memcmp(remote + 1024, r.client.buf.data(), 8192), 0);
    // Read it back into another part of the client's buffer.
    ASSERT_EQ(fi_read(r.client.ep, r.client.buf.data() + 16384, 8192, r.client.desc(), 0,
                      addr + 1024, key, &sctx[1]), 0);
    ASSERT_EQ(wait_cq(r.client.cq, e), 1);
    EXPECT_EQ(e.op_context, &sctx[1]);
    EXPECT_EQ(e.flags & (FI_RMA | FI_READ), FI_RMA | FI_READ);
    EXPECT_EQ(std::memcmp(r.client.buf.data() + 16384, r.client.buf.data(), 8192), 0);
    // writedata: the server's posted receive (rctx[0]) reports the data, not bytes.
    ASSERT_EQ(fi_writedata(r.client.ep, r.client.buf.data(), 512, r.client.desc(), 0x5eed, 0,
                           addr + 40000, key, &sctx[2]), 0);
    ASSERT_EQ(wait_cq(r.server.cq, e), 1);
    EXPECT_EQ(e.op_context, &rctx[0]);
    EXPECT_EQ(e.flags & (FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA),
              FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
    EXPECT_EQ(e.data, 0x5eedu);
    EXPECT_EQ(std::memcmp(remote + 40000, r.client.buf.data(), 512), 0);
    ASSERT_EQ(wait_cq(r.client.cq, e), 1);
    // Two remote segments in one call are refused.
    fi_rma_iov riov[2] = {{addr, 8, key}, {addr + 8, 8, key}};
    iovec iov{r.client.buf.data(), 16};
    void* d = r.client.desc();
    fi_msg_rma msg{&iov, &d, 1, 0, riov, 2, nullptr, 0};
    EXPECT_EQ(fi_writemsg(r.client.ep, &msg, 0), -FI_EINVAL);
  }
  {
    // An application that does not take FI_RX_CQ_DATA cannot write with CQ data.
    fi_info* hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_MSG;
    hints->caps = caps;
    hints->domain_attr->mr_mode = kRcMrMode;
    hints->fabric_attr->prov_name = strdup(test_provider());
    fi_info* info = nullptr;
    ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info), 0);
    fi_freeinfo(hints);
    EXPECT_FALSE(info->rx_attr->mode & FI_RX_CQ_DATA);
    fid_fabric* fab = nullptr;
    fid_domain* dom = nullptr;
    fid_ep* ep = nullptr;
    fid_cq* cq = nullptr;
    ASSERT_EQ(fi_fabric(info->fabric_attr, &fab, nullptr), 0);
    ASSERT_EQ(fi_domain(fab, info, &dom, nullptr), 0);
    fi_cq_attr ca{};
    ASSERT_EQ(fi_cq_open(dom, &ca, &cq, nullptr), 0);
    ASSERT_EQ(fi_endpoint(dom, info, &ep, nullptr), 0);
    ASSERT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
    ASSERT_EQ(fi_enable(ep), 0);
    char b[8] = {};
    EXPECT_EQ(fi_writedata(ep, b, 8, nullptr, 1, 0, 0, 0, nullptr), -FI_EOPNOTSUPP);
    fi_close(&ep->fid);
    fi_close(&cq->fid);
    fi_close(&dom->fid);
    fi_close(&fab->fid);
    fi_freeinfo(info);
  }
  for (int bad = 0; bad < 2; ++bad) {
    Rc r(caps);
    const sockaddr_in to = r.listen();
    fi_context rctx, sctx;
    ASSERT_TRUE(r.connect(to, 64, &rctx, FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE));
    const uint64_t addr = reinterpret_cast<uintptr_t>(r.server.buf.data());
    const uint64_t key = fi_mr_key(r.server.mr);
    const char before = r.server.buf[0];
    if (bad == 0)  // a key nobody registered
      ASSERT_EQ(fi_write(r.client.ep, r.client.buf.data(), 64, r.client.desc(), 0, addr,
                         key ^ 0x5a5a00, &sctx), 0);
    else  // past the end of the region
      ASSERT_EQ(fi_read(r.client.ep, r.client.buf.data(), 4096, r.client.desc(), 0,
                        addr + r.server.buf.size() - 1024, key, &sctx), 0);
    fi_cq_data_entry e{};
    fi_cq_err_entry err{};
    ASSERT_EQ(wait_cq(r.client.cq, e, &err), -FI_EAVAIL) << "case " << bad;
    EXPECT_EQ(err.op_context, &sctx);
    EXPECT_EQ(err.err, FI_EACCES) << "case " << bad;
    EXPECT_EQ(err.prov_errno, 10) << "case " << bad;  // IBV_WC_REM_ACCESS_ERR
    EXPECT_EQ(r.server.buf[0], before);
    uint32_t event = 0;
    std::vector<uint8_t> ev;
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(r.next(event, ev), 1) << "case " << bad;
      EXPECT_EQ(event, uint32_t(FI_SHUTDOWN));
    }
  }
}

// Device atomics against a reference model: fetch-add (fi_atomic, fi_fetch_atomic, FI_ATOMIC_READ)
// and compare-swap on a 64-bit word; fi_query_atomic and fi_atomicvalid say what the device
// cannot do, and those calls are refused.
TEST(OfiRc, DeviceAtomicsAgainstAReferenceAndWhatTheyRefuse) {
  REQUIRE_RC();
  Rc r(FI_MSG | FI_RMA | FI_ATOMIC);
  ASSERT_TRUE(r.info()->caps & FI_ATOMIC);
  const sockaddr_in to = r.listen();
  fi_context rctx, sctx;
  ASSERT_TRUE(r.connect(to, 64, &rctx, FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE));
  fi_atomic_attr attr{};
  EXPECT_EQ(fi_query_atomic(r.client.domain, FI_UINT64, FI_SUM, &attr, 0), 0);
  EXPECT_EQ(attr.size, 8u);
  EXPECT_EQ(attr.count, 1u);
  EXPECT_EQ(fi_query_atomic(r.client.domain, FI_UINT64, FI_CSWAP, &attr, FI_COMPARE_ATOMIC), 0);
  EXPECT_EQ(fi_query_atomic(r.client.domain, FI_UINT32, FI_SUM, &attr, 0), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_query_atomic(r.client.domain, FI_DOUBLE, FI_SUM, &attr, FI_FETCH_ATOMIC), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_query_atomic(r.client.domain, FI_UINT64, FI_MIN, &attr, 0), -FI_EOPNOTSUPP);
  size_t count = 0;
  EXPECT_EQ(fi_atomicvalid(r.client.ep, FI_UINT64, FI_SUM, &count), 0);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(fi_compare_atomicvalid(r.client.ep, FI_INT64, FI_CSWAP, &count), 0);
  EXPECT_EQ(fi_fetch_atomicvalid(r.client.ep, FI_UINT64, FI_BAND, &count), -FI_EOPNOTSUPP);

  auto* word = reinterpret_cast<uint64_t*>(r.server.buf.data() + 256);
  *word = 100;
  uint64_t model = 100;
  const uint64_t addr = reinterpret_cast<uintptr_t>(word);
  const uint64_t key = fi_mr_key(r.server.mr);
  auto* res = reinterpret_cast<uint64_t*>(r.client.buf.data() + 1024);
  auto* operand = reinterpret_cast<uint64_t*>(r.client.buf.data() + 2048);
  fi_cq_data_entry e{};
  auto done = [&] { return wait_cq(r.client.cq, e) == 1 && e.op_context == &sctx; };
  std::mt19937_64 rng(7);
  for (int i = 0; i < 40; ++i) {
    *operand = rng() % 1000;
    switch (i % 4) {
      case 0:  // fi_atomic: add, no result
        ASSERT_EQ(fi_atomic(r.client.ep, operand, 1, nullptr, 0, addr, key, FI_UINT64, FI_SUM, &sctx), 0);
        ASSERT_TRUE(done());
        EXPECT_EQ(e.flags & (FI_ATOMIC | FI_WRITE), FI_ATOMIC | FI_WRITE);
        model += *operand;
        break;
      case 1:  // fi_fetch_atomic: add, the value before
        ASSERT_EQ(fi_fetch_atomic(r.client.ep, operand, 1, nullptr, res, r.client.desc(), 0, addr,
                                  key, FI_UINT64, FI_SUM, &sctx), 0);
        ASSERT_TRUE(done());
        EXPECT_EQ(e.flags & (FI_ATOMIC | FI_READ), FI_ATOMIC | FI_READ);
        EXPECT_EQ(*res, model);
        model += *operand;
        break;
      case 2: {  // compare-swap: matches every other time
        uint64_t cmp = (i % 8 == 2) ? model : model + 1;
        ASSERT_EQ(fi_compare_atomic(r.client.ep, operand, 1, nullptr, &cmp, nullptr, res,
                                    r.client.desc(), 0, addr, key, FI_UINT64, FI_CSWAP, &sctx), 0);
        ASSERT_TRUE(done());
        EXPECT_EQ(*res, model);
        if (cmp == model) model = *operand;
        break;
      }
      case 3:  // FI_ATOMIC_READ
        ASSERT_EQ(fi_fetch_atomic(r.client.ep, nullptr, 1, nullptr, res, r.client.desc(), 0, addr,
                                  key, FI_UINT64, FI_ATOMIC_READ, &sctx), 0);
        ASSERT_TRUE(done());
        EXPECT_EQ(*res, model);
        break;
    }
    EXPECT_EQ(*word, model) << "step " << i;
  }
  // Refused: 32-bit, two elements, a misaligned target, a result without descriptor.
  uint32_t small = 1;
  EXPECT_EQ(fi_atomic(r.client.ep, &small, 1, nullptr, 0, addr, key, FI_UINT32, FI_SUM, &sctx),
            -FI_EOPNOTSUPP);
  uint64_t two[2] = {1, 2};
  EXPECT_EQ(fi_atomic(r.client.ep, two, 2, nullptr, 0, addr, key, FI_UINT64, FI_SUM, &sctx), -FI_EINVAL);
  EXPECT_EQ(fi_atomic(r.client.ep, two, 1, nullptr, 0, addr + 4, key, FI_UINT64, FI_SUM, &sctx), -FI_EINVAL);
  EXPECT_EQ(fi_fetch_atomic(r.client.ep, two, 1, nullptr, res, nullptr, 0, addr, key, FI_UINT64,
                            FI_SUM, &sctx), -FI_EINVAL);
  EXPECT_EQ(*word, model);
}

// FI_WAIT_FD: the CQ's wait object is the domain's completion channel. fi_cq_sread sleeps until
// a message sent 100 ms later arrives; fi_trywait then poll(2) on the descriptor wakes for the
// next one.
TEST(OfiRc, BlockingReadsSleepOnTheCompletionChannel) {
  REQUIRE_RC();
  Rc r;
  r.cq_wait = FI_WAIT_FD;
  const sockaddr_in to = r.listen();
  fi_context rctx[2], sctx[2];
  ASSERT_TRUE(r.connect(to, 64, &rctx[0]));
  int fd = -1;
  ASSERT_EQ(fi_control(&r.server.cq->fid, FI_GETWAIT, &fd), 0);
  ASSERT_GE(fd, 0);
  std::thread t([&] {
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(fi_send(r.client.ep, "one", 4, nullptr, 0, &sctx[0]), 0);
  });
  fi_cq_data_entry e{};
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(fi_cq_sread(r.server.cq, &e, 1, nullptr, 5000), 1);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 50ms);
  EXPECT_EQ(e.op_context, &rctx[0]);
  t.join();
  ASSERT_EQ(fi_recv(r.server.ep, r.server.buf.data(), 64, r.server.desc(), 0, &rctx[1]), 0);
  fid* fids[1] = {&r.server.cq->fid};
  ASSERT_EQ(fi_trywait(r.fabric(), fids, 1), 0);
  std::thread t2([&] {
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(fi_send(r.client.ep, "two", 4, nullptr, 0, &sctx[1]), 0);
  });
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 5000), 1);
  t2.join();
  ASSERT_EQ(fi_cq_sread(r.server.cq, &e, 1, nullptr, 5000), 1);
  EXPECT_EQ(e.op_context, &rctx[1]);
  EXPECT_STREQ(r.server.buf.data(), "two");
}

// Nothing leaks on the device: after connections, registrations and closes, the device's QPs,
// CQs, MRs, PDs and cm_ids are back where the first round left them (librdmacm keeps a device
// context for the process; see test_device_resources.cpp), and they did rise while open.
TEST(OfiRc, ClosingReleasesEveryQpCqMrAndCmId) {
  REQUIRE_RC();
  const auto before = device_counts();
  ASSERT_TRUE(before.count("qp")) << "cannot read `rdma resource show`";
  std::map<std::string, long> baseline;
  for (int round = 0; round < 3; ++round) {
    {
      Rc r;
      const sockaddr_in to = r.listen();
      fi_context rctx, sctx;
      ASSERT_TRUE(r.connect(to, 64, &rctx));
      ASSERT_EQ(fi_send(r.client.ep, "x", 2, nullptr, 0, &sctx), 0);
      fi_cq_data_entry e{};
      ASSERT_EQ(wait_cq(r.server.cq, e), 1);
      const auto open = device_counts();
      EXPECT_GE(open.at("qp"), before.at("qp") + 2) << counts_text(open);
      EXPECT_GE(open.at("mr"), before.at("mr") + 2) << counts_text(open);
      EXPECT_GE(open.at("cm_id"), before.at("cm_id") + 3) << counts_text(open);
    }
    const auto after = device_counts();
    if (round == 0) {
      auto expect = before;
      if (after.at("ctx") == before.at("ctx") + 1) expect["ctx"] = after.at("ctx");
      EXPECT_EQ(after, expect) << "before " << counts_text(before) << "; after " << counts_text(after);
      baseline = after;
    } else {
      EXPECT_EQ(after, baseline) << "round " << round << ": " << counts_text(after);
    }
  }
}

// The registration cache: registering memory an open registration covers, with the same remote
// access, shares it (same key, one device MR), the shared key keeps working when the first
// user closes, and the device MR goes with the last one. Other memory, or other remote access
// (a close must revoke what a key allowed), registers anew.
TEST(OfiRc, RepeatedRegistrationsShareOneDeviceRegistration) {
  REQUIRE_RC();
  Rc r(FI_MSG | FI_RMA);
  const sockaddr_in to = r.listen();
  fi_context rctx, sctx;
  ASSERT_TRUE(r.connect(to, 64, &rctx, FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE));
  const long mrs = device_counts().at("mr");
  char* base = r.server.buf.data();
  fid_mr *same = nullptr, *inner = nullptr, *other = nullptr;
  ASSERT_EQ(fi_mr_reg(r.server.domain, base, r.server.buf.size(),
                      FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &same, nullptr), 0);
  ASSERT_EQ(fi_mr_reg(r.server.domain, base + 4096, 8192, FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE,
                      0, 0, 0, &inner, nullptr), 0);
  EXPECT_EQ(fi_mr_key(same), fi_mr_key(r.server.mr));
  EXPECT_EQ(fi_mr_key(inner), fi_mr_key(r.server.mr));
  EXPECT_EQ(device_counts().at("mr"), mrs) << "covered ranges must not register again";
  fid_mr* local_only = nullptr;
  ASSERT_EQ(fi_mr_reg(r.server.domain, base, 4096, FI_SEND | FI_RECV, 0, 0, 0, &local_only, nullptr), 0);
  EXPECT_NE(fi_mr_key(local_only), fi_mr_key(same));
  EXPECT_EQ(device_counts().at("mr"), mrs + 1);
  fi_close(&local_only->fid);
  EXPECT_EQ(device_counts().at("mr"), mrs);
  static char elsewhere[4096];
  ASSERT_EQ(fi_mr_reg(r.server.domain, elsewhere, sizeof elsewhere, FI_RECV, 0, 0, 0, &other, nullptr), 0);
  EXPECT_EQ(device_counts().at("mr"), mrs + 1);
  // The fixture's own registration (FI_REMOTE_READ | WRITE) closes; the shared key still works.
  const uint64_t key = fi_mr_key(same);
  fi_close(&r.server.mr->fid);
  r.server.mr = same;
  const uint64_t addr = reinterpret_cast<uintptr_t>(base + 4096);
  std::memcpy(r.client.buf.data(), "cached", 7);
  ASSERT_EQ(fi_write(r.client.ep, r.client.buf.data(), 7, r.client.desc(), 0, addr, key, &sctx), 0);
  fi_cq_data_entry e{};
  ASSERT_EQ(wait_cq(r.client.cq, e), 1);
  EXPECT_STREQ(base + 4096, "cached");
  fi_close(&inner->fid);
  fi_close(&other->fid);
  EXPECT_EQ(device_counts().at("mr"), mrs);
}

// A shared receive context (a device SRQ) serves two accepted connections: receives posted to
// it complete on the CQ of whichever connection the message came on, in the SRQ's order.
TEST(OfiRc, ASharedReceiveContextServesTwoConnections) {
  REQUIRE_RC();
  ASSERT_GT(rc_info()->domain_attr->max_ep_srx_ctx, 1u);
  Rc r;
  const sockaddr_in to = r.listen();
  Node a, b, srv;
  fid_ep* srx = nullptr;
  fid_ep* eps[2] = {nullptr, nullptr};
  fi_context rctx[4], sctx[3];
  uint32_t event = 0;
  std::vector<uint8_t> ev;
  for (int i = 0; i < 2; ++i) {
    Node& c = i == 0 ? a : b;
    r.open(c, r.info());
    ASSERT_EQ(fi_connect(c.ep, &to, nullptr, 0), 0);
    ASSERT_EQ(r.next(event, ev), 1);
    ASSERT_EQ(event, uint32_t(FI_CONNREQ));
    fi_info* req = reinterpret_cast<fi_eq_cm_entry*>(ev.data())->info;
    if (i == 0) {  // the server's domain, CQ, region and SRQ, with four receives posted
      ASSERT_EQ(fi_domain(r.fabric(), req, &srv.domain, nullptr), 0);
      fi_cq_attr ca{};
      ca.format = FI_CQ_FORMAT_DATA;
      ASSERT_EQ(fi_cq_open(srv.domain, &ca, &srv.cq, nullptr), 0);
      ASSERT_EQ(fi_mr_reg(srv.domain, srv.buf.data(), srv.buf.size(), FI_RECV, 0, 0, 0, &srv.mr, nullptr), 0);
      ASSERT_EQ(fi_srx_context(srv.domain, nullptr, &srx, nullptr), 0);
      for (int k = 0; k < 4; ++k)
        ASSERT_EQ(fi_recv(srx, srv.buf.data() + 64 * k, 64, srv.desc(), 0, &rctx[k]), 0);
    }
    ASSERT_EQ(fi_endpoint(srv.domain, req, &eps[i], nullptr), 0);
    fi_freeinfo(req);
    ASSERT_EQ(fi_ep_bind(eps[i], &r.eq()->fid, 0), 0);
    ASSERT_EQ(fi_ep_bind(eps[i], &srv.cq->fid, FI_TRANSMIT | FI_RECV), 0);
    ASSERT_EQ(fi_ep_bind(eps[i], &srx->fid, 0), 0);
    ASSERT_EQ(fi_enable(eps[i]), 0);
    ASSERT_EQ(fi_accept(eps[i], nullptr, 0), 0);
    for (int k = 0; k < 2; ++k) {
      ASSERT_EQ(r.next(event, ev), 1);
      ASSERT_EQ(event, uint32_t(FI_CONNECTED));
    }
  }
  char own[8];
  EXPECT_EQ(fi_recv(eps[0], own, sizeof own, nullptr, 0, &rctx[0]), -FI_EOPNOTSUPP);
  ASSERT_EQ(fi_send(a.ep, "a1", 3, nullptr, 0, &sctx[0]), 0);
  fi_cq_data_entry e{};
  ASSERT_EQ(wait_cq(srv.cq, e), 1);
  EXPECT_EQ(e.op_context, &rctx[0]);
  EXPECT_STREQ(srv.buf.data(), "a1");
  ASSERT_EQ(fi_send(b.ep, "b1", 3, nullptr, 0, &sctx[1]), 0);
  ASSERT_EQ(wait_cq(srv.cq, e), 1);
  EXPECT_EQ(e.op_context, &rctx[1]);
  EXPECT_STREQ(srv.buf.data() + 64, "b1");
  ASSERT_EQ(fi_send(a.ep, "a2", 3, nullptr, 0, &sctx[2]), 0);
  ASSERT_EQ(wait_cq(srv.cq, e), 1);
  EXPECT_EQ(e.op_context, &rctx[2]);
  EXPECT_STREQ(srv.buf.data() + 128, "a2");
  EXPECT_EQ(fi_close(&srx->fid), -FI_EBUSY);  // endpoints still bound
  for (fid_ep* ep : eps) fi_close(&ep->fid);
  EXPECT_EQ(fi_close(&srx->fid), 0);
  a.close();
  b.close();
  srv.close();
}

// FI_PROGRESS_AUTO and FI_THREAD_SAFE: two threads send 200 messages each on one endpoint; the
// server, which never drives progress (its CQ reads under automatic progress do not), receives
// all 400 intact through fi_cq_sread.
TEST(OfiRc, AutomaticProgressAndTwoThreadsOnOneEndpoint) {
  REQUIRE_RC();
  Rc r(FI_MSG, FI_PROGRESS_AUTO, FI_THREAD_SAFE);
  ASSERT_EQ(r.info()->domain_attr->data_progress, FI_PROGRESS_AUTO);
  ASSERT_EQ(r.info()->ep_attr->protocol, uint32_t(FI_PROTO_RDMA_CM_IB_RC));
  r.cq_wait = FI_WAIT_UNSPEC;
  const sockaddr_in to = r.listen();
  constexpr int kPerThread = 200;
  std::vector<fi_context> rctx(2 * kPerThread);
  ASSERT_TRUE(r.connect(to, 64, &rctx[0]));
  for (int i = 1; i < 2 * kPerThread; ++i)
    ASSERT_EQ(fi_recv(r.server.ep, r.server.buf.data() + 64 * i, 64, r.server.desc(), 0, &rctx[i]), 0);
  auto sender = [&](int t) {
    fi_context sctx;
    for (int i = 0; i < kPerThread; ++i) {
      char msg[16];
      snprintf(msg, sizeof msg, "t%d-%03d", t, i);
      ssize_t rc;
      for (int tries = 0; (rc = fi_send(r.client.ep, msg, sizeof msg, nullptr, 0, &sctx)) == -FI_EAGAIN &&
                          tries < 1000000; ++tries) {
        fi_cq_data_entry e;
        fi_cq_read(r.client.cq, &e, 1);
      }
      ASSERT_EQ(rc, 0);
    }
  };
  std::thread t0(sender, 0), t1(sender, 1);
  std::vector<int> next(2, 0);
  int got = 0;
  fi_cq_data_entry e{};
  while (got < 2 * kPerThread) {
    const ssize_t n = fi_cq_sread(r.server.cq, &e, 1, nullptr, 10000);
    ASSERT_EQ(n, 1) << "after " << got;
    const auto* msg = static_cast<const char*>(static_cast<void*>(
        r.server.buf.data() + 64 * (static_cast<fi_context*>(e.op_context) - rctx.data())));
    int t = -1, i = -1;
    ASSERT_EQ(sscanf(msg, "t%d-%d", &t, &i), 2) << msg;
    ASSERT_TRUE(t == 0 || t == 1);
    EXPECT_EQ(i, next[t]) << "thread " << t << "'s messages in order";
    next[t] = i + 1;
    ++got;
  }
  t0.join();
  t1.join();
  EXPECT_EQ(next[0], kPerThread);
  EXPECT_EQ(next[1], kPerThread);
}

// Receiver not ready: with verbs.rnr_retry = 0 a send that finds no posted receive fails with
// FI_ENORX (IBV_WC_RNR_RETRY_EXC_ERR) instead of waiting, and the connection fails cleanly.
TEST(OfiRc, ASendWithoutAReceiveFailsWhenRnrRetriesAreBounded) {
  REQUIRE_RC();
  setenv("FI_VERBS_RNR_RETRY", "0", 1);
  {
    Rc r;
    const sockaddr_in to = r.listen();
    fi_context rctx, sctx[2];
    ASSERT_TRUE(r.connect(to, 64, &rctx));
    ASSERT_EQ(fi_send(r.client.ep, "one", 4, nullptr, 0, &sctx[0]), 0);  // the posted receive
    fi_cq_data_entry e{};
    ASSERT_EQ(wait_cq(r.server.cq, e), 1);
    ASSERT_EQ(wait_cq(r.client.cq, e), 1);
    ASSERT_EQ(fi_send(r.client.ep, "two", 4, nullptr, 0, &sctx[1]), 0);  // nothing posted
    fi_cq_err_entry err{};
    ASSERT_EQ(wait_cq(r.client.cq, e, &err), -FI_EAVAIL);
    EXPECT_EQ(err.op_context, &sctx[1]);
    EXPECT_EQ(err.err, FI_ENORX);
    EXPECT_EQ(err.prov_errno, 13);  // IBV_WC_RNR_RETRY_EXC_ERR
    uint32_t event = 0;
    std::vector<uint8_t> ev;
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(r.next(event, ev), 1);
      EXPECT_EQ(event, uint32_t(FI_SHUTDOWN));
    }
  }
  unsetenv("FI_VERBS_RNR_RETRY");
}

// FI_THREAD_DOMAIN (the domain lock off): one thread drives everything; 300 sends posted before
// any completion is read arrive intact and in order, and complete in order.
TEST(OfiRc, ThreadDomainLevelCarriesABurstInOrder) {
  REQUIRE_RC();
  Rc r(FI_MSG, FI_PROGRESS_MANUAL, FI_THREAD_DOMAIN);
  ASSERT_EQ(r.info()->domain_attr->threading, FI_THREAD_DOMAIN);
  const sockaddr_in to = r.listen();
  constexpr int kMsgs = 300;
  std::vector<fi_context> rctx(kMsgs), sctx(kMsgs);
  ASSERT_TRUE(r.connect(to, 64, &rctx[0]));
  for (int i = 1; i < kMsgs; ++i)
    ASSERT_EQ(fi_recv(r.server.ep, r.server.buf.data() + 64 * i, 64, r.server.desc(), 0, &rctx[i]), 0);
  for (int i = 0; i < kMsgs; ++i) {
    uint32_t v = uint32_t(i) * 2654435761u;
    ASSERT_EQ(fi_send(r.client.ep, &v, sizeof v, nullptr, 0, &sctx[i]), 0) << i;
  }
  fi_cq_data_entry e{};
  for (int i = 0; i < kMsgs; ++i) {
    ASSERT_EQ(wait_cq(r.server.cq, e), 1) << i;
    ASSERT_EQ(e.op_context, &rctx[i]);
    uint32_t v = 0;
    std::memcpy(&v, r.server.buf.data() + 64 * i, sizeof v);
    EXPECT_EQ(v, uint32_t(i) * 2654435761u);
  }
  for (int i = 0; i < kMsgs; ++i) {
    ASSERT_EQ(wait_cq(r.client.cq, e), 1) << i;
    EXPECT_EQ(e.op_context, &sctx[i]);
  }
}

TEST(OfiRc, RejectIsConnRefusedWithTheCmData) {
  REQUIRE_RC();
  Rc r;
  const sockaddr_in to = r.listen();
  r.open(r.client, r.info());
  ASSERT_EQ(fi_connect(r.client.ep, &to, nullptr, 0), 0);
  EXPECT_EQ(fi_connect(r.client.ep, &to, nullptr, 0), -FI_EISCONN);
  uint32_t event = 0;
  std::vector<uint8_t> ev;
  ASSERT_EQ(r.next(event, ev), 1);
  ASSERT_EQ(event, uint32_t(FI_CONNREQ));
  fi_info* req = reinterpret_cast<fi_eq_cm_entry*>(ev.data())->info;
  ASSERT_EQ(fi_reject(r.pep(), req->handle, "go away", 7), 0);
  EXPECT_EQ(fi_reject(r.pep(), req->handle, nullptr, 0), -FI_EINVAL);  // answered already
  fi_eq_err_entry err{};
  ASSERT_EQ(r.next(event, ev, &err), -FI_EAVAIL);
  EXPECT_EQ(err.err, FI_ECONNREFUSED);
  EXPECT_EQ(err.fid, &r.client.ep->fid);
  ASSERT_EQ(err.err_data_size, 7u);
  EXPECT_EQ(std::string(static_cast<const char*>(err.err_data), 7), "go away");
  // The rejected request cannot be taken by an endpoint.
  ASSERT_EQ(fi_domain(r.fabric(), req, &r.server.domain, nullptr), 0);
  fid_ep* ep = nullptr;
  EXPECT_EQ(fi_endpoint(r.server.domain, req, &ep, nullptr), -FI_EINVAL);
  fi_freeinfo(req);
}

TEST(OfiRc, BadInputIsRefusedWithClearCodes) {
  REQUIRE_RC();
  Rc r;
  r.open(r.client, r.info());
  // Memory the device cannot register: an unmapped range.
  void* p = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  munmap(p, 1 << 20);
  fid_mr* mr = nullptr;
  EXPECT_EQ(fi_mr_reg(r.client.domain, p, 1 << 20, FI_RECV, 0, 0, 0, &mr, nullptr), -FI_EFAULT);
  // A receive without a descriptor (FI_MR_LOCAL), an iov count above the limit.
  fi_context c;
  EXPECT_EQ(fi_recv(r.client.ep, r.client.buf.data(), 64, nullptr, 0, &c), -FI_EINVAL);
  iovec iov[5];
  void* desc[5];
  for (auto& v : iov) v = {r.client.buf.data(), 8};
  for (auto& d : desc) d = r.client.desc();
  EXPECT_EQ(fi_recvv(r.client.ep, iov, desc, 5, 0, &c), -FI_EINVAL);
  // Tagged calls on an FI_MSG endpoint.
  EXPECT_EQ(fi_trecv(r.client.ep, r.client.buf.data(), 8, r.client.desc(), 0, 1, 0, &c),
            -FI_EOPNOTSUPP);
  // A connect to a service nobody listens on: refused, not hung.
  sockaddr_in to{};
  size_t len = sizeof to;
  ASSERT_EQ(fi_getname(&r.client.ep->fid, &to, &len), 0);
  to.sin_port = htons(9);
  ASSERT_EQ(fi_connect(r.client.ep, &to, nullptr, 0), 0);
  uint32_t event = 0;
  std::vector<uint8_t> ev;
  fi_eq_err_entry err{};
  ASSERT_EQ(r.next(event, ev, &err), -FI_EAVAIL);
  EXPECT_TRUE(err.err == FI_ECONNREFUSED || err.err == FI_ETIMEDOUT) << err.err;
}

}  // namespace
}  // namespace pollfab::ofitest
