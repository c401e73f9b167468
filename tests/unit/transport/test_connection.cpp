// Connection management (transport/connection.hpp) under loss: random schedules of connects,
// accepts, rejects (with CM data), shutdowns and crashes, on the in-memory link with 10% drop,
// duplicate and reorder in both directions. Clients live on side a; the listener and the
// accepting endpoints on side b. A CM packet for an endpoint that does not exist (crashed) is
// answered with Reset, as the providers do.
// Properties, for every schedule:
//   - the listener reports each client's request exactly once (no lost or duplicated request);
//   - every client ends in exactly one of Connected, Refused, TimedOut, and each side reports
//     each event at most once;
//   - with both sides alive: a rejected client is Refused with the listener's CM data, an
//     accepted one is Connected with the server's CM data and the server is Connected too;
//   - a shutdown reaches a live peer as one Shutdown event;
//   - nothing is left connecting, accepting or disconnecting (no stuck connection).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transport/connection.hpp"
#include "transport/testing/manual_clock.hpp"
#include "transport/testing/mem_link.hpp"

namespace pollfab::transport {
namespace {

using testing::ManualClock;
using testing::MemLink;
using testing::MemLinkConfig;

struct Events final : CmSink {
  std::vector<CmEvent> ev;
  std::string data;  // of the last event
  void on_cm_event(CmEvent e, const uint8_t* d, uint16_t len) noexcept override {
    ev.push_back(e);
    data.assign(reinterpret_cast<const char*>(d), len);
  }
  int count(CmEvent e) const { return int(std::count(ev.begin(), ev.end(), e)); }
};

struct Plan {
  bool accept;
  bool client_crash;     // the client vanishes at crash_ms
  bool server_crash;     // the accepting endpoint vanishes at crash_ms
  int crash_ms;
  int shutdown;          // 0 none, 1 client, 2 server, 3 both (at 2 s)
};

constexpr uint16_t kListenerId = 100;
constexpr uint64_t kMs = 1'000'000;

struct World final : CmListenerSink {
  ManualClock clock;
  std::unique_ptr<MemLink> link;
  CmConfig cfg;
  std::unique_ptr<CmListener> listener;
  std::vector<Plan> plans;
  std::vector<std::unique_ptr<CmEndpoint>> clients;  // ep id 1 + i (null: crashed)
  std::vector<Events> client_ev;
  std::map<uint16_t, std::unique_ptr<CmEndpoint>> servers;  // ep id 200 + i
  std::vector<Events> server_ev;
  std::vector<int> requests;  // per client: on_request calls
  std::vector<bool> server_crashed;  // its accepting endpoint existed and vanished
  std::vector<uint64_t> request_id;

  explicit World(std::vector<Plan> p, uint64_t seed) : plans(std::move(p)) {
    MemLinkConfig lc;
    lc.fault_ab = {0.1, 0.1, 0.1, 0.0, seed};
    lc.fault_ba = {0.1, 0.1, 0.1, 0.0, seed + 1};
    link = std::make_unique<MemLink>(lc, clock);
    cfg.resend_ns = 20 * kMs;
    cfg.timeout_ns = 1000 * kMs;
    listener = std::make_unique<CmListener>(link->b(), clock, *this, cfg, kListenerId, 77);
    const size_t n = plans.size();
    client_ev.resize(n);
    server_ev.resize(n);
    requests.assign(n, 0);
    server_crashed.assign(n, false);
    request_id.assign(n, 0);
    for (size_t i = 0; i < n; ++i)
      clients.push_back(std::make_unique<CmEndpoint>(link->a(), clock, client_ev[i], cfg,
                                                     uint16_t(1 + i), uint32_t(1000 + i)));
  }

  void on_request(uint64_t id, const PeerAddr& client, uint32_t conn_id, const uint8_t* data,
                  uint16_t len) noexcept override {
    const size_t i = client.ep_id - 1u;
    ++requests[i];
    request_id[i] = id;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(data), len), "hello " + std::to_string(i));
    if (!plans[i].accept) {
      const std::string no = "no " + std::to_string(i);
      EXPECT_EQ(listener->reject(id, reinterpret_cast<const uint8_t*>(no.data()), uint16_t(no.size())),
                Status::Ok);
      return;
    }
    EXPECT_EQ(listener->accepted(id), Status::Ok);
    const uint16_t sid = uint16_t(200 + i);
    auto s = std::make_unique<CmEndpoint>(link->b(), clock, server_ev[i], cfg, sid, 2000 + i);
    const std::string yes = "yes " + std::to_string(i);
    EXPECT_EQ(s->accept(client, conn_id, reinterpret_cast<const uint8_t*>(yes.data()),
                        uint16_t(yes.size())),
              Status::Ok);
    servers[sid] = std::move(s);
  }

  void deliver(PacketIo& io, bool side_b) {
    PacketBuf bufs[32];
    uint16_t n = io.rx_burst(bufs, 32);
    for (uint16_t k = 0; k < n; ++k) {
      PacketBuf& p = bufs[k];
      wire::Header h;
      if (wire::verify(p.data, p.len) && wire::decode(p.data, p.len, h) == wire::DecodeError::None &&
          wire::is_cm(h.type)) {
        const uint8_t* payload = p.data + wire::kHeaderBytes;
        CmEndpoint* target = nullptr;
        if (side_b && h.dst_ep == kListenerId) {
          listener->on_packet(p, h, payload);
        } else {
          if (side_b) {
            auto it = servers.find(h.dst_ep);
            if (it != servers.end()) target = it->second.get();
          } else if (h.dst_ep >= 1 && h.dst_ep <= clients.size()) {
            target = clients[h.dst_ep - 1u].get();
          }
          if (target) {
            target->on_packet(p, h, payload);
          } else if (h.type != wire::Type::Reset) {  // nobody here: tell the sender
            Route r;
            io.resolve(p.src, r);
            send_cm(io, r, h.dst_ep, 0, PeerAddr{p.src, h.src_ep}, h.src_epoch, wire::Type::Reset,
                    decode_cm(payload).conn_id, 0, nullptr, 0, true);
          }
        }
      }
      io.free(&p, 1);
    }
  }

  void run() {
    for (size_t i = 0; i < clients.size(); ++i) {
      const std::string hello = "hello " + std::to_string(i);
      ASSERT_EQ(clients[i]->connect(PeerAddr{link->host(1), kListenerId}, uint32_t(0x1000 + i),
                                    reinterpret_cast<const uint8_t*>(hello.data()),
                                    uint16_t(hello.size())),
                Status::Ok);
    }
    for (int ms = 0; ms < 5000; ++ms) {
      for (int step = 0; step < 4; ++step) {
        clock.advance(kMs / 4);
        deliver(link->a(), false);
        deliver(link->b(), true);
      }
      for (size_t i = 0; i < clients.size(); ++i) {
        const Plan& p = plans[i];
        const uint16_t sid = uint16_t(200 + i);
        if (ms == p.crash_ms) {
          if (p.client_crash) clients[i].reset();
          if (p.server_crash && servers.erase(sid)) server_crashed[i] = true;
        }
        if (ms == 2000) {
          if ((p.shutdown & 1) && clients[i]) clients[i]->shutdown();
          if ((p.shutdown & 2) && servers.count(sid)) servers[sid]->shutdown();
        }
        if (clients[i]) clients[i]->progress();
      }
      for (auto& [id, s] : servers) s->progress();
      listener->progress();
    }
  }
};

using State = CmEndpoint::State;

bool settled(State s) {
  return s != State::Connecting && s != State::Accepting && s != State::Disconnecting;
}

RC_GTEST_PROP(Connection, SetupAndTeardownUnderLossNeverLoseDuplicateOrStick, ()) {
  const auto n = *rc::gen::inRange<size_t>(1, 6);
  std::vector<Plan> plans;
  for (size_t i = 0; i < n; ++i) {
    Plan p;
    p.accept = *rc::gen::arbitrary<bool>();
    p.client_crash = *rc::gen::weightedElement<bool>({{1, true}, {4, false}});
    p.server_crash = *rc::gen::weightedElement<bool>({{1, true}, {4, false}});
    p.crash_ms = *rc::gen::inRange(0, 2500);
    p.shutdown = *rc::gen::inRange(0, 4);
    plans.push_back(p);
  }
  World w(plans, *rc::gen::inRange<uint64_t>(1, 1u << 30));
  w.run();
  // The distribution rapidcheck prints: the first client's events (to see every path is taken).
  std::string first;
  for (CmEvent e : w.client_ev[0].ev) first += "CRTS"[int(e)];
  RC_TAG(first, plans[0].accept);
  for (size_t i = 0; i < n; ++i) {
    const Plan& p = plans[i];
    const Events& ce = w.client_ev[i];
    const Events& se = w.server_ev[i];
    const bool client_alive = !p.client_crash;
    const bool server_alive = !w.server_crashed[i];
    RC_ASSERT(w.requests[i] <= 1);
    for (CmEvent e : {CmEvent::Connected, CmEvent::Refused, CmEvent::TimedOut, CmEvent::Shutdown}) {
      RC_ASSERT(ce.count(e) <= 1);
      RC_ASSERT(se.count(e) <= 1);
    }
    if (client_alive) {
      const int outcomes = ce.count(CmEvent::Connected) + ce.count(CmEvent::Refused) +
                           ce.count(CmEvent::TimedOut);
      RC_ASSERT(outcomes == 1);
      RC_ASSERT(settled(w.clients[i]->state()));
    }
    if (w.servers.count(uint16_t(200 + i))) RC_ASSERT(settled(w.servers[uint16_t(200 + i)]->state()));
    if (!client_alive || !server_alive) continue;
    RC_ASSERT(w.requests[i] == 1);
    if (!p.accept) {
      RC_ASSERT(ce.count(CmEvent::Refused) == 1);
      RC_ASSERT(ce.ev.back() == CmEvent::Refused);
      RC_ASSERT(ce.data == "no " + std::to_string(i));
      continue;
    }
    RC_ASSERT(ce.ev.front() == CmEvent::Connected);
    RC_ASSERT(se.ev.front() == CmEvent::Connected);
    if (p.shutdown == 1) RC_ASSERT(se.count(CmEvent::Shutdown) == 1);
    if (p.shutdown == 2) RC_ASSERT(ce.count(CmEvent::Shutdown) == 1);
  }
}

TEST(Connection, RejectCarriesCmDataAndAnswersEveryDuplicate) {
  std::vector<Plan> plans{{false, false, false, 99999, 0}};
  World w(plans, 7);
  w.run();
  ASSERT_EQ(w.client_ev[0].ev.size(), 1u);
  EXPECT_EQ(w.client_ev[0].ev[0], CmEvent::Refused);
  EXPECT_EQ(w.client_ev[0].data, "no 0");
  EXPECT_EQ(w.clients[0]->state(), State::Refused);
  EXPECT_EQ(w.requests[0], 1);
}

TEST(Connection, ArgumentsAndStatesAreChecked) {
  ManualClock clock;
  MemLink link(MemLinkConfig{}, clock);
  Events ev;
  CmEndpoint e(link.a(), clock, ev, CmConfig{}, 1, 1);
  uint8_t big[wire::kMaxCmData + 1] = {};
  const PeerAddr to{link.host(1), 9};
  EXPECT_EQ(e.shutdown(), Status::NotConnected);
  EXPECT_EQ(e.connect(to, 0, nullptr, 0), Status::Invalid);
  EXPECT_EQ(e.connect(to, 5, big, sizeof big), Status::TooBig);
  EXPECT_EQ(e.connect(to, 5, big, wire::kMaxCmData), Status::Ok);
  EXPECT_EQ(e.connect(to, 6, nullptr, 0), Status::Busy);  // a second fi_connect
  EXPECT_EQ(e.accept(to, 6, nullptr, 0), Status::Busy);
  EXPECT_EQ(e.shutdown(), Status::NotConnected);
  // Nobody answers: it times out and says so once.
  for (int i = 0; i < 7000 && e.state() == State::Connecting; ++i) {
    clock.advance(kMs);
    e.progress();
  }
  EXPECT_EQ(e.state(), State::TimedOut);
  ASSERT_EQ(ev.ev.size(), 1u);
  EXPECT_EQ(ev.ev[0], CmEvent::TimedOut);
}

TEST(Connection, ListenerChecksRequests) {
  ManualClock clock;
  MemLink link(MemLinkConfig{}, clock);
  struct : CmListenerSink {
    void on_request(uint64_t, const PeerAddr&, uint32_t, const uint8_t*, uint16_t) noexcept override {}
  } sink;
  CmListener l(link.b(), clock, sink, CmConfig{}, 100, 1);
  EXPECT_EQ(l.reject(42, nullptr, 0), Status::Invalid);  // a stale or unknown handle
  EXPECT_EQ(l.accepted(42), Status::Invalid);
  PeerAddr c;
  uint32_t id;
  EXPECT_FALSE(l.request(42, c, id));
}

TEST(Connection, WireRejectsMalformedCmPackets) {
  uint8_t p[wire::kHeaderBytes + wire::kCmExtBytes + 4] = {};
  wire::Header h;
  h.type = wire::Type::ConnReq;
  h.payload_len = wire::kCmExtBytes + 4;
  wire::encode(h, p);
  util::store_be16(p + wire::kHeaderBytes + 6, 4);
  wire::Header out;
  EXPECT_EQ(wire::decode(p, sizeof p, out), wire::DecodeError::None);
  util::store_be16(p + wire::kHeaderBytes + 6, 5);  // data_len disagrees with payload_len
  EXPECT_EQ(wire::decode(p, sizeof p, out), wire::DecodeError::BadLength);
  util::store_be16(p + wire::kHeaderBytes + 6, 4);
  h.flags = wire::kFirst;  // CM packets carry no flags
  wire::encode(h, p);
  EXPECT_EQ(wire::decode(p, sizeof p, out), wire::DecodeError::BadFlags);
}

}  // namespace
}  // namespace pollfab::transport
