// Connected endpoints (FI_EP_MSG; fi_cm(3), fi_eq(3), fi_endpoint(3)) through the public API, in
// one process: a passive endpoint, a client endpoint and the endpoint that accepts it, all on
// the provider under test (PF_TEST_PROV). Covers CM data both ways, FI_CONNREQ/FI_CONNECTED/
// FI_SHUTDOWN events, reject with CM data (FI_ECONNREFUSED, err_data in the caller's buffer and
// in the EQ's), a connect nobody answers (FI_ETIMEDOUT), and the error codes of bad calls.
#include <rdma/fi_atomic.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>

#include <cstring>
#include <string>

#include "tests/ofi/ofi_fixture.hpp"

namespace pollfab::ofitest {
namespace {

using namespace std::chrono_literals;

InfoPtr msg_info(uint64_t caps = FI_MSG) {
  InfoPtr info;
  int rc = getinfo_for(FI_EP_MSG, caps, nullptr, nullptr, 0, FI_FORMAT_UNSPEC, info);
  EXPECT_EQ(rc, 0) << fi_strerror(-rc);
  return info;
}

struct Side {
  fid_domain* domain = nullptr;
  fid_ep* ep = nullptr;
  fid_cq* cq = nullptr;
  // Closes the endpoint, then a region of the domain, then the rest.
  void close_ep_first(fid_mr* mr) {
    if (ep) fi_close(&ep->fid);
    ep = nullptr;
    if (mr) fi_close(&mr->fid);
    close();
  }
  void close() {
    if (ep) fi_close(&ep->fid);
    if (cq) fi_close(&cq->fid);
    if (domain) fi_close(&domain->fid);
    ep = nullptr, cq = nullptr, domain = nullptr;
  }
};

class Msg {
 public:
  explicit Msg(uint64_t caps = FI_MSG) : info_(msg_info(caps)) {
    if (!info_) return;
    EXPECT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    fi_eq_attr ea{};
    ea.wait_obj = FI_WAIT_UNSPEC;
    EXPECT_EQ(fi_eq_open(fabric_, &ea, &eq_, nullptr), 0);
  }
  ~Msg() {
    client.close();
    server.close();
    if (pep_) fi_close(&pep_->fid);
    if (eq_) fi_close(&eq_->fid);
    if (fabric_) fi_close(&fabric_->fid);
  }
  bool ok() const { return info_ && eq_; }
  fi_info* info() const { return info_.get(); }
  fid_eq* eq() const { return eq_; }
  fid_pep* pep() const { return pep_; }
  void close_pep() {
    if (pep_) fi_close(&pep_->fid);
    pep_ = nullptr;
  }

  // A listening passive endpoint; returns its name.
  std::vector<uint8_t> listen() {
    EXPECT_EQ(fi_passive_ep(fabric_, info_.get(), &pep_, nullptr), 0);
    EXPECT_EQ(fi_listen(pep_), -FI_ENOEQ);  // no EQ bound yet
    EXPECT_EQ(fi_pep_bind(pep_, &eq_->fid, 0), 0);
    EXPECT_EQ(fi_listen(pep_), 0);
    EXPECT_EQ(fi_listen(pep_), -FI_EOPBADSTATE);
    std::vector<uint8_t> name(256);
    size_t len = name.size();
    EXPECT_EQ(fi_getname(&pep_->fid, name.data(), &len), 0);
    name.resize(len);
    return name;
  }
  // An enabled endpoint on its own domain (info: the fi_getinfo result or a CONNREQ's info).
  void open(Side& s, fi_info* info, fi_cq_format format = FI_CQ_FORMAT_CONTEXT) {
    EXPECT_EQ(fi_domain(fabric_, info, &s.domain, nullptr), 0);
    fi_cq_attr ca{};
    ca.format = format;
    EXPECT_EQ(fi_cq_open(s.domain, &ca, &s.cq, nullptr), 0);
    EXPECT_EQ(fi_endpoint(s.domain, info, &s.ep, nullptr), 0);
    EXPECT_EQ(fi_ep_bind(s.ep, &eq_->fid, 0), 0);
    EXPECT_EQ(fi_ep_bind(s.ep, &s.cq->fid, FI_TRANSMIT | FI_RECV), 0);
    EXPECT_EQ(fi_enable(s.ep), 0);
  }
  // Reads the next EQ event (driving progress through the sides' CQs), up to 10 s.
  // Returns the event (data in buf, its length in len), or -FI_EAVAIL (err filled), or
  // -FI_EAGAIN on timeout.
  int next(uint32_t& event, std::vector<uint8_t>& buf, fi_eq_err_entry* err = nullptr) {
    buf.assign(sizeof(fi_eq_cm_entry) + 512, 0);
    const auto end = std::chrono::steady_clock::now() + 10s;
    do {
      ssize_t n = fi_eq_read(eq_, &event, buf.data(), buf.size(), 0);
      if (n >= 0) {
        buf.resize(size_t(n));
        return 1;
      }
      if (n == -FI_EAVAIL) {
        if (err) {
          EXPECT_EQ(fi_eq_readerr(eq_, err, 0), ssize_t(sizeof *err));
        }
        return -FI_EAVAIL;
      }
      fi_cq_entry e;
      for (Side* s : {&client, &server})
        if (s->cq) fi_cq_read(s->cq, &e, 0);
    } while (std::chrono::steady_clock::now() < end);
    return -FI_EAGAIN;
  }

  Side client, server;

 private:
  InfoPtr info_;
  fid_fabric* fabric_ = nullptr;
  fid_eq* eq_ = nullptr;
  fid_pep* pep_ = nullptr;
};

std::string cm_data(const std::vector<uint8_t>& ev) {
  return std::string(reinterpret_cast<const char*>(ev.data()) + sizeof(fi_eq_cm_entry),
                     ev.size() - sizeof(fi_eq_cm_entry));
}

// Waits for one completion on cq (bounded); e receives it in the CQ's format.
template <class Entry>
bool completion(fid_cq* cq, Entry& e) {
  const auto end = std::chrono::steady_clock::now() + 10s;
  do {
    ssize_t n = fi_cq_read(cq, &e, 1);
    if (n == 1) return true;
    if (n != -FI_EAGAIN) return false;
  } while (std::chrono::steady_clock::now() < end);
  return false;
}
bool completion(fid_cq* cq) {
  fi_cq_entry e;
  return completion(cq, e);
}

TEST(OfiMsg, ConnectAcceptWithCmDataThenDataThenShutdown) {
  Msg m;
  ASSERT_TRUE(m.ok());
  std::vector<uint8_t> pep_name = m.listen();
  m.open(m.client, m.info());
  char rbuf[16] = {};
  fi_context rctx, sctx;
  // Data calls before the connection: not connected.
  EXPECT_EQ(fi_send(m.client.ep, "x", 1, nullptr, 0, &sctx), -FI_ENOTCONN);
  size_t sz = 0, len = sizeof sz;
  ASSERT_EQ(fi_getopt(&m.client.ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &sz, &len), 0);
  EXPECT_EQ(sz, 256u);
  char too_big[257] = {};
  EXPECT_EQ(fi_connect(m.client.ep, pep_name.data(), too_big, sizeof too_big), -FI_EINVAL);
  EXPECT_EQ(fi_accept(m.client.ep, nullptr, 0), -FI_EINVAL);  // no FI_CONNREQ handle
  ASSERT_EQ(fi_connect(m.client.ep, pep_name.data(), "hello", 5), 0);
  EXPECT_EQ(fi_connect(m.client.ep, pep_name.data(), nullptr, 0), -FI_EISCONN);

  uint32_t event = 0;
  std::vector<uint8_t> ev;
  ASSERT_EQ(m.next(event, ev), 1);
  ASSERT_EQ(event, uint32_t(FI_CONNREQ));
  auto* cm = reinterpret_cast<fi_eq_cm_entry*>(ev.data());
  EXPECT_EQ(cm->fid, &m.pep()->fid);
  EXPECT_EQ(cm_data(ev), "hello");
  fi_info* req = cm->info;
  ASSERT_NE(req, nullptr);
  ASSERT_NE(req->handle, nullptr);
  EXPECT_NE(req->dest_addr, nullptr);
  m.open(m.server, req);
  ASSERT_EQ(fi_recv(m.server.ep, rbuf, sizeof rbuf, nullptr, 0, &rctx), 0);
  ASSERT_EQ(fi_accept(m.server.ep, "welcome", 7), 0);
  EXPECT_EQ(fi_accept(m.server.ep, nullptr, 0), -FI_EISCONN);

  bool client_up = false, server_up = false;
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(m.next(event, ev), 1);
    ASSERT_EQ(event, uint32_t(FI_CONNECTED));
    cm = reinterpret_cast<fi_eq_cm_entry*>(ev.data());
    if (cm->fid == &m.client.ep->fid) {
      client_up = true;
      EXPECT_EQ(cm_data(ev), "welcome");
    } else {
      EXPECT_EQ(cm->fid, &m.server.ep->fid);
      server_up = true;
    }
  }
  EXPECT_TRUE(client_up && server_up);
  fi_freeinfo(req);

  // The peers know each other.
  std::vector<uint8_t> me(256), peer(256);
  size_t mlen = me.size(), plen = peer.size();
  ASSERT_EQ(fi_getname(&m.client.ep->fid, me.data(), &mlen), 0);
  ASSERT_EQ(fi_getpeer(m.server.ep, peer.data(), &plen), 0);
  me.resize(mlen), peer.resize(plen);
  // verbs: a UD packet shows its sender's address and QP number, not its service (bytes 10-11
  // of the name; docs/architecture-notes.md 17), so the peer's view leaves the service out.
  if (std::string(test_provider()) == "verbs" && me.size() == 24) me[10] = me[11] = 0;
  EXPECT_EQ(me, peer);

  ASSERT_EQ(fi_send(m.client.ep, "ping", 4, nullptr, 0, &sctx), 0);
  ASSERT_TRUE(completion(m.server.cq));
  EXPECT_EQ(std::string(rbuf, 4), "ping");
  ASSERT_TRUE(completion(m.client.cq));

  // The client shuts down: the server hears FI_SHUTDOWN; the client can no longer send.
  ASSERT_EQ(fi_shutdown(m.client.ep, 0), 0);
  EXPECT_EQ(fi_send(m.client.ep, "x", 1, nullptr, 0, &sctx), -FI_ENOTCONN);
  ASSERT_EQ(m.next(event, ev), 1);
  EXPECT_EQ(event, uint32_t(FI_SHUTDOWN));
  EXPECT_EQ(reinterpret_cast<fi_eq_cm_entry*>(ev.data())->fid, &m.server.ep->fid);
  EXPECT_EQ(fi_shutdown(m.client.ep, 0), -FI_ENOTCONN);
}

TEST(OfiMsg, RejectIsConnRefusedWithTheCmData) {
  Msg m;
  ASSERT_TRUE(m.ok());
  std::vector<uint8_t> pep_name = m.listen();
  for (int round = 0; round < 2; ++round) {
    m.client.close();
    m.open(m.client, m.info());
    ASSERT_EQ(fi_connect(m.client.ep, pep_name.data(), nullptr, 0), 0);
    uint32_t event = 0;
    std::vector<uint8_t> ev;
    ASSERT_EQ(m.next(event, ev), 1);
    ASSERT_EQ(event, uint32_t(FI_CONNREQ));
    fi_info* req = reinterpret_cast<fi_eq_cm_entry*>(ev.data())->info;
    ASSERT_EQ(fi_reject(m.pep(), req->handle, "go away", 7), 0);
    EXPECT_EQ(fi_reject(m.pep(), req->handle, nullptr, 0), -FI_EINVAL);  // answered already
    fi_eq_err_entry err{};
    char mine[32] = {};
    if (round == 0) {  // the caller's buffer
      err.err_data = mine;
      err.err_data_size = sizeof mine;
    }
    ASSERT_EQ(m.next(event, ev, &err), -FI_EAVAIL);
    EXPECT_EQ(err.err, FI_ECONNREFUSED);
    EXPECT_EQ(err.fid, &m.client.ep->fid);
    ASSERT_EQ(err.err_data_size, 7u);
    ASSERT_NE(err.err_data, nullptr);
    EXPECT_EQ(std::string(static_cast<const char*>(err.err_data), 7), "go away");
    if (round == 0) {
      EXPECT_EQ(err.err_data, mine);
    }
    // An endpoint opened from the rejected request cannot accept it.
    m.server.close();
    m.open(m.server, req);
    EXPECT_EQ(fi_accept(m.server.ep, nullptr, 0), -FI_EINVAL);
    fi_freeinfo(req);
  }
}

// A connect to a port nobody has times out (FI_ETIMEDOUT); one to a port whose listener has
// closed is refused at once (the port answers RESET: FI_ECONNREFUSED).
TEST(OfiMsg, ConnectNobodyAnswersTimesOutAClosedListenerRefuses) {
  const std::string prov = test_provider();
  const std::string var = std::string("FI_") +
                          (prov == "dpdk" ? "DPDK" : prov == "verbs" ? "VERBS" : "UDP") +
                          "_TRANSPORT_CONNECT_TIMEOUT_MS";
  setenv(var.c_str(), "300", 1);
  {
    Msg m;
    ASSERT_TRUE(m.ok());
    std::vector<uint8_t> pep_name = m.listen();
    ASSERT_EQ(pep_name.size(), 24u);  // the binary name (providers/packet/name.hpp)
    m.open(m.client, m.info());
    std::vector<uint8_t> nobody = pep_name;
    nobody[10] = 0, nobody[11] = 9;  // UDP port 9 (bytes 10-11, big-endian): nobody is there
    // verbs: the QP number (bytes 7-9) is the destination; a UD send to a QP nobody has is lost.
    if (prov == "verbs") nobody[7] = nobody[8] = 0xff, nobody[9] = 0xf0;
    ASSERT_EQ(fi_connect(m.client.ep, nobody.data(), nullptr, 0), 0);
    uint32_t event = 0;
    std::vector<uint8_t> ev;
    fi_eq_err_entry err{};
    ASSERT_EQ(m.next(event, ev, &err), -FI_EAVAIL);
    EXPECT_EQ(err.err, FI_ETIMEDOUT);
    EXPECT_EQ(err.fid, &m.client.ep->fid);
    // The listener closes. dpdk: the port stays open (the client's domain shares it) and
    // answers RESET for the endpoint id nobody has: refused at once. udp: the pep's own socket
    // is gone and nobody answers: timed out. Either way the connect does not hang.
    // (A second client opened before the pep closes, so it does not take the pep's id.)
    m.open(m.server, m.info());
    m.close_pep();
    ASSERT_EQ(fi_connect(m.server.ep, pep_name.data(), nullptr, 0), 0);
    err = fi_eq_err_entry{};
    ASSERT_EQ(m.next(event, ev, &err), -FI_EAVAIL);
    if (prov == "dpdk")
      EXPECT_EQ(err.err, FI_ECONNREFUSED);  // RESET from the port
    else
      EXPECT_TRUE(err.err == FI_ETIMEDOUT || err.err == FI_ECONNREFUSED) << err.err;
  }
  unsetenv(var.c_str());
}

// The data operations of the earlier issue on a connection (one peer, no AV; fi_addr ignored):
// tagged, CQ data, inject, multi-recv, RMA write and read, atomics.
TEST(OfiMsg, TaggedDataInjectMultiRecvRmaAndAtomicsOnAConnection) {
  Msg m(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_MULTI_RECV | FI_READ | FI_WRITE |
        FI_REMOTE_READ | FI_REMOTE_WRITE);
  ASSERT_TRUE(m.ok());
  std::vector<uint8_t> pep_name = m.listen();
  m.open(m.client, m.info(), FI_CQ_FORMAT_TAGGED);
  ASSERT_EQ(fi_connect(m.client.ep, pep_name.data(), nullptr, 0), 0);
  uint32_t event = 0;
  std::vector<uint8_t> ev;
  ASSERT_EQ(m.next(event, ev), 1);
  ASSERT_EQ(event, uint32_t(FI_CONNREQ));
  fi_info* req = reinterpret_cast<fi_eq_cm_entry*>(ev.data())->info;
  m.open(m.server, req, FI_CQ_FORMAT_TAGGED);
  ASSERT_EQ(fi_accept(m.server.ep, nullptr, 0), 0);
  fi_freeinfo(req);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(m.next(event, ev), 1);
    ASSERT_EQ(event, uint32_t(FI_CONNECTED));
  }
  fi_cq_tagged_entry e{};
  fi_context c1, c2;
  // Tagged.
  char tbuf[8] = {};
  ASSERT_EQ(fi_trecv(m.server.ep, tbuf, sizeof tbuf, nullptr, 0, 0x55, 0, &c1), 0);
  ASSERT_EQ(fi_tsend(m.client.ep, "tg", 2, nullptr, 0, 0x55, &c2), 0);
  ASSERT_TRUE(completion(m.server.cq, e));
  EXPECT_EQ(e.flags, uint64_t(FI_RECV | FI_TAGGED));
  EXPECT_EQ(e.tag, 0x55u);
  EXPECT_EQ(std::string(tbuf, 2), "tg");
  ASSERT_TRUE(completion(m.client.cq, e));
  // Remote CQ data, then an inject.
  char dbuf[8] = {};
  ASSERT_EQ(fi_recv(m.server.ep, dbuf, sizeof dbuf, nullptr, 0, &c1), 0);
  ASSERT_EQ(fi_senddata(m.client.ep, "dd", 2, nullptr, 0x77, 0, &c2), 0);
  ASSERT_TRUE(completion(m.server.cq, e));
  EXPECT_TRUE(e.flags & FI_REMOTE_CQ_DATA);
  EXPECT_EQ(e.data, 0x77u);
  ASSERT_TRUE(completion(m.client.cq, e));
  ASSERT_EQ(fi_recv(m.server.ep, dbuf, sizeof dbuf, nullptr, 0, &c1), 0);
  ASSERT_EQ(fi_inject(m.client.ep, "inj", 3, 0), 0);
  ASSERT_TRUE(completion(m.server.cq, e));
  EXPECT_EQ(std::string(dbuf, 3), "inj");
  // Multi-recv: three messages in one buffer, the last slice releases it.
  std::vector<char> mr_buf(200);  // retires after the third (less than 64 bytes free)
  iovec iov{mr_buf.data(), mr_buf.size()};
  fi_msg mm{};
  mm.msg_iov = &iov;
  mm.iov_count = 1;
  mm.context = &c1;
  ASSERT_EQ(fi_recvmsg(m.server.ep, &mm, FI_MULTI_RECV), 0);
  for (char c : {'a', 'b', 'c'}) {
    std::string msg(50, c);
    ASSERT_EQ(fi_send(m.client.ep, msg.data(), msg.size(), nullptr, 0, &c2), 0);
    ASSERT_TRUE(completion(m.client.cq, e));
  }
  for (char c : {'a', 'b', 'c'}) {
    ASSERT_TRUE(completion(m.server.cq, e));
    EXPECT_EQ(e.len, 50u);
    EXPECT_EQ(static_cast<char*>(e.buf)[0], c);
    EXPECT_EQ(bool(e.flags & FI_MULTI_RECV), c == 'c');
  }
  // RMA and atomics against the server's memory.
  std::vector<uint64_t> region(64, 0);
  fid_mr* mr = nullptr;
  ASSERT_EQ(fi_mr_reg(m.server.domain, region.data(), region.size() * 8,
                      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0x42, 0, &mr, nullptr), 0);
  const uint64_t key = fi_mr_key(mr);
  const uint64_t base = (m.info()->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
                            ? reinterpret_cast<uint64_t>(region.data()) : 0;
  uint64_t w[4] = {1, 2, 3, 4}, r[4] = {};
  ASSERT_EQ(fi_write(m.client.ep, w, sizeof w, nullptr, 0, base + 8, key, &c2), 0);
  ASSERT_TRUE(completion(m.client.cq, e));
  EXPECT_EQ(e.flags, uint64_t(FI_RMA | FI_WRITE));
  EXPECT_EQ(region[1], 1u);
  EXPECT_EQ(region[4], 4u);
  ASSERT_EQ(fi_read(m.client.ep, r, sizeof r, nullptr, 0, base + 8, key, &c2), 0);
  ASSERT_TRUE(completion(m.client.cq, e));
  EXPECT_EQ(std::memcmp(r, w, sizeof w), 0);
  uint64_t add = 10, old = 0;
  ASSERT_EQ(fi_fetch_atomic(m.client.ep, &add, 1, nullptr, &old, nullptr, 0, base + 8, key,
                            FI_UINT64, FI_SUM, &c2), 0);
  ASSERT_TRUE(completion(m.client.cq, e));
  EXPECT_EQ(old, 1u);
  EXPECT_EQ(region[1], 11u);
  m.client.close();
  m.server.close_ep_first(mr);
}

}  // namespace
}  // namespace pollfab::ofitest
