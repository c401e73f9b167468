// Shared receive contexts (fi_srx_context, fi_endpoint(3) "Shared Contexts") for connected
// endpoints, through the public API in one process on the provider under test (PF_TEST_PROV):
// a server whose connections all take their receives from one context. Covers receives posted
// before any connection exists, each message completing on the CQ of the connection it arrived
// on, unexpected messages, peek, tagged receives, a multi-recv buffer shared by connections,
// cancel, an endpoint closing while the others go on, getinfo's FI_SHARED_CONTEXT, and the
// error codes (sends on the context, fi_recv on a bound endpoint, RDM endpoints, close while
// bound).
#include <rdma/fi_eq.h>

#include <cstring>
#include <set>
#include <string>

#include "tests/ofi/ofi_fixture.hpp"

namespace pollfab::ofitest {
namespace {

using namespace std::chrono_literals;

InfoPtr srx_info(fi_ep_type type, int* rc_out = nullptr) {
  fi_info* hints = fi_allocinfo();
  hints->ep_attr->type = type;
  hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
  hints->caps = FI_MSG | FI_TAGGED | FI_MULTI_RECV;
  hints->mode = FI_CONTEXT;
  hints->fabric_attr->prov_name = strdup(test_provider());
  fi_info* info = nullptr;
  int rc = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  if (rc_out) *rc_out = rc;
  return InfoPtr(rc == 0 ? info : nullptr);
}

struct Conn {
  fid_ep* client = nullptr;
  fid_cq* client_cq = nullptr;
  fid_ep* server = nullptr;
  fid_cq* server_cq = nullptr;
  void close_server() {
    if (server) fi_close(&server->fid);
    if (server_cq) fi_close(&server_cq->fid);
    server = nullptr, server_cq = nullptr;
  }
  void close() {
    close_server();
    if (client) fi_close(&client->fid);
    if (client_cq) fi_close(&client_cq->fid);
    client = nullptr, client_cq = nullptr;
  }
};

// A listener, a server domain with one shared receive context, a client domain, and
// connections whose server endpoints (on the server domain, each with its own CQ) use the
// context.
class SrxServer {
 public:
  SrxServer() : info_(srx_info(FI_EP_MSG)) {
    if (!info_) return;
    EXPECT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    fi_eq_attr ea{};
    ea.wait_obj = FI_WAIT_UNSPEC;
    EXPECT_EQ(fi_eq_open(fabric_, &ea, &eq_, nullptr), 0);
    EXPECT_EQ(fi_passive_ep(fabric_, info_.get(), &pep_, nullptr), 0);
    EXPECT_EQ(fi_pep_bind(pep_, &eq_->fid, 0), 0);
    EXPECT_EQ(fi_listen(pep_), 0);
    pep_name_.resize(256);
    size_t len = pep_name_.size();
    EXPECT_EQ(fi_getname(&pep_->fid, pep_name_.data(), &len), 0);
    pep_name_.resize(len);
    // The server's domain is on the listener's port (its src_addr), as a server that asked
    // fi_getinfo for its service would open it; the clients' domain is on a port of its own.
    InfoPtr at_pep(fi_dupinfo(info_.get()));
    free(at_pep->src_addr);
    at_pep->src_addr = malloc(len);
    std::memcpy(at_pep->src_addr, pep_name_.data(), len);
    at_pep->src_addrlen = len;
    EXPECT_EQ(fi_domain(fabric_, at_pep.get(), &server_dom_, nullptr), 0);
    EXPECT_EQ(fi_domain(fabric_, info_.get(), &client_dom_, nullptr), 0);
    EXPECT_EQ(fi_srx_context(server_dom_, nullptr, &srx, nullptr), 0);
  }
  ~SrxServer() {
    for (Conn& c : conns) c.close();
    if (srx) fi_close(&srx->fid);
    if (pep_) fi_close(&pep_->fid);
    for (fid_domain* d : {server_dom_, client_dom_})
      if (d) fi_close(&d->fid);
    if (eq_) fi_close(&eq_->fid);
    if (fabric_) fi_close(&fabric_->fid);
  }
  bool ok() const { return info_ && srx && pep_; }
  fi_info* info() const { return info_.get(); }
  fid_domain* server_domain() const { return server_dom_; }

  static fid_cq* open_cq(fid_domain* d) {
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_TAGGED;
    fid_cq* cq = nullptr;
    EXPECT_EQ(fi_cq_open(d, &ca, &cq, nullptr), 0);
    return cq;
  }
  // Connects n clients; conns[i].server is the server end of client i (CM data: i).
  void connect(size_t n) {
    conns.resize(n);
    for (size_t i = 0; i < n; ++i) {
      Conn& c = conns[i];
      c.client_cq = open_cq(client_dom_);
      ASSERT_EQ(fi_endpoint(client_dom_, info_.get(), &c.client, nullptr), 0);
      ASSERT_EQ(fi_ep_bind(c.client, &eq_->fid, 0), 0);
      ASSERT_EQ(fi_ep_bind(c.client, &c.client_cq->fid, FI_TRANSMIT | FI_RECV), 0);
      ASSERT_EQ(fi_enable(c.client), 0);
      const uint8_t id = uint8_t(i);
      ASSERT_EQ(fi_connect(c.client, pep_name_.data(), &id, 1), 0);
    }
    size_t connected = 0;
    const auto end = std::chrono::steady_clock::now() + 20s;
    std::vector<uint8_t> buf(sizeof(fi_eq_cm_entry) + 64);
    while (connected < 2 * n && std::chrono::steady_clock::now() < end) {
      uint32_t event = 0;
      ssize_t r = fi_eq_read(eq_, &event, buf.data(), buf.size(), 0);
      if (r == -FI_EAGAIN) {
        drive();
        continue;
      }
      ASSERT_GT(r, 0) << fi_strerror(int(-r));
      auto* cm = reinterpret_cast<fi_eq_cm_entry*>(buf.data());
      if (event == FI_CONNECTED) {
        ++connected;
        continue;
      }
      ASSERT_EQ(event, uint32_t(FI_CONNREQ));
      ASSERT_EQ(size_t(r), sizeof(fi_eq_cm_entry) + 1);
      Conn& c = conns.at(cm->data[0]);
      c.server_cq = open_cq(server_dom_);
      ASSERT_EQ(fi_endpoint(server_dom_, cm->info, &c.server, nullptr), 0);
      ASSERT_EQ(fi_ep_bind(c.server, &eq_->fid, 0), 0);
      ASSERT_EQ(fi_ep_bind(c.server, &c.server_cq->fid, FI_TRANSMIT | FI_RECV), 0);
      ASSERT_EQ(fi_ep_bind(c.server, &srx->fid, 0), 0);
      EXPECT_EQ(fi_ep_bind(c.server, &srx->fid, 0), -FI_EINVAL);  // one context per endpoint
      ASSERT_EQ(fi_enable(c.server), 0);
      ASSERT_EQ(fi_accept(c.server, nullptr, 0), 0);
      fi_freeinfo(cm->info);
    }
    ASSERT_EQ(connected, 2 * n);
  }
  // One progress pass over every CQ (reads nothing: a zero-count read progresses).
  void drive() {
    fi_cq_tagged_entry e;
    for (Conn& c : conns)
      for (fid_cq* cq : {c.client_cq, c.server_cq})
        if (cq) fi_cq_read(cq, &e, 0);
  }
  // The next completion on cq (progressing everything), or an error entry's err (negative);
  // -FI_EAGAIN after 10 s.
  int next(fid_cq* cq, fi_cq_tagged_entry& e, fi_cq_err_entry* err = nullptr) {
    const auto end = std::chrono::steady_clock::now() + 10s;
    do {
      ssize_t n = fi_cq_read(cq, &e, 1);
      if (n == 1) return 1;
      if (n == -FI_EAVAIL) {
        fi_cq_err_entry mine{};
        fi_cq_err_entry& ee = err ? *err : mine;
        EXPECT_EQ(fi_cq_readerr(cq, &ee, 0), 1);
        return -ee.err;
      }
      drive();
    } while (std::chrono::steady_clock::now() < end);
    return -FI_EAGAIN;
  }
  // Sends text on client i and waits for its send completion.
  void send(size_t i, const std::string& text, bool tagged = false, uint64_t tag = 0) {
    fi_context ctx;
    ssize_t r = tagged ? fi_tsend(conns[i].client, text.data(), text.size(), nullptr, 0, tag, &ctx)
                       : fi_send(conns[i].client, text.data(), text.size(), nullptr, 0, &ctx);
    ASSERT_EQ(r, 0);
    fi_cq_tagged_entry e;
    ASSERT_EQ(next(conns[i].client_cq, e), 1);
  }

  fid_ep* srx = nullptr;
  std::vector<Conn> conns;

 private:
  InfoPtr info_;
  fid_fabric* fabric_ = nullptr;
  fid_eq* eq_ = nullptr;
  fid_domain* server_dom_ = nullptr;
  fid_domain* client_dom_ = nullptr;
  fid_pep* pep_ = nullptr;
  std::vector<uint8_t> pep_name_;
};

TEST(OfiSrx, GetinfoOffersSharedReceiveContextsForMsgOnly) {
  int rc = 0;
  InfoPtr msg = srx_info(FI_EP_MSG, &rc);
  ASSERT_EQ(rc, 0) << fi_strerror(-rc);
  EXPECT_EQ(msg->ep_attr->rx_ctx_cnt, size_t(FI_SHARED_CONTEXT));
  EXPECT_GT(msg->domain_attr->max_ep_srx_ctx, 0u);
  EXPECT_EQ(srx_info(FI_EP_RDM, &rc), nullptr);
  EXPECT_EQ(rc, -FI_ENODATA);
}

TEST(OfiSrx, OneQueueServesEveryConnectionAndEachCompletesOnItsOwnCq) {
  SrxServer s;
  ASSERT_TRUE(s.ok());
  // Posted before any connection exists: they wait in the shared queue.
  char bufs[6][32] = {};
  fi_context ctx[6];
  for (int i = 0; i < 6; ++i) ASSERT_EQ(fi_recv(s.srx, bufs[i], 32, nullptr, 0, &ctx[i]), 0);
  EXPECT_EQ(fi_send(s.srx, "x", 1, nullptr, 0, nullptr), -FI_EOPNOTSUPP);
  fi_msg_tagged peek{};
  EXPECT_EQ(fi_trecvmsg(s.srx, &peek, FI_PEEK), -FI_EOPBADSTATE);  // no CQ to report on yet
  ASSERT_NO_FATAL_FAILURE(s.connect(3));
  EXPECT_EQ(fi_recv(s.conns[0].server, bufs[0], 32, nullptr, 0, nullptr), -FI_EOPNOTSUPP);
  for (size_t i = 0; i < 3; ++i)
    for (int k = 0; k < 2; ++k) s.send(i, "c" + std::to_string(i) + "-" + std::to_string(k));
  std::set<void*> used;
  for (size_t i = 0; i < 3; ++i) {
    for (int k = 0; k < 2; ++k) {
      fi_cq_tagged_entry e{};
      ASSERT_EQ(s.next(s.conns[i].server_cq, e), 1) << "connection " << i;
      EXPECT_EQ(e.flags, uint64_t(FI_RECV | FI_MSG));
      EXPECT_EQ(e.len, 4u);
      EXPECT_EQ(std::string(static_cast<char*>(e.buf), 4), "c" + std::to_string(i) + "-" + std::to_string(k));
      used.insert(e.op_context);
    }
  }
  EXPECT_EQ(used.size(), 6u);  // every posted receive taken once, whichever connection
  for (auto& c : ctx) EXPECT_TRUE(used.count(&c));
  // A message with no receive waiting is kept (unexpected) until one is posted.
  s.send(2, "late");
  char late[8] = {};
  fi_context late_ctx;
  ASSERT_EQ(fi_recv(s.srx, late, sizeof late, nullptr, 0, &late_ctx), 0);
  fi_cq_tagged_entry e{};
  ASSERT_EQ(s.next(s.conns[2].server_cq, e), 1);
  EXPECT_EQ(e.op_context, &late_ctx);
  EXPECT_EQ(std::string(late, 4), "late");
  // Tagged, with a peek: reported on the CQ of the connection the message came on.
  s.send(1, "tg", true, 7);
  fi_context peek_ctx, tctx;
  iovec none{};
  peek.msg_iov = &none;
  peek.iov_count = 0;
  peek.tag = 7;
  peek.context = &peek_ctx;
  ASSERT_EQ(fi_trecvmsg(s.srx, &peek, FI_PEEK), 0);
  ASSERT_EQ(s.next(s.conns[1].server_cq, e), 1);
  EXPECT_EQ(e.op_context, &peek_ctx);
  EXPECT_EQ(e.len, 2u);
  EXPECT_EQ(e.tag, 7u);
  char tbuf[4] = {};
  ASSERT_EQ(fi_trecv(s.srx, tbuf, sizeof tbuf, nullptr, 0, 7, 0, &tctx), 0);
  ASSERT_EQ(s.next(s.conns[1].server_cq, e), 1);
  EXPECT_EQ(e.op_context, &tctx);
  EXPECT_EQ(e.flags, uint64_t(FI_RECV | FI_TAGGED));
  EXPECT_EQ(std::string(tbuf, 2), "tg");
}

TEST(OfiSrx, MultiRecvBufferIsSharedByConnections) {
  SrxServer s;
  ASSERT_TRUE(s.ok());
  ASSERT_NO_FATAL_FAILURE(s.connect(2));
  std::vector<char> big(600);
  iovec iov{big.data(), big.size()};
  fi_context bctx;
  fi_msg m{};
  m.msg_iov = &iov;
  m.iov_count = 1;
  m.context = &bctx;
  ASSERT_EQ(fi_recvmsg(s.srx, &m, FI_MULTI_RECV), 0);
  for (int k = 0; k < 3; ++k)
    for (size_t i = 0; i < 2; ++i) s.send(i, std::string(100, char('a' + i)));
  size_t bytes = 0, released = 0;
  for (size_t i = 0; i < 2; ++i) {
    for (int k = 0; k < 3; ++k) {
      fi_cq_tagged_entry e{};
      ASSERT_EQ(s.next(s.conns[i].server_cq, e), 1);
      EXPECT_EQ(e.op_context, &bctx);
      ASSERT_EQ(e.len, 100u);
      auto* p = static_cast<char*>(e.buf);
      EXPECT_TRUE(p >= big.data() && p + 100 <= big.data() + big.size());
      EXPECT_EQ(p[0], char('a' + i));  // the slice holds its own connection's message
      bytes += e.len;
      if (e.flags & FI_MULTI_RECV) ++released;
    }
  }
  EXPECT_EQ(bytes, 600u);
  EXPECT_EQ(released, 1u);  // the buffer is full: its last slice releases it
}

TEST(OfiSrx, CancelAndClosingOneEndpointLeaveTheQueueToTheOthers) {
  SrxServer s;
  ASSERT_TRUE(s.ok());
  char cbuf[8];
  fi_context cctx;
  ASSERT_EQ(fi_recv(s.srx, cbuf, sizeof cbuf, nullptr, 0, &cctx), 0);
  EXPECT_EQ(fi_cancel(&s.srx->fid, &cctx), -FI_EOPBADSTATE);  // no endpoint to report on
  ASSERT_NO_FATAL_FAILURE(s.connect(2));
  // Cancelled: an FI_ECANCELED error entry on the first endpoint that joined.
  ASSERT_EQ(fi_cancel(&s.srx->fid, &cctx), 0);
  EXPECT_EQ(fi_cancel(&s.srx->fid, &cctx), -FI_ENOENT);
  size_t first = 0;  // the CONNREQs may arrive in either order
  fi_cq_tagged_entry e{};
  fi_cq_err_entry err{};
  int r = -FI_EAGAIN;
  for (size_t i = 0; i < 2 && r == -FI_EAGAIN; ++i) {
    ssize_t n = fi_cq_read(s.conns[i].server_cq, &e, 1);
    if (n == -FI_EAVAIL) {
      EXPECT_EQ(fi_cq_readerr(s.conns[i].server_cq, &err, 0), 1);
      r = -err.err;
      first = i;
    }
  }
  ASSERT_EQ(r, -FI_ECANCELED);
  EXPECT_EQ(err.op_context, &cctx);
  // Two receives posted; the first endpoint closes; the other's messages use both.
  char bufs[2][8] = {};
  fi_context ctx[2];
  for (int i = 0; i < 2; ++i) ASSERT_EQ(fi_recv(s.srx, bufs[i], 8, nullptr, 0, &ctx[i]), 0);
  EXPECT_EQ(fi_close(&s.srx->fid), -FI_EBUSY);  // endpoints are bound
  s.conns[first].close_server();
  const size_t other = 1 - first;
  s.send(other, "one");
  s.send(other, "two");
  ASSERT_EQ(s.next(s.conns[other].server_cq, e), 1);
  EXPECT_EQ(std::string(static_cast<char*>(e.buf), 3), "one");
  ASSERT_EQ(s.next(s.conns[other].server_cq, e), 1);
  EXPECT_EQ(std::string(static_cast<char*>(e.buf), 3), "two");
  s.conns[other].close_server();
  EXPECT_EQ(fi_close(&s.srx->fid), 0);
  s.srx = nullptr;
}

TEST(OfiSrx, RdmEndpointsCannotBindIt) {
  InfoPtr info = get_info(FI_MSG);
  ASSERT_TRUE(info);
  fid_fabric* fabric = nullptr;
  fid_domain* dom = nullptr;
  fid_ep *ep = nullptr, *srx = nullptr;
  ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
  ASSERT_EQ(fi_domain(fabric, info.get(), &dom, nullptr), 0);
  ASSERT_EQ(fi_srx_context(dom, nullptr, &srx, nullptr), 0);
  EXPECT_EQ(srx->fid.fclass, size_t(FI_CLASS_SRX_CTX));
  ASSERT_EQ(fi_endpoint(dom, info.get(), &ep, nullptr), 0);
  EXPECT_EQ(fi_ep_bind(ep, &srx->fid, 0), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_ep_bind(ep, &srx->fid, FI_RECV), -FI_EBADFLAGS);
  fi_rx_attr bad{};
  bad.size = size_t(1) << 20;
  fid_ep* srx2 = nullptr;
  EXPECT_EQ(fi_srx_context(dom, &bad, &srx2, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_close(&dom->fid), -FI_EBUSY);  // the context holds the domain
  fi_close(&ep->fid);
  EXPECT_EQ(fi_close(&srx->fid), 0);
  EXPECT_EQ(fi_close(&dom->fid), 0);
  fi_close(&fabric->fid);
}

}  // namespace
}  // namespace pollfab::ofitest
