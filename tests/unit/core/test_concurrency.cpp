// The lock-free and lock-passing pieces of the threading levels (docs/threading.md), each with
// the threads it is built for; the suite also runs these under ThreadSanitizer (scripts/tsan.sh).
//   SpscRing: one producer and one consumer, every element once and in order.
//   Cq: a producer (the provider's progress, serialized) and a consumer (an application thread
//     at FI_THREAD_DOMAIN/COMPLETION/ENDPOINT, no lock) with the overflow list in play.
//   Spinlock::pass: a holder lets a thread waiting in lock() through before it goes on.
//   MaybeLock's remote side: library threads (lock_remote, try_lock_remote) exclude the
//     application side's holders, with the asymmetric handshake (membarrier) or, where that is
//     missing (a ThreadSanitizer build), the Spinlock; the switch to the Spinlock while a
//     remote thread and an application thread run; a lock biased to one thread (enable_biased)
//     against other application threads, which it serves through the remote side until it
//     switches to the Spinlock.
#include <gtest/gtest.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "lib/core/cq.hpp"
#include "lib/util/spinlock.hpp"
#include "lib/util/spsc_ring.hpp"

using namespace pollfab;

namespace {

struct Owner final : core::Object {
  int close() override { return refs() ? -FI_EBUSY : 0; }
};

// A CONTEXT-format CQ of `size` entries without progress; readers lock iff consumers_may_race.
core::Cq* context_cq(Owner& owner, size_t size, bool consumers_may_race) {
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_CONTEXT;
  attr.size = size;
  return new core::Cq(&owner, nullptr, attr, FI_VERSION(1, 17), consumers_may_race, nullptr);
}

TEST(SpscRing, OneProducerOneConsumerEveryElementOnceInOrder) {
  util::SpscRing<uint64_t> ring(64);
  EXPECT_EQ(ring.capacity(), 64u);
  constexpr uint64_t kN = 200'000;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kN;) {
      if (ring.push(i)) ++i;
      else std::this_thread::yield();
    }
  });
  uint64_t next = 0;
  while (next < kN) {
    uint64_t* v = ring.front();
    if (!v) {
      std::this_thread::yield();
      continue;
    }
    ASSERT_EQ(*v, next);
    ring.pop();
    ++next;
  }
  producer.join();
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.front(), nullptr);
}

TEST(SpscRing, FullRefusesAndKeepsEverything) {
  util::SpscRing<int> ring(3);  // rounds up to 4
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(ring.push(i));
  EXPECT_FALSE(ring.push(9));
  EXPECT_EQ(ring.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    ASSERT_NE(ring.front(), nullptr);
    EXPECT_EQ(*ring.front(), i);
    ring.pop();
  }
  EXPECT_TRUE(ring.empty());
}

// A CQ of 4 entries: the producer outruns the consumer, so entries go through the overflow
// list and back; the consumer (no lock: consumers_may_race false) sees every one in order.
TEST(CqConcurrency, ProducerThreadAndLocklessReaderKeepOrderThroughOverflow) {
  Owner owner;
  core::Cq* cq = context_cq(owner, 4, false);
  constexpr uintptr_t kN = 100'000;
  std::thread producer([&] {
    for (uintptr_t i = 1; i <= kN; ++i) {
      cq->push(reinterpret_cast<void*>(i), FI_SEND, 0, nullptr, 0, 0, FI_ADDR_NOTAVAIL);
      if (i % 1000 == 0) std::this_thread::yield();  // let the reader drain the overflow
    }
  });
  uintptr_t next = 1;
  fi_cq_entry e[8];
  while (next <= kN) {
    ssize_t n = fi_cq_read(cq->fid(), e, 8);
    if (n == -FI_EAGAIN) continue;
    ASSERT_GT(n, 0);
    for (ssize_t i = 0; i < n; ++i) ASSERT_EQ(reinterpret_cast<uintptr_t>(e[i].op_context), next++);
  }
  producer.join();
  EXPECT_EQ(fi_cq_read(cq->fid(), e, 8), -FI_EAGAIN);
  EXPECT_EQ(cq->pending(), 0u);
  EXPECT_EQ(fi_close(&cq->fid()->fid), 0);
}

// FI_THREAD_SAFE: two readers race; between them they see every entry exactly once.
TEST(CqConcurrency, RacingReadersOfAThreadSafeCqSeeEachEntryOnce) {
  Owner owner;
  core::Cq* cq = context_cq(owner, 16, true);
  constexpr uintptr_t kN = 50'000;
  std::vector<std::atomic<uint8_t>> seen(kN + 1);
  std::atomic<uintptr_t> got{0};
  auto reader = [&] {
    fi_cq_entry e[4];
    while (got.load() < kN) {
      ssize_t n = fi_cq_read(cq->fid(), e, 4);
      if (n <= 0) continue;
      for (ssize_t i = 0; i < n; ++i) seen[reinterpret_cast<uintptr_t>(e[i].op_context)]++;
      got += n;
    }
  };
  std::thread r1(reader), r2(reader);
  for (uintptr_t i = 1; i <= kN; ++i)
    cq->push(reinterpret_cast<void*>(i), FI_SEND, 0, nullptr, 0, 0, FI_ADDR_NOTAVAIL);
  r1.join();
  r2.join();
  for (uintptr_t i = 1; i <= kN; ++i) ASSERT_EQ(seen[i].load(), 1) << i;
  EXPECT_EQ(fi_close(&cq->fid()->fid), 0);
}

// pass(): a thread spinning in lock() runs its critical section inside the holder's pass()
// call, and the holder holds the lock again when pass() returns. (pass() waits a few pauses
// for the spinner; a spinner the scheduler has just preempted misses it, so the scenario is
// tried until it happens, and every try must end in one of the two legal orders. With other
// tests compiling on both CPUs, 50 tries all missed once: the tries are bounded by a generous
// 20 s for liveness, which no result depends on.)
TEST(Spinlock, PassLetsASpinningWaiterInBetweenPiecesOfWork) {
  bool passed = false;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int attempt = 0; !passed && std::chrono::steady_clock::now() < give_up; ++attempt) {
    util::Spinlock lock;
    std::vector<int> order;  // guarded by lock
    lock.lock();
    std::thread waiter([&] {
      lock.lock();
      order.push_back(2);
      lock.unlock();
    });
    // Bounded: a waiter past its spinning phase (yielding) no longer counts.
    for (int i = 0; i < 100000 && !lock.has_waiters(); ++i) __builtin_ia32_pause();
    order.push_back(1);
    lock.pass();
    order.push_back(3);
    lock.unlock();
    waiter.join();
    passed = order == std::vector<int>{1, 2, 3};
    if (!passed) {
      EXPECT_EQ(order, (std::vector<int>{1, 3, 2}));
    }
    EXPECT_FALSE(lock.has_waiters());
  }
#if !defined(__SANITIZE_THREAD__)
  // Under ThreadSanitizer a spinner is too slow to take the lock within pass()'s few pauses;
  // that build checks the orders above for races, the normal build checks the hand-over.
  EXPECT_TRUE(passed);
#endif
  // Nobody waiting: pass() keeps the lock without letting go.
  util::Spinlock lock;
  lock.lock();
  lock.pass();
  EXPECT_FALSE(lock.try_lock());
  lock.unlock();
}

TEST(MaybeLock, OffIsFreeOnIsALock) {
  util::MaybeLock off;
  off.lock();
  EXPECT_TRUE(off.try_lock());  // disabled: nothing is held
  off.unlock();
  EXPECT_FALSE(off.has_waiters());
  util::MaybeLock on;
  on.enable(true);
  on.lock();
  EXPECT_FALSE(on.try_lock());
  on.unlock();
  EXPECT_TRUE(on.try_lock());
  on.unlock();
}

// Holders of a MaybeLock, application side and remote side, each checking it is alone inside.
struct Exclusion {
  util::MaybeLock lock;
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  long count = 0;  // plain: guarded by the lock
  std::atomic<long> calls{0};
  void critical() {
    calls.fetch_add(1, std::memory_order_relaxed);
    if (inside.fetch_add(1, std::memory_order_relaxed) != 0) overlaps.fetch_add(1);
    for (int i = 0; i < 20; ++i) ++count;
    inside.fetch_sub(1, std::memory_order_relaxed);
  }
};

TEST(MaybeLock, TheRemoteSideExcludesTheApplicationSide) {
  Exclusion x;
  x.lock.enable_remote();
  constexpr int kApp = 400000, kRemote = 2000;
  std::atomic<bool> app_done{false};
  std::atomic<int> remote_held{0};
  std::thread app([&] {
    for (int i = 0; i < kApp; ++i) {
      x.lock.lock();
      x.critical();
      if (i % 64 == 0) x.lock.pass();  // a progress round lets waiters in between packets
      x.lock.unlock();
    }
    app_done = true;
  });
  std::thread remote([&] {
    for (int i = 0; i < kRemote; ++i) {
      if (i % 2) {
        x.lock.lock_remote();
      } else if (!x.lock.try_lock_remote()) {
        continue;
      }
      x.critical();
      x.lock.pass();  // a remote holder lets nobody in
      x.critical();
      x.lock.unlock_remote();
      remote_held.fetch_add(1);
    }
  });
  app.join();
  remote.join();
  EXPECT_TRUE(app_done);
  EXPECT_EQ(x.overlaps.load(), 0);
  EXPECT_GE(remote_held.load(), kRemote / 2);  // every lock_remote got in
  EXPECT_EQ(x.count, 20L * (kApp + 2L * remote_held.load()));
  EXPECT_EQ(x.count, 20 * x.calls.load());
}

TEST(MaybeLock, TryLockRemoteBacksOffWhileTheApplicationHoldsIt) {
  util::MaybeLock lock;
  lock.enable_remote();
  lock.lock();
  bool got = true;
  std::thread([&] { got = lock.try_lock_remote(); }).join();
  EXPECT_FALSE(got);
  lock.unlock();
  std::thread([&] { got = lock.try_lock_remote(); }).join();
  ASSERT_TRUE(got);
  bool app_got = true;
  std::thread([&] { app_got = lock.try_lock(); }).join();
  EXPECT_FALSE(app_got);  // a remote thread holds it
  lock.unlock_remote();
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

// enable(true) while an application thread and a remote thread run (a second domain opened on
// a port in use): from then on the two application threads exclude each other too.
TEST(MaybeLock, TurningTheSpinlockOnWhileThreadsRunKeepsExclusion) {
  Exclusion x;
  x.lock.enable_remote();
  std::atomic<bool> stop{false};
  std::atomic<long> first_rounds{0};
  std::thread first([&] {
    while (!stop) {
      x.lock.lock();
      x.critical();
      x.lock.unlock();
      first_rounds.fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::thread remote([&] {
    while (!stop) {
      x.lock.lock_remote();
      x.critical();
      x.lock.unlock_remote();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  while (first_rounds.load() < 1000) std::this_thread::yield();
  x.lock.enable(true);
  std::thread second([&] {
    for (int i = 0; i < 200000; ++i) {
      x.lock.lock();
      x.critical();
      x.lock.unlock();
    }
  });
  second.join();
  stop = true;
  first.join();
  remote.join();
  EXPECT_EQ(x.overlaps.load(), 0);
  EXPECT_EQ(x.count, 20 * x.calls.load());  // no increment lost to a race
}

// FI_THREAD_SAFE from a single-threaded application: the lock is biased to the thread that
// opened the domain; another application thread (and a library thread) still exclude it, the
// other application thread through the remote side until kForeignFlip acquisitions turn the
// Spinlock on, after which everyone takes it.
TEST(MaybeLock, ABiasedLockStillExcludesOtherThreads) {
  Exclusion x;
  x.lock.enable_remote();
  x.lock.enable_biased();  // this thread is the favoured one
  constexpr int kOwner = 300000, kForeign = 3000;
  std::atomic<bool> stop{false};
  std::thread foreign([&] {
    for (int i = 0; i < kForeign; ++i) {
      if (i % 3 == 2) {
        if (!x.lock.try_lock()) continue;
      } else {
        x.lock.lock();
      }
      x.critical();
      x.lock.pass();
      x.lock.unlock();
    }
  });
  std::thread remote([&] {
    while (!stop) {
      x.lock.lock_remote();
      x.critical();
      x.lock.unlock_remote();
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  for (int i = 0; i < kOwner; ++i) {
    x.lock.lock();
    x.critical();
    if (i % 64 == 0) x.lock.pass();
    x.lock.unlock();
  }
  foreign.join();
  stop = true;
  remote.join();
  EXPECT_EQ(x.overlaps.load(), 0);
  EXPECT_EQ(x.count, 20 * x.calls.load());
}

}  // namespace
