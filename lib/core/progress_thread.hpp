// ProgressThread: a library thread that drives a domain's progress for the application
// (fi_domain(3) "Progress"). One machinery for every provider and every mode:
//   Assist (FI_PROGRESS_MANUAL, today's only mode): under manual progress a peer waits for our
//     ACKs and retransmissions only while the application calls in. When the application is
//     blocked elsewhere (its own out-of-band socket, a barrier, a sleep) the thread notices that
//     no progress call was noted for a whole interval and runs progress itself, so no peer is
//     left waiting on us. While the application keeps calling, it stays out of the way.
//   Auto (FI_PROGRESS_AUTO): the thread is the progress engine. It runs poll() again and again
//     while poll() reports work (packets moved, sends in flight), keeps polling for idle_ns
//     after the last work, then sleeps (core::Waiter) on the source's wait descriptor until
//     input, the source's next timer, or wake() (the application posted work). Optionally
//     pinned to one CPU.
// The callbacks run on this thread and must take the domain's lock themselves (assist: a
// try-lock, since a busy domain means the application is making progress; it returns whether
// it ran).
// Thread-safety: note_progress() and runs() from any thread; start/stop from one owner thread.
// The thread blocks every signal (the application's handlers stay on its own threads).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lib/core/progress.hpp"
#include "lib/core/waiter.hpp"

namespace pollfab::core {

class ProgressThread {
 public:
  ProgressThread() = default;
  ~ProgressThread() { stop(); }
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  // Assist mode: every interval without a noted progress call, runs run() (which returns true
  // if it did progress, false if it backed off). While each check finds a call since the last,
  // the next waits twice as long, up to kAssistBackoff intervals, so a stall that follows a
  // busy period is noticed within kAssistBackoff + 1 intervals (within 2 once idle). name: the thread's name (15 chars shown).
  // No-op if already running or interval is zero. Throws std::system_error if no thread.
  void start_assist(std::string name, std::chrono::microseconds interval, std::function<bool()> run);
  // Auto mode: poll() returns true if it did work; src is the wait source to sleep on (must
  // outlive the thread); cpus, if not empty, is the thread's CPU affinity (ignored if the
  // system refuses it). No-op if already running. Throws std::system_error if no thread.
  void start_auto(std::string name, Progressable& src, uint64_t idle_ns, std::vector<int> cpus,
                  std::function<bool()> poll);
  // Auto mode: ends the thread's sleep now (new work; one fence and a load while it is awake).
  void wake() noexcept { waiter_.notify(); }
  bool auto_mode() const noexcept { return auto_; }
  // Stops and joins the thread (no-op if not running).
  void stop() noexcept;
  // Assist mode: the application is about to sleep on a wait object (fi_trywait said 0) of a
  // source without a descriptor, so only this thread's progress can wake it: until the
  // application's next progress call the thread polls every kSleeperInterval instead.
  static constexpr std::chrono::microseconds kSleeperInterval{500};
  static constexpr uint32_t kAssistBackoff = 8;
  void sleeper_armed() noexcept {
    armed_.store(calls_.load(std::memory_order_relaxed), std::memory_order_release);
    cv_.notify_all();
  }
  // The application made a progress call (one relaxed atomic store on the data path).
  void note_progress() noexcept {
    calls_.store(calls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // Times run() returned true.
  uint64_t runs() const noexcept { return runs_.load(std::memory_order_relaxed); }
  // Assist mode: times the thread woke to look for progress calls (run or not).
  uint64_t checks() const noexcept { return checks_.load(std::memory_order_relaxed); }
  bool running() const noexcept { return thread_.joinable(); }
  // True when called on this object's thread.
  bool on_this_thread() const noexcept { return thread_.get_id() == std::this_thread::get_id(); }

 private:
  void assist_main(std::string name, std::chrono::microseconds interval,
                   std::function<bool()> run) noexcept;
  void auto_main(Progressable& src, uint64_t idle_ns, std::function<bool()> poll) noexcept;
  // Starts body on a thread that blocks every signal.
  void launch(std::function<void()> body);

  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> runs_{0};
  std::atomic<uint64_t> checks_{0};
  std::atomic<uint64_t> armed_{UINT64_MAX};  // calls_ when a sleeper armed (sleeper_armed)
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> stop_auto_{false};
  bool auto_ = false;
  Waiter waiter_{FI_WAIT_FD};  // auto mode's sleep
};

}  // namespace pollfab::core
