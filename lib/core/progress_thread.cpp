#include "lib/core/progress_thread.hpp"

#include <algorithm>

#include <pthread.h>
#include <sched.h>
#include <signal.h>

namespace pollfab::core {

void ProgressThread::launch(std::function<void()> body) {
  // The thread must not take signals meant for the application.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    thread_ = std::thread(std::move(body));
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void ProgressThread::start_assist(std::string name, std::chrono::microseconds interval,
                                  std::function<bool()> run) {
  if (interval.count() <= 0 || thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = false;
  }
  auto_ = false;
  launch([this, name = std::move(name), interval, run = std::move(run)]() mutable {
    assist_main(std::move(name), interval, std::move(run));
  });
}

void ProgressThread::start_auto(std::string name, Progressable& src, uint64_t idle_ns,
                                std::vector<int> cpus, std::function<bool()> poll) {
  if (thread_.joinable()) return;
  stop_auto_.store(false);
  auto_ = true;
  launch([this, &src, idle_ns, poll = std::move(poll)]() mutable {
    auto_main(src, idle_ns, std::move(poll));
  });
  // Name and place it before returning: the thread is where the caller asked once fi_domain
  // (or fi_enable) returns.
  pthread_setname_np(thread_.native_handle(), name.substr(0, 15).c_str());
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  if (CPU_COUNT(&set))  // refused (a CPU outside the process's cpuset): stays unpinned
    pthread_setaffinity_np(thread_.native_handle(), sizeof set, &set);
}

void ProgressThread::stop() noexcept {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  stop_auto_.store(true);
  cv_.notify_all();
  waiter_.notify();
  thread_.join();
  auto_ = false;
}

void ProgressThread::assist_main(std::string name, std::chrono::microseconds interval,
                                 std::function<bool()> run) noexcept {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  uint64_t seen = calls_.load(std::memory_order_relaxed);
  // A sleeper armed and no progress call since: it waits for this thread (sleeper_armed).
  auto sleeper = [this] {
    return armed_.load(std::memory_order_acquire) == calls_.load(std::memory_order_relaxed);
  };
  std::unique_lock<std::mutex> lk(mu_);
  // While every check finds a call since the one before, the checks space out (doubling, up
  // to kAssistBackoff intervals): each wake-up lands on a CPU the application is likely
  // busy-polling, and on the 2-CPU CI machine the 1 kHz checks cost a 64-byte stream 5% of
  // its rate. The first check that finds no call runs progress and returns to the interval.
  uint32_t backoff = 1;
  for (;;) {
    const auto wait = sleeper() ? std::min(interval, kSleeperInterval) : interval * backoff;
    const uint64_t armed = armed_.load(std::memory_order_relaxed);
    // Wakes early on stop, or on a new sleeper (to take the short interval at once).
    if (cv_.wait_for(lk, wait, [&] { return stop_ || armed_.load(std::memory_order_relaxed) != armed; })) {
      if (stop_) return;
      backoff = 1;  // a new sleeper: its short interval from now on
      continue;
    }
    checks_.fetch_add(1, std::memory_order_relaxed);
    const uint64_t calls = calls_.load(std::memory_order_relaxed);
    if (calls != seen && !sleeper()) {  // the application is driving progress: stay out of its way
      seen = calls;
      backoff = std::min(backoff * 2, kAssistBackoff);
      continue;
    }
    seen = calls;
    backoff = 1;
    if (run()) runs_.fetch_add(1, std::memory_order_relaxed);
  }
}

void ProgressThread::auto_main(Progressable& src, uint64_t idle_ns,
                               std::function<bool()> poll) noexcept {
  while (!stop_auto_.load(std::memory_order_acquire)) {
    waiter_.block(&src, UINT64_MAX, [&] {
      if (stop_auto_.load(std::memory_order_acquire)) return true;
      const bool did = poll();
      if (did) runs_.fetch_add(1, std::memory_order_relaxed);
      return did;
    }, idle_ns);
  }
}

}  // namespace pollfab::core
