// Connected endpoints (FI_EP_MSG; fi_cm(3), fi_eq(3), fi_endpoint(3)) through the public API, in
// one process: a passive endpoint, a client endpoint and the endpoint that accepts it, all on
// the provider under test (PF_TEST_PROV). Covers CM data both ways, FI_CONNREQ/FI_CONNECTED/
// FI_SHUTDOWN events, reject with CM data (FI_ECONNREFUSED, err_data in the caller's buffer and
// in the EQ's), a connect nobody answers (FI_ETIMEDOUT), and the error codes of bad calls.
#include <rdma/fi_eq.h>

#include <cstring>
#include <string>

#include "tests/ofi/ofi_fixture.hpp"

namespace pollfab::ofitest {
namespace {

using namespace std::chrono_literals;

InfoPtr msg_info() {
  InfoPtr info;
  int rc = getinfo_for(FI_EP_MSG, FI_MSG, nullptr, nullptr, 0, FI_FORMAT_UNSPEC, info);
  EXPECT_EQ(rc, 0) << fi_strerror(-rc);
  return info;
}

struct Side {
  fid_domain* domain = nullptr;
  fid_ep* ep = nullptr;
  fid_cq* cq = nullptr;
  void close() {
    if (ep) fi_close(&ep->fid);
    if (cq) fi_close(&cq->fid);
    if (domain) fi_close(&domain->fid);
    ep = nullptr, cq = nullptr, domain = nullptr;
  }
};

class Msg {
 public:
  Msg() : info_(msg_info()) {
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
  void open(Side& s, fi_info* info) {
    EXPECT_EQ(fi_domain(fabric_, info, &s.domain, nullptr), 0);
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_CONTEXT;
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

// Waits for a completion on cq (bounded).
bool completion(fid_cq* cq) {
  fi_cq_entry e;
  const auto end = std::chrono::steady_clock::now() + 10s;
  do {
    ssize_t n = fi_cq_read(cq, &e, 1);
    if (n == 1) return true;
    if (n != -FI_EAGAIN) return false;
  } while (std::chrono::steady_clock::now() < end);
  return false;
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
  const std::string var = std::string("FI_") + (std::string(test_provider()) == "dpdk" ? "DPDK" : "UDP") +
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
    if (std::string(test_provider()) == "dpdk")
      EXPECT_EQ(err.err, FI_ECONNREFUSED);  // RESET from the port
    else
      EXPECT_TRUE(err.err == FI_ETIMEDOUT || err.err == FI_ECONNREFUSED) << err.err;
  }
  unsetenv(var.c_str());
}

}  // namespace
}  // namespace pollfab::ofitest
