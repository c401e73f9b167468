// verbs FI_EP_MSG over RC queue pairs (fi_verbs(7), fi_cm(3), fi_msg(3); providers/verbs/rc_*):
// getinfo's choice, connect/accept with CM data, send, senddata, inject and receive with
// descriptors, completion errors with the verbs status (a message longer than the receive and a
// send without a receive break the connection cleanly; flushed receives), a shared receive
// queue, reject with CM data, shutdown, and the error codes of bad calls. The application:
// tests/ofi/rc_fixture.hpp.
#include <sys/mman.h>

#include "tests/ofi/rc_fixture.hpp"

namespace pollfab::ofitest {
namespace {

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
