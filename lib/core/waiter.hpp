// Waiter: the wait object of one CQ, counter or EQ (wait_obj of fi_cq_attr, fi_cntr_attr and
// fi_eq_attr; fi_poll(3) fi_trywait; fi_control(3) FI_GETWAIT and FI_GETWAITOBJ), and the one
// place a blocking library call sleeps (fi_cq_sread, fi_cntr_wait, fi_eq_sread).
//
// Kinds:
//   FI_WAIT_NONE        the object has no wait object: blocking calls poll (with sched_yield),
//                       fi_trywait and FI_GETWAIT are -FI_EINVAL / -FI_ENODATA;
//   FI_WAIT_YIELD       blocking calls poll with sched_yield (no native object);
//   FI_WAIT_FD, FI_WAIT_UNSPEC  an eventfd; FI_GETWAIT gives an epoll descriptor holding it and
//                       the domain's wait source (the UDP socket, ...), which the application
//                       may put in its own epoll/poll/select after fi_trywait;
//   FI_WAIT_MUTEX_COND  as FD inside the library; FI_GETWAIT gives a struct fi_mutex_cond whose
//                       condition is broadcast (under its mutex) when an event is queued while
//                       the application is armed by fi_trywait.
// A blocking call (block()) polls for a short budget (kPollBudgetNs), then sleeps on the
// eventfd and the source's descriptor until an event, the source's next timer, or its deadline;
// a source whose prepare_wait() says yes without a descriptor has another thread watching it
// (the liveness assist or automatic thread) whose completions notify the sleeper; a source that
// cannot arm its wake-up is napped on, starting at kNapMinNs and doubling up to kNapMaxNs. It
// never spins past the budget.
//
// No lost wake-ups: a waiter arms (one seq_cst read-modify-write), re-checks its condition, then
// sleeps; a producer queues its event, then notify()s (a seq_cst fence and one load). Either
// the waiter sees the event at its re-check, or the producer sees it armed and signals.
// notify() costs the fence and a load while nobody is armed (the hot path; objects with
// FI_WAIT_NONE have no Waiter and pay nothing).
//
// Lifetime: close() (the owner's fi_close) wakes every sleeper, which returns -FI_ECANCELED,
// and waits until they have left before the owner is deleted.
// Thread-safety: MT-safe.
#pragma once
#include <rdma/fabric.h>
#include <rdma/fi_eq.h>
#include <pthread.h>
#include <rdma/fi_errno.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "lib/core/progress.hpp"
#include "lib/util/clock.hpp"

namespace pollfab::core {

// Where a Waiter also reports its events: the wait set its owner is bound to (wait_set.hpp).
class WaitSink {
 public:
  virtual void on_event() noexcept = 0;

 protected:
  ~WaitSink() = default;
};

class Waiter {
 public:
  static constexpr uint64_t kPollBudgetNs = 20'000;
  static constexpr uint64_t kNapMinNs = 50'000;
  // A sleeper on a source that cannot arm its wake-up naps at most this long. (A timed wake
  // costs 12-20 us of CPU in a VM: 500 us naps are about 3% of a CPU.)
  static constexpr uint64_t kNapMaxNs = 500'000;

  // 0 if this kind is supported, -FI_ENOSYS otherwise (FI_WAIT_SET without a set: the caller's
  // business; FI_WAIT_POLLFD).
  static int validate(fi_wait_obj kind) noexcept;
  // Throws std::system_error if the eventfd cannot be created.
  explicit Waiter(fi_wait_obj kind);
  ~Waiter();
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  fi_wait_obj kind() const noexcept { return kind_; }
  // True for the kinds with a native object an application can block on (FD, MUTEX_COND).
  bool native() const noexcept { return efd_ >= 0; }

  // The deadline of a blocking call's timeout (ms; negative: none -> UINT64_MAX).
  static uint64_t deadline_after_ms(int timeout_ms) noexcept {
    return timeout_ms < 0 ? UINT64_MAX : util::monotonic_ns() + uint64_t(timeout_ms) * 1'000'000;
  }

  // fi_trywait for the owner: -FI_EINVAL without a native object; else arms the application's
  // wait, then -FI_EAGAIN if pending() (the owner's queue, checked after arming) or src cannot
  // arm its wake-up; 0 if the application may block.
  template <class Pending>
  int trywait(Progressable* src, Pending&& pending) noexcept {
    if (!native()) return -FI_EINVAL;
    arm_app();
    if (pending()) return -FI_EAGAIN;
    if (src && !src->prepare_wait()) return -FI_EAGAIN;
    return 0;
  }

  // Every notify() also goes to sink (the owner's wait set; null: none). Set before the owner
  // is shared with producers.
  void forward_to(WaitSink* sink) noexcept { sink_ = sink; }

  // Producer side: an event was queued (call after queueing it).
  void notify() noexcept {
    if (sink_) sink_->on_event();
    if (efd_ < 0) return;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (state_.load(std::memory_order_relaxed)) wake();
  }

  // fi_trywait's half: drains a past signal and arms the application's wait; the caller then
  // checks its queue (and the source's prepare_wait) and says -FI_EAGAIN if anything is there.
  void arm_app() noexcept;
  // fi_control FI_GETWAIT: FD/UNSPEC: *(int*)arg = an epoll descriptor with the eventfd and
  // src_fd (if >= 0), made on first use and closed with the Waiter; MUTEX_COND:
  // *(fi_mutex_cond*)arg. Returns 0, -FI_EINVAL (arg null), -FI_ENODATA (no native object),
  // -FI_ENOMEM / -FI_EOTHER (epoll failed).
  int get_wait(void* arg, int src_fd) noexcept;
  // The owner's fi_control for the wait commands: FI_GETWAIT (get_wait) and FI_GETWAITOBJ
  // (*(fi_wait_obj*)arg = shown: the kind the application asked for); -FI_ENOSYS for others.
  int control(int command, void* arg, int src_fd, fi_wait_obj shown) noexcept {
    switch (command) {
      case FI_GETWAIT: return get_wait(arg, src_fd);
      case FI_GETWAITOBJ:
        if (!arg) return -FI_EINVAL;
        *static_cast<fi_wait_obj*>(arg) = shown;
        return 0;
      default: return -FI_ENOSYS;
    }
  }

  // Blocks until ready() is true (0), deadline_ns passes (-FI_EAGAIN; UINT64_MAX: never), a
  // signal interrupts the sleep (-FI_EINTR), or close() runs (-FI_ECANCELED). ready() is
  // called repeatedly and must drive progress itself where the caller's progress is manual
  // (a CQ read does). src: the domain's wait source to sleep on (null: only notify() wakes).
  // budget_ns: how long to poll before the first sleep (kPollBudgetNs by default).
  template <class Ready>
  int block(Progressable* src, uint64_t deadline_ns, Ready&& ready,
            uint64_t budget_ns = kPollBudgetNs) noexcept {
    inside_.fetch_add(1, std::memory_order_acq_rel);
    int r = block_inner(src, deadline_ns, ready, budget_ns);
    inside_.fetch_sub(1, std::memory_order_acq_rel);
    return r;
  }

  // The owner is closing: wakes every blocked caller (-FI_ECANCELED) and waits until they left.
  void close() noexcept;

 private:
  static constexpr uint32_t kAppArmed = 1, kSleeper = 2;
  template <class Ready>
  int block_inner(Progressable* src, uint64_t deadline_ns, Ready& ready,
                  uint64_t budget_ns) noexcept {
    const uint64_t start = util::monotonic_ns();
    uint64_t nap = kNapMinNs;
    for (;;) {
      if (ready()) return 0;
      if (closing_.load(std::memory_order_acquire)) return -FI_ECANCELED;
      const uint64_t now = util::monotonic_ns();
      if (now >= deadline_ns) return -FI_EAGAIN;
      if (efd_ < 0 || now - start < budget_ns) {
        if (efd_ < 0 || now - start >= budget_ns / 2) sched_yield();
        continue;
      }
      state_.fetch_add(kSleeper, std::memory_order_seq_cst);
      if (ready()) {  // the re-check after arming: what it read is the caller's result
        state_.fetch_sub(kSleeper, std::memory_order_seq_cst);
        return 0;
      }
      // The source is asked last, after the re-check's progress: prepare_wait() may arm
      // another thread to watch it until our next progress call.
      uint64_t until = deadline_ns;
      int fd = -1;
      bool napping = false;  // without a source only notify() can bring news: just sleep
      if (src) {
        fd = src->wait_fd();
        napping = !src->prepare_wait();  // true without a descriptor: another thread wakes us
        until = std::min(until, src->next_deadline_ns());
      }
      const uint64_t armed_at = util::monotonic_ns();
      if (napping) until = std::min(until, armed_at + nap);
      if (until <= armed_at) {  // timer work is due: progress again
        state_.fetch_sub(kSleeper, std::memory_order_seq_cst);
        continue;
      }
      int r = sleep(fd, until);
      state_.fetch_sub(kSleeper, std::memory_order_seq_cst);
      drain();
      if (r == -FI_EINTR) return r;
      nap = r == 1 ? kNapMinNs : std::min(nap * 2, kNapMaxNs);  // woken: events are flowing
    }
  }
  void wake() noexcept;
  void drain() noexcept;
  // Sleeps on the eventfd and fd until until_ns: 1 (woken), 0 (timed out), -FI_EINTR.
  int sleep(int fd, uint64_t until_ns) noexcept;

  fi_wait_obj kind_;
  WaitSink* sink_ = nullptr;
  int efd_ = -1;   // FD, UNSPEC, MUTEX_COND
  int epfd_ = -1;  // FI_GETWAIT (FD, UNSPEC)
  std::mutex getwait_mu_;
  std::atomic<uint32_t> state_{0};  // kAppArmed | sleepers * kSleeper
  std::atomic<bool> signaled_{false};
  std::atomic<bool> closing_{false};
  std::atomic<uint32_t> inside_{0};  // callers in block()
  pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;  // MUTEX_COND (fi_mutex_cond)
  pthread_cond_t cond_ = PTHREAD_COND_INITIALIZER;
};

}  // namespace pollfab::core
