#include "lib/core/wait_set.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "lib/core/ops.hpp"
#include "lib/core/ops_fid.hpp"

namespace pollfab::core {
namespace {

int wait_slot(fid_wait* f, int timeout) {
  if (!f) return -FI_EINVAL;
  return self<WaitSet>(f)->wait(timeout);
}

fi_ops_wait g_ops_wait = {sizeof(fi_ops_wait), &wait_slot};

}  // namespace

int WaitSet::validate(const fi_wait_attr* attr) noexcept {
  if (!attr || attr->flags) return -FI_EINVAL;
  switch (attr->wait_obj) {
    case FI_WAIT_UNSPEC: case FI_WAIT_FD: case FI_WAIT_MUTEX_COND: case FI_WAIT_YIELD: return 0;
    case FI_WAIT_NONE: return -FI_EINVAL;
    default: return -FI_ENOSYS;
  }
}

WaitSet::WaitSet(Object* owner, const fi_wait_attr& attr, void* context)
    : owner_(owner), waiter_(attr.wait_obj) {
  src_epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (src_epfd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
  init_fid(box_, FI_CLASS_WAIT, context, &ops_fid<WaitSet>);
  box_.fid.ops = &g_ops_wait;
  owner_->ref();
}

int WaitSet::close() {
  if (refs()) return -FI_EBUSY;
  waiter_.close();  // a thread in fi_wait returns -FI_ECANCELED before we go
  ::close(src_epfd_);
  owner_->unref();
  delete this;
  return 0;
}

int WaitSet::control(int command, void* arg) {
  return waiter_.control(command, arg, src_epfd_, waiter_.kind());
}

void WaitSet::update_source_fds() noexcept {
  std::vector<int> now;
  each_source([&](Progressable* p) {
    const int fd = p->wait_fd();
    if (fd >= 0) now.push_back(fd);
  });
  for (int fd : fds_)
    if (std::find(now.begin(), now.end(), fd) == now.end())
      epoll_ctl(src_epfd_, EPOLL_CTL_DEL, fd, nullptr);
  for (int fd : now)
    if (std::find(fds_.begin(), fds_.end(), fd) == fds_.end()) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      epoll_ctl(src_epfd_, EPOLL_CTL_ADD, fd, &ev);
    }
  fds_.swap(now);
}

void WaitSet::on_event() noexcept {
  event_.store(true, std::memory_order_release);
  waiter_.notify();
}

bool WaitSet::ready() noexcept {
  if (event_.exchange(false, std::memory_order_acq_rel)) return true;
  std::lock_guard<std::mutex> g(mu_);
  for (WaitMember* m : members_)
    if (m->has_entries()) return true;
  return false;
}

int WaitSet::wait(int timeout_ms) noexcept {
  const uint64_t deadline = timeout_ms == 0 ? 0 : Waiter::deadline_after_ms(timeout_ms);
  const int r = waiter_.block(this, deadline, [&] {
    progress();
    return ready();
  });
  return r == -FI_EAGAIN ? -FI_ETIMEDOUT : r;
}

int WaitSet::trywait() noexcept {
  return waiter_.trywait(this, [&] { return ready(); });
}

void WaitSet::add(WaitMember* m) {
  std::lock_guard<std::mutex> g(mu_);
  members_.push_back(m);
  ref();
  update_source_fds();
}

void WaitSet::remove(WaitMember* m) noexcept {
  std::lock_guard<std::mutex> g(mu_);
  auto it = std::find(members_.begin(), members_.end(), m);
  if (it == members_.end()) return;
  members_.erase(it);
  unref();
  update_source_fds();
}

template <class F>
void WaitSet::each_source(F&& f) {
  for_each_source(members_, [](WaitMember* m) { return m->progress_source(); }, f);
}

void WaitSet::progress() noexcept {
  std::lock_guard<std::mutex> g(mu_);
  each_source([](Progressable* p) { p->progress(); });
}

int WaitSet::wait_fd() noexcept {
  std::lock_guard<std::mutex> g(mu_);
  return fds_.empty() ? -1 : src_epfd_;
}

bool WaitSet::prepare_wait() noexcept {
  std::lock_guard<std::mutex> g(mu_);
  bool ok = true;
  each_source([&](Progressable* p) { ok = ok && p->prepare_wait(); });
  return ok;
}

uint64_t WaitSet::next_deadline_ns() noexcept {
  std::lock_guard<std::mutex> g(mu_);
  uint64_t d = UINT64_MAX;
  each_source([&](Progressable* p) { d = std::min(d, p->next_deadline_ns()); });
  return d;
}

// ---- SetBinding ------------------------------------------------------------------------------

int SetBinding::validate(fi_wait_obj kind, fid_wait* set) noexcept {
  if (kind != FI_WAIT_SET) return Waiter::validate(kind);
  if (!set || set->fid.fclass != FI_CLASS_WAIT) return -FI_EINVAL;
  return 0;
}

fi_wait_obj SetBinding::own_kind(fi_wait_obj kind, fid_wait* set) noexcept {
  if (kind != FI_WAIT_SET) return kind;
  const fi_wait_obj k = Object::as<WaitSet>(set)->wait_kind();
  return k == FI_WAIT_YIELD ? FI_WAIT_YIELD : FI_WAIT_UNSPEC;  // own sleeps: an eventfd
}

void SetBinding::join(fi_wait_obj kind, fid_wait* set, WaitMember* m, Waiter& w) {
  if (kind != FI_WAIT_SET) return;
  set_ = Object::as<WaitSet>(set);
  set_->add(m);
  w.forward_to(set_);
}

void SetBinding::leave(WaitMember* m) noexcept {
  if (set_) set_->remove(m);
  set_ = nullptr;
}

}  // namespace pollfab::core
