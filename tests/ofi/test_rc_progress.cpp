// verbs RC, progress and resources (fi_domain(3), fi_cq(3), fi_poll(3)): FD waits on the
// completion channel, device resources given back at close, automatic progress with two
// threads on one FI_THREAD_SAFE endpoint, and FI_THREAD_DOMAIN. The application:
// tests/ofi/rc_fixture.hpp.
#include <poll.h>

#include <map>
#include <thread>

#include "tests/ofi/rc_fixture.hpp"
#include "tests/ofi/rdma_resources.hpp"

namespace pollfab::ofitest {
namespace {

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

}  // namespace
}  // namespace pollfab::ofitest
