#include "lib/core/waiter.hpp"

#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <system_error>

namespace pollfab::core {

int Waiter::validate(fi_wait_obj kind) noexcept {
  switch (kind) {
    case FI_WAIT_NONE: case FI_WAIT_UNSPEC: case FI_WAIT_FD: case FI_WAIT_MUTEX_COND:
    case FI_WAIT_YIELD:
      return 0;
    default:
      return -FI_ENOSYS;
  }
}

Waiter::Waiter(fi_wait_obj kind) : kind_(kind) {
  if (kind == FI_WAIT_FD || kind == FI_WAIT_UNSPEC || kind == FI_WAIT_MUTEX_COND) {
    efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  }
}

Waiter::~Waiter() {
  if (epfd_ >= 0) ::close(epfd_);
  if (efd_ >= 0) ::close(efd_);
  pthread_cond_destroy(&cond_);
  pthread_mutex_destroy(&mutex_);
}

void Waiter::wake() noexcept {
  state_.fetch_and(~kAppArmed, std::memory_order_relaxed);
  if (!signaled_.exchange(true, std::memory_order_acq_rel)) {
    const uint64_t one = 1;
    ssize_t w = write(efd_, &one, sizeof one);
    (void)w;  // EAGAIN: the counter is already non-zero, which is all a sleeper needs
  }
  if (kind_ == FI_WAIT_MUTEX_COND) {
    pthread_mutex_lock(&mutex_);
    pthread_cond_broadcast(&cond_);
    pthread_mutex_unlock(&mutex_);
  }
}

void Waiter::drain() noexcept {
  if (efd_ < 0 || !signaled_.load(std::memory_order_acquire)) return;
  if (closing_.load(std::memory_order_acquire)) return;  // stays readable for the others
  // Read, then clear: a wake() between the two sees the flag still set and writes nothing,
  // and what it announced is already visible to the caller's next ready() check. Cleared
  // first, a wake() in between wrote a count this read then swallowed, leaving the flag set
  // with the descriptor empty: every later wake() wrote nothing, and a sleeper with no timer
  // (the automatic-progress thread) slept through ProgressThread::stop forever (a test run
  // hung in ~Link joining it).
  uint64_t v;
  ssize_t r = read(efd_, &v, sizeof v);
  (void)r;
  signaled_.store(false, std::memory_order_release);
}

void Waiter::arm_app() noexcept {
  drain();
  state_.fetch_or(kAppArmed, std::memory_order_seq_cst);
}

int Waiter::get_wait(void* arg, int src_fd) noexcept {
  if (!arg) return -FI_EINVAL;
  if (kind_ == FI_WAIT_MUTEX_COND) {
    auto* mc = static_cast<fi_mutex_cond*>(arg);
    mc->mutex = &mutex_;
    mc->cond = &cond_;
    return 0;
  }
  if (efd_ < 0) return -FI_ENODATA;
  std::lock_guard<std::mutex> g(getwait_mu_);
  if (epfd_ < 0) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) return -FI_ENOMEM;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = efd_;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, efd_, &ev) != 0) {
      ::close(ep);
      return -FI_EOTHER;
    }
    if (src_fd >= 0) {
      ev.data.fd = src_fd;
      if (epoll_ctl(ep, EPOLL_CTL_ADD, src_fd, &ev) != 0) {
        ::close(ep);
        return -FI_EOTHER;
      }
    }
    epfd_ = ep;
  }
  *static_cast<int*>(arg) = epfd_;
  return 0;
}

int Waiter::sleep(int fd, uint64_t until_ns) noexcept {
  pollfd p[2] = {{efd_, POLLIN, 0}, {fd, POLLIN, 0}};
  const uint64_t now = util::monotonic_ns();
  const uint64_t left = until_ns > now ? until_ns - now : 0;
  timespec ts{};
  timespec* tsp = nullptr;
  if (until_ns != UINT64_MAX) {
    ts.tv_sec = static_cast<time_t>(left / 1'000'000'000ull);
    ts.tv_nsec = static_cast<long>(left % 1'000'000'000ull);
    tsp = &ts;
  }
  int r = ppoll(p, fd >= 0 ? 2 : 1, tsp, nullptr);
  if (r < 0) return errno == EINTR ? -FI_EINTR : 0;
  return r > 0 ? 1 : 0;
}

void Waiter::close() noexcept {
  closing_.store(true, std::memory_order_release);
  if (efd_ >= 0) wake();
  while (inside_.load(std::memory_order_acquire)) sched_yield();
}

}  // namespace pollfab::core
