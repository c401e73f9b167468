// Observability (providers/packet/stats.hpp) on the udp provider over 127.0.0.1 (ephemeral
// ports): snapshots, the stats socket's lifecycle and JSON, stats.socket = false, endpoints
// closing while the socket is read, and socket removal at exit without fi_close. Also the
// pollfab command's JSON reader (apps/common/json.hpp).
#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "apps/common/json.hpp"
#include "providers/packet/stats.hpp"

using pollfab::apps::Json;
using pollfab::apps::parse_json;
namespace stats = pollfab::providers::packet::stats;
namespace core_stats = pollfab::core::stats;

namespace {

struct Ep {
  fid_ep* ep = nullptr;
  fid_cq* cq = nullptr;
  fid_av* av = nullptr;
};

struct Fab {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;

  void open() {
    fi_info* hints = fi_allocinfo();
    hints->fabric_attr->prov_name = strdup("udp");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    ASSERT_EQ(fi_getinfo(fi_version(), nullptr, nullptr, 0, hints, &info), 0);
    fi_freeinfo(hints);
    ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
    ASSERT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
  }
  void open_ep(Ep& e) {
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_MSG;
    fi_av_attr aa{};
    aa.type = FI_AV_TABLE;
    ASSERT_EQ(fi_cq_open(domain, &ca, &e.cq, nullptr), 0);
    ASSERT_EQ(fi_av_open(domain, &aa, &e.av, nullptr), 0);
    ASSERT_EQ(fi_endpoint(domain, info, &e.ep, nullptr), 0);
    ASSERT_EQ(fi_ep_bind(e.ep, &e.cq->fid, FI_TRANSMIT | FI_RECV), 0);
    ASSERT_EQ(fi_ep_bind(e.ep, &e.av->fid, 0), 0);
    ASSERT_EQ(fi_enable(e.ep), 0);
  }
  static void close_fid(fid* f) {
    if (f) {
      EXPECT_EQ(fi_close(f), 0);
    }
  }
  static void close_ep(Ep& e) {
    close_fid(e.ep ? &e.ep->fid : nullptr);
    close_fid(e.av ? &e.av->fid : nullptr);
    close_fid(e.cq ? &e.cq->fid : nullptr);
    e = Ep{};
  }
  void close() {
    close_fid(domain ? &domain->fid : nullptr);
    close_fid(fabric ? &fabric->fid : nullptr);
    if (info) fi_freeinfo(info);
    domain = nullptr;
    fabric = nullptr;
    info = nullptr;
  }
};

// Inserts b's name into a's AV; returns the fi_addr.
fi_addr_t connect_to(Ep& a, Ep& b) {
  char name[64];
  size_t len = sizeof name;
  EXPECT_EQ(fi_getname(&b.ep->fid, name, &len), 0);
  fi_addr_t addr = FI_ADDR_NOTAVAIL;
  EXPECT_EQ(fi_av_insert(a.av, name, 1, &addr, 0, nullptr), 1);
  return addr;
}

// Waits for n completions on cq (reads drive progress).
void drain(fid_cq* cq, int n) {
  fi_cq_msg_entry e[8];
  for (int spins = 0; n > 0 && spins < 2'000'000; ++spins) {
    ssize_t r = fi_cq_read(cq, e, 8);
    if (r > 0) n -= static_cast<int>(r);
  }
  EXPECT_EQ(n, 0);
}

bool read_socket(const std::string& path, std::string& doc) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(fd);
    return false;
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) doc.append(buf, static_cast<size_t>(n));
  close(fd);
  return !doc.empty();
}

bool exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

class StatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("FI_UDP_STATS_SOCKET");
    setenv("FI_UDP_TRANSPORT_LINGER_MS", "0", 1);
  }
  void TearDown() override { unsetenv("FI_UDP_STATS_SOCKET"); }
};

TEST_F(StatsTest, SnapshotSocketAndJson) {
  Fab f;
  f.open();
  ASSERT_EQ(core_stats::socket_path(), "");
  Ep a, b;
  f.open_ep(a);
  f.open_ep(b);
  const std::string path = core_stats::socket_path();
  ASSERT_NE(path, "");
  EXPECT_TRUE(exists(path));
  EXPECT_NE(path.find(std::to_string(getpid()) + ".sock"), std::string::npos);

  fi_addr_t to_b = connect_to(a, b);
  connect_to(b, a);
  char rbuf[3000] = {}, sbuf[3000] = {};
  ASSERT_EQ(fi_recv(b.ep, rbuf, sizeof rbuf, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
  ASSERT_EQ(fi_send(a.ep, sbuf, sizeof sbuf, nullptr, to_b, nullptr), 0);
  drain(a.cq, 1);
  drain(b.cq, 1);

  std::vector<stats::DomainSnapshot> snap = stats::snapshot_all();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].provider, "udp");
  ASSERT_EQ(snap[0].endpoints.size(), 2u);
  const stats::EndpointSnapshot& sa = snap[0].endpoints[0];
  EXPECT_EQ(sa.id, 1);
  EXPECT_TRUE(sa.reliable);
  EXPECT_GT(sa.engine.tx_pkts, 0u);
  EXPECT_GE(sa.engine.tx_bytes, sizeof sbuf);
  ASSERT_EQ(sa.peers.size(), 1u);
  EXPECT_EQ(sa.peers[0].user, to_b);
  EXPECT_GE(sa.peers[0].tx_bytes, sizeof sbuf);
  EXPECT_GE(snap[0].io_count, 2u);
  EXPECT_STREQ(snap[0].io[0].name, "rx_datagrams");

  std::string doc, err;
  ASSERT_TRUE(read_socket(path, doc));
  Json j;
  ASSERT_TRUE(parse_json(doc, j, err)) << err << "\n" << doc;
  EXPECT_EQ(j.get("version")->u64(), 1u);
  EXPECT_EQ(j.get("pid")->u64(), static_cast<uint64_t>(getpid()));
  const Json& d = j.get("domains")->items.at(0);
  EXPECT_EQ(d.get("provider")->text, "udp");
  // Both endpoints are in one domain: their traffic loops back above the socket (FI_LOCAL_COMM).
  EXPECT_GT(d.get("io")->get("loopback_pkts")->u64(), 0u);
  EXPECT_EQ(d.get("io")->get("tx_datagrams")->u64(), 0u);
  const Json& e = d.get("endpoints")->items.at(0);
  EXPECT_EQ(e.get("type")->text, "rdm");
  EXPECT_EQ(e.get("name")->text.rfind("fi_udp://127.0.0.1:", 0), 0u) << e.get("name")->text;
  EXPECT_GE(e.get("stats")->get("tx_bytes")->u64(), sizeof sbuf);
  EXPECT_EQ(e.get("stats")->keys.size(), sizeof(pollfab::transport::EngineStats) / sizeof(uint64_t));  // every EngineStats field
  const Json& p = e.get("peers")->items.at(0);
  EXPECT_EQ(p.get("fi_addr")->u64(), to_b);
  EXPECT_FALSE(p.get("dead")->boolean);
  EXPECT_GT(p.get("srtt_ns")->u64(), 0u);
  EXPECT_EQ(p.get("addr")->text.rfind("fi_udp://127.0.0.1:", 0), 0u);

  Fab::close_ep(a);
  Fab::close_ep(b);
  EXPECT_EQ(core_stats::socket_path(), path);  // until the domain closes
  f.close();
  EXPECT_EQ(core_stats::socket_path(), "");
  EXPECT_FALSE(exists(path));
}

// Seen through the retransmission counter: a progress round sends what posts queued before it
// reads its receive burst. An application under manual progress posts several sends (some
// leave at once, the last wait for its next call) and computes for a while; meanwhile the
// peer acknowledges those that left. The round that reads that ACK must not find the packets
// after it still queued: to loss detection they were sent at post time, long past their probe
// timeout, and it would resend them before their first copy left. (Two domains: two ports, so each side
// progresses only when its own CQ is read; no assist thread.)
TEST_F(StatsTest, AnAckNeverFindsTheNextPacketsStillQueued) {
  setenv("FI_UDP_TRANSPORT_ASSIST_INTERVAL_US", "0", 1);
  Fab f;
  f.open();
  fid_domain* dom_a = f.domain;
  fid_domain* dom_b = nullptr;
  ASSERT_EQ(fi_domain(f.fabric, f.info, &dom_b, nullptr), 0);
  Ep a, b;
  f.open_ep(a);
  f.domain = dom_b;
  f.open_ep(b);
  f.domain = dom_a;
  const fi_addr_t to_b = connect_to(a, b);
  connect_to(b, a);
  constexpr int kMsgs = 8;
  char rbuf[kMsgs][64] = {}, sbuf[kMsgs][64] = {};
  fi_cq_msg_entry e[kMsgs];
  // Reads both CQs in turn (each read is a round of its side) until a has want_a completions
  // and b want_b.
  auto drive = [&](int want_a, int want_b) {
    for (int spins = 0; (want_a > 0 || want_b > 0) && spins < 2'000'000; ++spins) {
      ssize_t r = fi_cq_read(a.cq, e, kMsgs);
      if (r > 0) want_a -= static_cast<int>(r);
      r = fi_cq_read(b.cq, e, kMsgs);
      if (r > 0) want_b -= static_cast<int>(r);
    }
    EXPECT_EQ(want_a, 0);
    EXPECT_EQ(want_b, 0);
  };
  // b alone for a while (its rounds receive, and send its ACKs once ack_delay_us has passed).
  auto b_for_ms = [&](int ms) {
    int n = 0;
    for (auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
         std::chrono::steady_clock::now() < until;) {
      const ssize_t r = fi_cq_read(b.cq, e, kMsgs);
      if (r > 0) n += static_cast<int>(r);
    }
    return n;
  };
  // Round trips of about 5 ms (a's send waits before b reads): the probe timeout becomes some
  // 10 ms, so a scheduling delay inside the round checked below cannot trigger a probe.
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(fi_recv(b.ep, rbuf[0], 64, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
    ASSERT_EQ(fi_send(a.ep, sbuf[0], 64, nullptr, to_b, nullptr), 0);
    EXPECT_EQ(fi_cq_read(a.cq, e, kMsgs), -FI_EAGAIN);  // a round of a's: the send has left
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(b_for_ms(1), 1);
    drive(1, 0);  // a's next round reads the ACK before its timers run
  }
  for (int i = 0; i < kMsgs; ++i)
    ASSERT_EQ(fi_recv(b.ep, rbuf[i], 64, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
  // The first leaves now, the second and third together and then the next three (each
  // bundle once it holds as many messages as are ahead of it: docs/performance.md item 72),
  // the last two at a's next round.
  for (int i = 0; i < kMsgs; ++i)
    ASSERT_EQ(fi_send(a.ep, sbuf[i], 64, nullptr, to_b, nullptr), 0);
  constexpr int kLeft = 6;
  EXPECT_EQ(b_for_ms(2), kLeft);  // those six, and b's ACK for them
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a computes
  auto retransmitted = [] {
    uint64_t n = 0;
    for (const stats::DomainSnapshot& d : stats::snapshot_all())
      for (const stats::EndpointSnapshot& ep : d.endpoints) n += ep.engine.retx_pkts;
    return n;
  };
  ASSERT_EQ(retransmitted(), 0u);
  // One round of a's: the queued sends leave, then the ACK is read. Completions may come.
  const ssize_t got = fi_cq_read(a.cq, e, kMsgs);
  EXPECT_TRUE(got == -FI_EAGAIN || got > 0) << got;
  EXPECT_EQ(retransmitted(), 0u);
  drive(kMsgs - (got > 0 ? static_cast<int>(got) : 0), kMsgs - kLeft);

  Fab::close_ep(a);
  Fab::close_ep(b);
  Fab::close_fid(&dom_b->fid);
  f.close();
  unsetenv("FI_UDP_TRANSPORT_ASSIST_INTERVAL_US");
}

TEST_F(StatsTest, DisabledByConfig) {
  setenv("FI_UDP_STATS_SOCKET", "false", 1);
  Fab f;
  f.open();
  Ep a;
  f.open_ep(a);
  EXPECT_EQ(core_stats::socket_path(), "");
  EXPECT_TRUE(stats::snapshot_all().empty());
  Fab::close_ep(a);
  f.close();
}

// Endpoints open and close while another thread reads the socket and takes snapshots.
TEST_F(StatsTest, EndpointsCloseDuringReads) {
  Fab f;
  f.open();
  Ep keep;
  f.open_ep(keep);
  const std::string path = core_stats::socket_path();
  ASSERT_NE(path, "");
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    while (!stop.load()) {
      std::string doc, err;
      Json j;
      if (read_socket(path, doc) && parse_json(doc, j, err)) reads.fetch_add(1);
      stats::snapshot_all();
    }
  });
  for (int i = 0; i < 200; ++i) {
    Ep e;
    f.open_ep(e);
    connect_to(e, keep);
    Fab::close_ep(e);
  }
  stop.store(true);
  reader.join();
  EXPECT_GT(reads.load(), 0);
  Fab::close_ep(keep);
  f.close();
  EXPECT_FALSE(exists(path));
}

// A process that exits without closing anything removes its socket (exit hook).
TEST_F(StatsTest, SocketRemovedAtExit) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    Fab f;
    f.open();
    Ep a;
    f.open_ep(a);
    std::string p = core_stats::socket_path();
    ssize_t w = write(fds[1], p.c_str(), p.size());
    (void)w;
    close(fds[1]);
    exit(p.empty() ? 1 : 0);  // nothing closed
  }
  close(fds[1]);
  char buf[256] = {};
  ssize_t n = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  int st = 0;
  ASSERT_EQ(waitpid(child, &st, 0), child);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  ASSERT_GT(n, 0);
  EXPECT_NE(std::string(buf).find(std::to_string(child) + ".sock"), std::string::npos) << buf;
  EXPECT_FALSE(exists(buf));
}

// Connection management is observable: with every packet duplicated (fault.dup = 1) the
// duplicates of a handshake are dropped and counted (cm_dropped), and a connect to an endpoint
// id nobody has on the server's port is answered with RESET (cm_resets_tx).
TEST_F(StatsTest, ConnectionPacketsDroppedAndResetsCounted) {
  setenv("FI_UDP_FAULT_DUP", "1.0", 1);
  fi_info* hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup("udp");
  hints->ep_attr->type = FI_EP_MSG;
  hints->caps = FI_MSG;
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(fi_version(), nullptr, nullptr, 0, hints, &info), 0);
  fi_freeinfo(hints);
  fid_fabric* fabric = nullptr;
  fid_eq* eq = nullptr;
  fid_pep* pep = nullptr;
  fid_domain *cdom = nullptr, *sdom = nullptr;
  Ep c, c2, srv;
  ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
  fi_eq_attr ea{};
  ASSERT_EQ(fi_eq_open(fabric, &ea, &eq, nullptr), 0);
  ASSERT_EQ(fi_passive_ep(fabric, info, &pep, nullptr), 0);
  ASSERT_EQ(fi_pep_bind(pep, &eq->fid, 0), 0);
  ASSERT_EQ(fi_listen(pep), 0);
  uint8_t name[24];
  size_t len = sizeof name;
  ASSERT_EQ(fi_getname(&pep->fid, name, &len), 0);
  ASSERT_EQ(fi_domain(fabric, info, &cdom, nullptr), 0);  // a port of its own: faults apply
  auto open_msg_ep = [&](fid_domain* d, fi_info* i, Ep& e) {
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_MSG;
    ASSERT_EQ(fi_cq_open(d, &ca, &e.cq, nullptr), 0);
    ASSERT_EQ(fi_endpoint(d, i, &e.ep, nullptr), 0);
    ASSERT_EQ(fi_ep_bind(e.ep, &e.cq->fid, FI_TRANSMIT | FI_RECV), 0);
    ASSERT_EQ(fi_ep_bind(e.ep, &eq->fid, 0), 0);
    ASSERT_EQ(fi_enable(e.ep), 0);
  };
  // Reads EQ events (progressing through the CQs) until one of `want` (or an error) arrives.
  auto wait_event = [&](uint32_t want, fi_eq_cm_entry& cm) -> int {
    for (int spins = 0; spins < 4'000'000; ++spins) {
      uint32_t ev = 0;
      ssize_t r = fi_eq_read(eq, &ev, &cm, sizeof cm, 0);
      if (r == -FI_EAVAIL) {
        fi_eq_err_entry err{};
        fi_eq_readerr(eq, &err, 0);
        return -err.err;
      }
      if (r > 0 && ev == want) return 0;
      fi_cq_msg_entry e;
      for (Ep* x : {&c, &c2, &srv})
        if (x->cq) fi_cq_read(x->cq, &e, 0);
    }
    return -FI_EAGAIN;
  };
  open_msg_ep(cdom, info, c);
  ASSERT_EQ(fi_connect(c.ep, name, nullptr, 0), 0);
  fi_eq_cm_entry cm{};
  ASSERT_EQ(wait_event(FI_CONNREQ, cm), 0);
  ASSERT_EQ(fi_domain(fabric, cm.info, &sdom, nullptr), 0);  // the listener's port
  open_msg_ep(sdom, cm.info, srv);
  fi_freeinfo(cm.info);
  ASSERT_EQ(fi_accept(srv.ep, nullptr, 0), 0);
  ASSERT_EQ(wait_event(FI_CONNECTED, cm), 0);
  ASSERT_EQ(wait_event(FI_CONNECTED, cm), 0);
  // Endpoint id 999 of the server's port: nobody.
  uint8_t nobody[24];
  std::memcpy(nobody, name, sizeof nobody);
  nobody[16] = 999 >> 8, nobody[17] = 999 & 0xff;
  open_msg_ep(cdom, info, c2);
  ASSERT_EQ(fi_connect(c2.ep, nobody, nullptr, 0), 0);
  EXPECT_EQ(wait_event(FI_CONNECTED, cm), -FI_ECONNREFUSED);

  uint64_t dropped = 0, resets = 0;
  for (const stats::DomainSnapshot& d : stats::snapshot_all()) {
    dropped += d.cm_dropped;
    resets += d.cm_resets_tx;
  }
  EXPECT_GT(dropped, 0u);  // the duplicates
  EXPECT_GE(resets, 1u);   // (duplicated too: one per copy of the request)
  std::string doc, err;
  ASSERT_TRUE(read_socket(core_stats::socket_path(), doc));
  Json j;
  ASSERT_TRUE(parse_json(doc, j, err)) << err;
  uint64_t json_resets = 0;
  for (const Json& d : j.get("domains")->items) {
    ASSERT_NE(d.get("cm_dropped"), nullptr);
    json_resets += d.get("cm_resets_tx")->u64();
  }
  EXPECT_GE(json_resets, 1u);

  for (Ep* x : {&c, &c2, &srv}) {
    if (x->ep) fi_close(&x->ep->fid);
    if (x->cq) fi_close(&x->cq->fid);
  }
  fi_close(&pep->fid);
  for (fid_domain* d : {cdom, sdom}) fi_close(&d->fid);
  fi_close(&eq->fid);
  fi_close(&fabric->fid);
  fi_freeinfo(info);
  unsetenv("FI_UDP_FAULT_DUP");
}

TEST(StatsFormat, CountersAndAddresses) {
  pollfab::transport::EngineStats s;
  s.tx_pkts = 3;
  s.credit_stalls = 7;
  stats::Counter c[stats::kMaxCounters];
  size_t n = stats::engine_counters(s, c);
  EXPECT_EQ(n, sizeof(pollfab::transport::EngineStats) / sizeof(uint64_t));
  std::string t = stats::format_counters(c, n);
  EXPECT_EQ(t.rfind("tx_pkts=3 tx_bytes=0 ", 0), 0u) << t;
  EXPECT_NE(t.find(" credit_stalls=7"), std::string::npos) << t;
  pollfab::providers::packet::Name udp;
  udp.kind = pollfab::providers::packet::NameKind::Udp;
  udp.ipv4 = 0x7f000001;
  udp.udp_port = 4000;
  udp.ep_id = 2;
  EXPECT_EQ(stats::address_str(udp), "fi_udp://127.0.0.1:4000/2");
  pollfab::providers::packet::Name dpdk = udp;
  dpdk.kind = pollfab::providers::packet::NameKind::Dpdk;
  dpdk.mac[5] = 0x0a;
  EXPECT_EQ(stats::address_str(dpdk), "fi_dpdk://00:00:00:00:00:0a/127.0.0.1:4000/2");
}

TEST(Json, Parse) {
  Json j;
  std::string err;
  ASSERT_TRUE(parse_json(R"( {"a":[1,-2.5e3,true,null],"b":"x\"\\\n\u00e9","c":18446744073709551615,"d":{}} )", j, err)) << err;
  EXPECT_EQ(j.get("a")->items.size(), 4u);
  EXPECT_EQ(j.get("a")->items[0].u64(), 1u);
  EXPECT_EQ(j.get("a")->items[1].u64(7), 7u);  // not an unsigned integer
  EXPECT_TRUE(j.get("a")->items[2].boolean);
  EXPECT_TRUE(j.get("a")->items[3].is_null());
  EXPECT_EQ(j.get("b")->text, "x\"\\\n\xc3\xa9");
  EXPECT_EQ(j.get("c")->u64(), 18446744073709551615ull);
  EXPECT_EQ(j.get("d")->kind, Json::Kind::Object);
  EXPECT_EQ(j.get("e"), nullptr);
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "tru", "\"abc", "1 2", "{\"a\":1,}"})
    EXPECT_FALSE(parse_json(bad, j, err)) << bad;
}

}  // namespace
