// Many threads on one FI_THREAD_SAFE endpoint under faults (issue 11, acceptance 5): two nodes,
// each a domain with automatic progress (its port's thread) and one endpoint whose CQ all its
// threads share; on each node 4 application threads post sends to the other node, post
// receives and read the shared CQ (a completion is reaped by whichever thread reads it), while
// the fault layer drops, duplicates and reorders packets. Every message must arrive exactly
// once, intact, and every send and receive complete exactly once.
#include <rdma/fi_eq.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/ofi/ofi_fixture.hpp"

namespace pollfab::ofitest {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kThreads = 4, kPerThread = 500, kLen = 64;

// Sets the fault configuration for the test's domains (opened afterwards), undone at the end.
struct Faults {
  std::vector<std::string> vars;
  Faults() {
    const std::string p = std::string("FI_") + (std::string(test_provider()) == "dpdk" ? "DPDK" : "UDP");
    for (auto [k, v] : {std::pair{"_FAULT_DROP", "0.01"}, {"_FAULT_DUP", "0.005"}, {"_FAULT_REORDER", "0.01"}}) {
      vars.push_back(p + k);
      setenv(vars.back().c_str(), v, 1);
    }
  }
  ~Faults() {
    for (auto& v : vars) unsetenv(v.c_str());
  }
};

struct Op {
  fi_context ctx;  // first: the CQ entry's op_context is &ctx
  bool is_send;
  char buf[kLen];
  std::atomic<int> completions{0};
};

// Payload: sender thread and sequence, repeated so a torn message shows.
void fill(char* b, int thread, int seq) {
  for (int i = 0; i < kLen; i += 8) {
    std::memcpy(b + i, &thread, 4);
    std::memcpy(b + i + 4, &seq, 4);
  }
}
bool decode(const char* b, int& thread, int& seq) {
  std::memcpy(&thread, b, 4);
  std::memcpy(&seq, b + 4, 4);
  for (int i = 8; i < kLen; i += 8)
    if (std::memcmp(b + i, b, 8) != 0) return false;
  return thread >= 0 && thread < kThreads && seq >= 0 && seq < kPerThread;
}

struct Node {
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_cq* cq = nullptr;
  fid_ep* ep = nullptr;
  std::vector<uint8_t> name = std::vector<uint8_t>(64);
  fi_addr_t peer = FI_ADDR_NOTAVAIL;
  std::vector<std::unique_ptr<Op>> sends, recvs;
  std::atomic<int> sends_done{0}, recvs_done{0}, bad{0};
  std::unique_ptr<std::atomic<int>[]> got = std::make_unique<std::atomic<int>[]>(kThreads * kPerThread);

  explicit Node(fi_info* info) {
    EXPECT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
    EXPECT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
    fi_av_attr aa{};
    aa.type = FI_AV_MAP;
    EXPECT_EQ(fi_av_open(domain, &aa, &av, nullptr), 0);
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_CONTEXT;
    ca.size = 2 * kThreads * kPerThread;
    EXPECT_EQ(fi_cq_open(domain, &ca, &cq, nullptr), 0);
    EXPECT_EQ(fi_endpoint(domain, info, &ep, nullptr), 0);
    EXPECT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
    EXPECT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
    EXPECT_EQ(fi_enable(ep), 0);
    size_t len = name.size();
    EXPECT_EQ(fi_getname(&ep->fid, name.data(), &len), 0);
    name.resize(len);
    for (int i = 0; i < kThreads * kPerThread; ++i) {
      sends.push_back(std::make_unique<Op>());
      sends.back()->is_send = true;
      recvs.push_back(std::make_unique<Op>());
      recvs.back()->is_send = false;
    }
  }
  ~Node() {
    for (fid* f : {&ep->fid, &cq->fid, &av->fid, &domain->fid, &fabric->fid}) fi_close(f);
  }

  // Reads up to 16 completions (any thread's); false on an error completion.
  bool reap() {
    fi_cq_entry e[16];
    const ssize_t n = fi_cq_read(cq, e, 16);
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      fi_cq_readerr(cq, &err, 0);
      ADD_FAILURE() << "error completion: " << fi_strerror(err.err);
      return false;
    }
    for (ssize_t i = 0; i < n; ++i) {
      Op* op = reinterpret_cast<Op*>(e[i].op_context);
      if (op->completions.fetch_add(1) != 0) bad.fetch_add(1);  // completed twice
      if (op->is_send) {
        sends_done.fetch_add(1);
        continue;
      }
      int t, s;
      if (!decode(op->buf, t, s)) {
        bad.fetch_add(1);
      } else if (got[t * kPerThread + s].fetch_add(1) != 0) {
        bad.fetch_add(1);  // delivered twice
      }
      recvs_done.fetch_add(1);
    }
    return true;
  }

  void app_thread(int t) {
    // Every loop is bounded: a stall fails the test (counts short), never hangs it.
    const auto end = Clock::now() + std::chrono::seconds(120);
    for (int i = 0; i < kPerThread; ++i) {
      Op* r = recvs[t * kPerThread + i].get();
      ssize_t rc;
      while ((rc = fi_recv(ep, r->buf, kLen, nullptr, FI_ADDR_UNSPEC, &r->ctx)) == -FI_EAGAIN)
        if (!reap() || Clock::now() >= end) return;
      ASSERT_EQ(rc, 0);
      Op* s = sends[t * kPerThread + i].get();
      fill(s->buf, t, i);
      while ((rc = fi_send(ep, s->buf, kLen, nullptr, peer, &s->ctx)) == -FI_EAGAIN)
        if (!reap() || Clock::now() >= end) return;
      ASSERT_EQ(rc, 0);
      if (i % 8 == 0 && !reap()) return;
    }
    while ((sends_done.load() < kThreads * kPerThread || recvs_done.load() < kThreads * kPerThread) &&
           Clock::now() < end)
      if (!reap()) return;
  }
};

TEST(OfiThreadStress, FourThreadsOnOneThreadSafeEndpointUnderFaultsDeliverExactlyOnce) {
  Faults faults;
  InfoPtr info = get_info(FI_MSG, FI_AV_MAP, FI_THREAD_SAFE, 0, FI_FORMAT_UNSPEC, FI_PROGRESS_AUTO);
  ASSERT_TRUE(info);
  ASSERT_EQ(info->domain_attr->threading, FI_THREAD_SAFE);
  ASSERT_EQ(info->domain_attr->data_progress, FI_PROGRESS_AUTO);
  Node a(info.get()), b(info.get());
  ASSERT_EQ(fi_av_insert(a.av, b.name.data(), 1, &a.peer, 0, nullptr), 1);
  ASSERT_EQ(fi_av_insert(b.av, a.name.data(), 1, &b.peer, 0, nullptr), 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&a, t] { a.app_thread(t); });
    threads.emplace_back([&b, t] { b.app_thread(t); });
  }
  for (auto& th : threads) th.join();
  for (Node* n : {&a, &b}) {
    EXPECT_EQ(n->sends_done.load(), kThreads * kPerThread);
    EXPECT_EQ(n->recvs_done.load(), kThreads * kPerThread);
    EXPECT_EQ(n->bad.load(), 0);
    int missing = 0;
    for (int i = 0; i < kThreads * kPerThread; ++i) missing += n->got[i].load() != 1;
    EXPECT_EQ(missing, 0);
  }
}

}  // namespace
}  // namespace pollfab::ofitest
