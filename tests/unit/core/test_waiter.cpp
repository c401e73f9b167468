// core::Waiter (lib/core/waiter.hpp) alone: the re-check after arming returns what it found,
// notify() wakes a sleeper, a deadline ends the wait, close() cancels a blocked caller, and
// FI_GETWAIT's descriptor polls readable once an armed application is notified.
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
