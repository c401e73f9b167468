#include "lib/core/progress_thread.hpp"

#include <pthread.h>
#include <signal.h>

namespace pollfab::core {

void ProgressThread::start_assist(std::string name, std::chrono::microseconds interval,
                                  std::function<bool()> run) {
  if (interval.count() <= 0 || thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = false;
  }
  // The thread must not take signals meant for the application.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    thread_ = std::thread([this, name = std::move(name), interval, run = std::move(run)]() mutable {
      assist_main(std::move(name), interval, std::move(run));
    });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void ProgressThread::stop() noexcept {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ProgressThread::assist_main(std::string name, std::chrono::microseconds interval,
                                 std::function<bool()> run) noexcept {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  uint64_t seen = calls_.load(std::memory_order_relaxed);
  std::unique_lock<std::mutex> lk(mu_);
  while (!cv_.wait_for(lk, interval, [this] { return stop_; })) {
    uint64_t calls = calls_.load(std::memory_order_relaxed);
    if (calls != seen) {  // the application is driving progress: stay out of its way
      seen = calls;
      continue;
    }
    if (run()) runs_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace pollfab::core
