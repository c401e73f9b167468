// core::Waiter (lib/core/waiter.hpp) alone: the re-check after arming returns what it found,
// notify() wakes a sleeper, a deadline ends the wait, close() cancels a blocked caller, and
// FI_GETWAIT's descriptor polls readable once an armed application is notified, and no
// notify() is lost to one that lands while the sleeper drains the previous one.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <thread>

#include "lib/core/waiter.hpp"
#include "lib/util/clock.hpp"

namespace pollfab::core {
namespace {

uint64_t in_ms(uint64_t ms) { return util::monotonic_ns() + ms * 1'000'000; }

TEST(Waiter, TheRecheckAfterArmingIsTheResult) {
  // No poll budget: call 1 is the check, call 2 the re-check after arming. What call 2 found
  // (say, a CQ entry it already read) must end the wait, not be lost by another round.
  Waiter w(FI_WAIT_FD);
  int calls = 0;
  EXPECT_EQ(w.block(nullptr, in_ms(200), [&] { return ++calls == 2; }, 0), 0);
  EXPECT_EQ(calls, 2);
}

TEST(Waiter, NotifyWakesASleeperAndDeadlinesEndTheWait) {
  Waiter w(FI_WAIT_FD);
  std::atomic<bool> flag{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    flag = true;
    w.notify();
  });
  const uint64_t t0 = util::monotonic_ns();
  EXPECT_EQ(w.block(nullptr, in_ms(5000), [&] { return flag.load(); }), 0);
  EXPECT_LT(util::monotonic_ns() - t0, 2'000'000'000ull);
  t.join();
  EXPECT_EQ(w.block(nullptr, in_ms(30), [] { return false; }), -FI_EAGAIN);
}

// A notifier that keeps notifying while the sleeper wakes and drains: every round's last
// notify() must still wake it. (drain() once cleared its flag before reading the descriptor: a
// notify() in between left the flag set and the descriptor empty, and every later notify()
// was swallowed; the automatic-progress thread then slept through its stop.)
TEST(Waiter, NoNotifyIsLostWhileTheSleeperDrains) {
  Waiter w(FI_WAIT_FD);
  std::atomic<int> done{0}, seen{0};
  std::atomic<bool> failed{false};
  constexpr int kRounds = 3000;
  std::thread sleeper([&] {
    for (int r = 1; r <= kRounds && !failed; ++r) {
      // Only the deadline (a liveness bound, not a timing: a wake takes microseconds) ends a
      // wait whose notify() was lost; the wait then returns at or after it.
      const uint64_t deadline = in_ms(5000);
      if (w.block(nullptr, deadline, [&] { return done.load() >= r; }, 0) != 0 ||
          util::monotonic_ns() >= deadline)
        failed = true;
      seen = r;
    }
  });
  for (int r = 1; r <= kRounds && !failed; ++r) {
    for (int i = 0; i < 20; ++i) w.notify();  // lands in the sleeper's drains
    done = r;
    w.notify();
    while (seen.load() < r && !failed) w.notify();
  }
  sleeper.join();
  EXPECT_FALSE(failed.load()) << "a sleeper missed the notify() of round " << seen.load() + 1;
}

TEST(Waiter, CloseCancelsABlockedCaller) {
  auto* w = new Waiter(FI_WAIT_MUTEX_COND);
  std::atomic<int> r{1};
  std::atomic<bool> in{false};
  std::thread t([&] {
    in = true;
    r = w->block(nullptr, UINT64_MAX, [] { return false; });
  });
  while (!in) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  w->close();  // returns once the caller has left
  delete w;
  t.join();
  EXPECT_EQ(r.load(), -FI_ECANCELED);
}

TEST(Waiter, GetwaitFdPollsReadableOnceArmedAndNotified) {
  Waiter w(FI_WAIT_FD);
  int fd = -1;
  ASSERT_EQ(w.get_wait(&fd, -1), 0);
  pollfd p{fd, POLLIN, 0};
  w.notify();  // nobody armed: no signal
  EXPECT_EQ(poll(&p, 1, 0), 0);
  w.arm_app();
  w.notify();
  EXPECT_EQ(poll(&p, 1, 1000), 1);
  w.arm_app();  // drains the old signal
  EXPECT_EQ(poll(&p, 1, 0), 0);
  Waiter none(FI_WAIT_NONE);
  EXPECT_FALSE(none.native());
  EXPECT_EQ(none.get_wait(&fd, -1), -FI_ENODATA);
  EXPECT_EQ(Waiter::validate(FI_WAIT_SET), -FI_ENOSYS);
}

}  // namespace
}  // namespace pollfab::core
