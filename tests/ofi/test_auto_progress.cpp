// Automatic progress (fi_domain(3) FI_PROGRESS_AUTO; docs/progress.md) through the public API
// on the provider under test: fi_getinfo offers it after the manual infos, a server that
// posts its receives and then sleeps without calling the library still serves a client's
// FI_DELIVERY_COMPLETE sends (its port's thread does the work; the liveness assist is off, so
// nothing else could), its reader is woken by the thread's completions, and an idle thread
// sleeps instead of spinning.
#include <rdma/fi_eq.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "tests/ofi/ofi_fixture.hpp"

namespace pollfab::ofitest {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double process_cpu_ms() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 + ru.ru_stime.tv_sec * 1e3 +
         ru.ru_stime.tv_usec / 1e3;
}

InfoPtr info_with(fi_progress progress) {
  fi_info* hints = fi_allocinfo();
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG;
  hints->mode = FI_CONTEXT;
  hints->domain_attr->data_progress = progress;
  hints->fabric_attr->prov_name = strdup(test_provider());
  fi_info* info = nullptr;
  int rc = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  EXPECT_EQ(rc, 0) << fi_strerror(-rc);
  return InfoPtr(rc == 0 ? info : nullptr);
}

// One RDM endpoint on a domain (its own port) opened from info, CQ with wait_obj.
struct Node {
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_cq* cq = nullptr;
  fid_ep* ep = nullptr;
  std::vector<uint8_t> name = std::vector<uint8_t>(64);
  Node(fi_info* info, fi_wait_obj wait) {
    EXPECT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
    EXPECT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
    fi_av_attr aa{};
    aa.type = FI_AV_MAP;
    EXPECT_EQ(fi_av_open(domain, &aa, &av, nullptr), 0);
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_CONTEXT;
    ca.wait_obj = wait;
    ca.size = 4096;
    EXPECT_EQ(fi_cq_open(domain, &ca, &cq, nullptr), 0);
    EXPECT_EQ(fi_endpoint(domain, info, &ep, nullptr), 0);
    EXPECT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
    EXPECT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
    EXPECT_EQ(fi_enable(ep), 0);
    size_t len = name.size();
    EXPECT_EQ(fi_getname(&ep->fid, name.data(), &len), 0);
    name.resize(len);
  }
  ~Node() {
    for (fid* f : {&ep->fid, &cq->fid, &av->fid, &domain->fid, &fabric->fid}) fi_close(f);
  }
  fi_addr_t insert(const Node& peer) {
    fi_addr_t a = FI_ADDR_NOTAVAIL;
    EXPECT_EQ(fi_av_insert(av, peer.name.data(), 1, &a, 0, nullptr), 1);
    return a;
  }
};

TEST(OfiAutoProgress, GetinfoOffersAutoAfterManual) {
  fi_info* hints = fi_allocinfo();
  hints->ep_attr->type = FI_EP_RDM;
  hints->fabric_attr->prov_name = strdup(test_provider());
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info), 0);
  fi_freeinfo(hints);
  EXPECT_EQ(info->domain_attr->data_progress, FI_PROGRESS_MANUAL);  // the default comes first
  bool saw_auto = false;
  for (fi_info* p = info; p; p = p->next) {
    if (p->domain_attr->data_progress == FI_PROGRESS_AUTO) saw_auto = true;
    else EXPECT_FALSE(saw_auto) << "a manual info after an automatic one";
  }
  EXPECT_TRUE(saw_auto);
  fi_freeinfo(info);
  InfoPtr a = info_with(FI_PROGRESS_AUTO);
  ASSERT_TRUE(a);
  for (fi_info* p = a.get(); p; p = p->next)
    EXPECT_EQ(p->domain_attr->data_progress, FI_PROGRESS_AUTO);
}

TEST(OfiAutoProgress, ASleepingServerServesDeliveryCompleteSends) {
  const std::string prov = std::string(test_provider()) == "dpdk" ? "DPDK" : "UDP";
  const std::string assist = "FI_" + prov + "_TRANSPORT_ASSIST_INTERVAL_US";
  setenv(assist.c_str(), "0", 1);  // nothing but the progress thread may help the server
  {
    InfoPtr auto_info = info_with(FI_PROGRESS_AUTO);
    InfoPtr manual_info = info_with(FI_PROGRESS_MANUAL);
    ASSERT_TRUE(auto_info && manual_info);
    Node server(auto_info.get(), FI_WAIT_FD), client(manual_info.get(), FI_WAIT_NONE);
    const fi_addr_t to_server = client.insert(server);
    server.insert(client);
    constexpr int kMsgs = 1000;
    static char rbufs[kMsgs][16];
    static fi_context rctx[kMsgs];
    for (int i = 0; i < kMsgs; ++i)
      ASSERT_EQ(fi_recv(server.ep, rbufs[i], sizeof rbufs[i], nullptr, FI_ADDR_UNSPEC, &rctx[i]), 0);
    std::atomic<int> sent_done{0};
    std::atomic<bool> client_ok{false};
    const auto t0 = Clock::now();
    std::thread cl([&] {
      fi_context sctx[64];
      char msg[16] = "hello";
      int posted = 0, done = 0;
      const auto end = Clock::now() + 10s;
      while (done < kMsgs && Clock::now() < end) {
        if (posted < kMsgs && posted - done < 64) {
          iovec iov{msg, sizeof msg};
          fi_msg m{};
          m.msg_iov = &iov;
          m.iov_count = 1;
          m.addr = to_server;
          m.context = &sctx[posted % 64];
          if (fi_sendmsg(client.ep, &m, FI_DELIVERY_COMPLETE | FI_COMPLETION) == 0) ++posted;
        }
        fi_cq_entry e[16];
        ssize_t n = fi_cq_read(client.cq, e, 16);
        if (n > 0) done += int(n);
      }
      sent_done = done;
      client_ok = done == kMsgs && Clock::now() - t0 < 3s;
    });
    std::this_thread::sleep_for(3s);  // the server makes no call at all
    cl.join();
    EXPECT_EQ(sent_done.load(), kMsgs);
    EXPECT_TRUE(client_ok.load()) << "the client's sends did not complete during the sleep";
    // The completions are already queued: a blocking read returns them without progressing.
    int got = 0;
    fi_cq_entry e[64];
    while (got < kMsgs) {
      ssize_t n = fi_cq_sread(server.cq, e, 64, nullptr, 1000);
      ASSERT_GT(n, 0) << fi_strerror(int(-n));
      got += int(n);
    }
    EXPECT_EQ(got, kMsgs);
    // Idle now: the thread sleeps (under 5% of a CPU for the whole process over a second).
    std::this_thread::sleep_for(200ms);
    const double cpu0 = process_cpu_ms();
    std::this_thread::sleep_for(1s);
    EXPECT_LT(process_cpu_ms() - cpu0, 50.0);
  }
  unsetenv(assist.c_str());
}

}  // namespace
}  // namespace pollfab::ofitest
