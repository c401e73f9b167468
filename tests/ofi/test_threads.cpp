// Threading levels (fi_domain(3) "threading"): FI_THREAD_SAFE lets several threads use one
// endpoint, its CQ and its counters at once (Open MPI under MPI_THREAD_MULTIPLE);
// FI_THREAD_DOMAIN is what a single-threaded user gets. Two threads each send tagged messages
// to a receiver endpoint and reap their own completions from the shared CQ while a third
// receives; every message arrives exactly once, intact.
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "tests/ofi/ofi_fixture.hpp"

namespace pollfab::ofitest {
namespace {

constexpr uint64_t kCaps = FI_TAGGED | FI_MSG | FI_LOCAL_COMM | FI_REMOTE_COMM;

class OfiThreads : public ::testing::TestWithParam<fi_threading> {};

TEST_P(OfiThreads, ConcurrentSendersAndAReceiverShareEndpointsAndCqs) {
  Ofi f(kCaps, FI_AV_MAP, GetParam());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f.info()->domain_attr->threading, GetParam());
  Ep& s = f.add_ep();
  Ep& r = f.add_ep();
  const bool safe = GetParam() == FI_THREAD_SAFE;
  constexpr int kPerThread = 2000, kThreads = 2, kLen = 100;
  std::mutex app_lock;  // FI_THREAD_DOMAIN: the application serialises its calls
  auto call = [&](auto&& fn) {
    if (safe) return fn();
    std::lock_guard<std::mutex> g(app_lock);
    return fn();
  };
  std::atomic<int> sent{0};
  auto sender = [&](int id) {
    char buf[kLen];
    int posted = 0, done = 0;
    while (done < kPerThread) {
      if (posted < kPerThread) {
        std::memset(buf, 'a' + id, sizeof buf);
        std::memcpy(buf, &posted, sizeof posted);
        ssize_t rc = call([&] {
          return fi_tinject(s.ep, buf, sizeof buf, r.self, uint64_t(id) << 32 | uint32_t(posted));
        });
        if (rc == 0) {
          ++posted;
          ++done;  // injects make no completion
          sent.fetch_add(1);
          continue;
        }
        ASSERT_EQ(rc, -FI_EAGAIN);
      }
      fi_cq_tagged_entry e;
      call([&] { return fi_cq_read(s.cq, &e, 1); });  // drives progress
    }
  };
  std::vector<int> next(kThreads, 0);
  std::thread receiver([&] {
    std::vector<char> buf(kLen);
    for (int got = 0; got < kThreads * kPerThread;) {
      fi_context ctx;
      ssize_t rc = call([&] {
        return fi_trecv(r.ep, buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC, 0, ~0ull, &ctx);
      });
      if (rc == -FI_EAGAIN) continue;
      ASSERT_EQ(rc, 0);
      fi_cq_tagged_entry e;
      for (;;) {
        ssize_t n = call([&] { return fi_cq_read(r.cq, &e, 1); });
        if (n == 1) break;
        ASSERT_EQ(n, -FI_EAGAIN);
      }
      const int id = int(e.tag >> 32), seq = int(uint32_t(e.tag));
      ASSERT_LT(id, kThreads);
      EXPECT_EQ(seq, next[id]) << "thread " << id;  // per sender, in order (FI_ORDER_SAS)
      next[id] = seq + 1;
      int in_payload;
      std::memcpy(&in_payload, buf.data(), sizeof in_payload);
      EXPECT_EQ(in_payload, seq);
      EXPECT_EQ(buf[kLen - 1], 'a' + id);
      ++got;
    }
  });
  std::thread t0(sender, 0), t1(sender, 1);
  t0.join();
  t1.join();
  receiver.join();
  EXPECT_EQ(sent.load(), kThreads * kPerThread);
  EXPECT_EQ(next[0], kPerThread);
  EXPECT_EQ(next[1], kPerThread);
}

INSTANTIATE_TEST_SUITE_P(Level, OfiThreads, ::testing::Values(FI_THREAD_SAFE, FI_THREAD_DOMAIN),
                         [](const auto& i) { return i.param == FI_THREAD_SAFE ? "Safe" : "Domain"; });

// FI_THREAD_COMPLETION, FI_THREAD_ENDPOINT, FI_THREAD_FID: the application serializes each
// endpoint and each CQ, not the domain. Two threads each drive their own sender, receiver and
// CQs in one domain, with no lock of their own: the port under both (one Link) is shared, and
// its lock is what keeps it whole (these levels' CQ reads take none). Every message arrives
// once, in order, intact. (The suite also runs this under ThreadSanitizer.)
class OfiThreadLevels : public ::testing::TestWithParam<fi_threading> {};

TEST_P(OfiThreadLevels, ThreadsWithTheirOwnEndpointsAndCqsShareOnePort) {
  Ofi f(kCaps, FI_AV_MAP, GetParam());
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f.info()->domain_attr->threading, GetParam());
  constexpr int kThreads = 2, kPerThread = 1500, kLen = 200;
  std::vector<Ep*> tx, rx;
  for (int t = 0; t < kThreads; ++t) {
    tx.push_back(&f.add_ep());
    rx.push_back(&f.add_ep());
  }
  auto worker = [&](int id) {
    Ep& s = *tx[id];
    Ep& r = *rx[id];
    std::vector<char> in(kLen), out(kLen);
    for (int i = 0; i < kPerThread; ++i) {
      fi_context rctx, sctx;
      ASSERT_EQ(fi_trecv(r.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, uint64_t(i), 0, &rctx), 0);
      std::memset(out.data(), 'A' + id, out.size());
      std::memcpy(out.data(), &i, sizeof i);
      for (;;) {
        ssize_t rc = fi_tsend(s.ep, out.data(), out.size(), nullptr, r.self, uint64_t(i), &sctx);
        if (rc == 0) break;
        ASSERT_EQ(rc, -FI_EAGAIN);
        fi_cq_tagged_entry e;
        (void)fi_cq_read(s.cq, &e, 1);
      }
      bool sent = false, got = false;
      for (long spins = 0; !(sent && got); ++spins) {
        ASSERT_LT(spins, 50'000'000L) << "thread " << id << " message " << i;
        fi_cq_tagged_entry e;
        ssize_t n = fi_cq_read(s.cq, &e, 1);
        if (n == 1) {
          EXPECT_EQ(e.op_context, &sctx);
          sent = true;
        } else {
          ASSERT_EQ(n, -FI_EAGAIN);
        }
        n = fi_cq_read(r.cq, &e, 1);
        if (n == 1) {
          EXPECT_EQ(e.op_context, &rctx);
          EXPECT_EQ(e.tag, uint64_t(i));
          got = true;
        } else {
          ASSERT_EQ(n, -FI_EAGAIN);
        }
      }
      int seq;
      std::memcpy(&seq, in.data(), sizeof seq);
      ASSERT_EQ(seq, i);
      ASSERT_EQ(in[kLen - 1], 'A' + id);
    }
  };
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
}

INSTANTIATE_TEST_SUITE_P(Level, OfiThreadLevels,
                         ::testing::Values(FI_THREAD_COMPLETION, FI_THREAD_ENDPOINT, FI_THREAD_FID),
                         [](const auto& i) {
                           return i.param == FI_THREAD_COMPLETION ? "Completion"
                                  : i.param == FI_THREAD_ENDPOINT ? "Endpoint"
                                                                  : "Fid";
                         });

}  // namespace
}  // namespace pollfab::ofitest
