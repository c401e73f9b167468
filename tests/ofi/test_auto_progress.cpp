// Automatic progress (fi_domain(3) FI_PROGRESS_AUTO; docs/progress.md) through the public API
// on the provider under test: fi_getinfo offers it after the manual infos, a server that
// posts its receives and then sleeps without calling the library still serves a client's
// FI_DELIVERY_COMPLETE sends (its port's thread does the work; the liveness assist is off, so
// nothing else could), its reader is woken by the thread's completions, and an idle thread
// sleeps instead of spinning.
#include <sched.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/ofi/node_fixture.hpp"

namespace pollfab::ofitest {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

InfoPtr info_with(fi_progress progress) {
  return get_info(FI_MSG, FI_AV_MAP, FI_THREAD_DOMAIN, 0, FI_FORMAT_UNSPEC, progress);
}

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
    // Idle now: the thread sleeps, it does not poll (the whole process over a second uses under
    // a quarter of a CPU; a polling thread uses all of it; sleeping measured 3-6%, with the
    // host's timer costs, so the figure is not asserted).
    std::this_thread::sleep_for(200ms);
    const double cpu0 = cpu_ms(RUSAGE_SELF);
    std::this_thread::sleep_for(1s);
    EXPECT_LT(cpu_ms(RUSAGE_SELF) - cpu0, 250.0) << "the idle progress thread polls";
  }
  unsetenv(assist.c_str());
}

// The CPUs the port's automatic-progress thread may run on (Cpus_allowed_list of the thread
// named pollfab-progress), "" if there is none.
std::string progress_thread_cpus() {
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(t.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name != "pollfab-progres") continue;  // 15 characters shown
    std::ifstream status(t.path() / "status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("Cpus_allowed_list:", 0) == 0) return line.substr(line.find_last_of(" \t") + 1);
  }
  return "";
}

// progress.cores pins the thread; without it the thread runs on the CPUs near the port (dpdk:
// its NUMA node's, from hwloc; one node here, so all of them) or wherever the scheduler puts it.
TEST(OfiAutoProgress, TheThreadRunsWhereTheConfigSays) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (!CPU_ISSET(1, &allowed)) GTEST_SKIP() << "CPU 1 is not available to this process";
  const std::string var = std::string("FI_") + (std::string(test_provider()) == "dpdk" ? "DPDK" : "UDP") +
                          "_PROGRESS_CORES";
  setenv(var.c_str(), "1", 1);
  {
    InfoPtr a = info_with(FI_PROGRESS_AUTO);
    ASSERT_TRUE(a);
    Node n(a.get(), FI_WAIT_FD);
    EXPECT_EQ(progress_thread_cpus(), "1");
  }
  unsetenv(var.c_str());
  InfoPtr a = info_with(FI_PROGRESS_AUTO);
  ASSERT_TRUE(a);
  Node n(a.get(), FI_WAIT_FD);
  const std::string cpus = progress_thread_cpus();
  std::printf("%s: automatic-progress thread without progress.cores: CPUs %s\n", test_provider(),
              cpus.c_str());
  EXPECT_FALSE(cpus.empty());
  EXPECT_NE(cpus, "1");
}

}  // namespace
}  // namespace pollfab::ofitest
