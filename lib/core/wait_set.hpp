// WaitSet: a wait set (fi_poll(3) fi_wait_open, fi_wait, fi_close, fi_control FI_GETWAIT /
// FI_GETWAITOBJ, fi_trywait). CQs, counters and EQs opened with wait_obj FI_WAIT_SET and
// wait_set = this set report every event to it (core::Waiter::forward_to), so one wait covers
// them all:
//   fi_wait(set, timeout_ms) returns 0 once a bound object had an event since the last
//     fi_wait or fi_trywait on the set (or a bound CQ/EQ still holds entries), -FI_ETIMEDOUT
//     after timeout_ms (-1: never; 0: just check), -FI_EINTR if a signal handler ran,
//     -FI_ECANCELED if the set is closed meanwhile. Under FI_PROGRESS_MANUAL it drives the
//     progress of every domain whose objects are bound (a poll, then sleeps on all their wait
//     sources at once: an epoll set of their descriptors, kept as objects bind and unbind).
//   FI_GETWAIT gives the set's one native object (an epoll descriptor for FD/UNSPEC, holding
//     the set's eventfd and that epoll set; fi_mutex_cond for MUTEX_COND); fi_trywait on the
//     set (the bound objects need not be passed) says when the application may block on it.
// A bound object's own fi_cq_sread / fi_cntr_wait / fi_eq_sread still work (they sleep on the
// object's own eventfd); its FI_GETWAIT, FI_GETWAITOBJ and fi_trywait are the set's.
// Wait sets take FI_WAIT_UNSPEC, FD, MUTEX_COND and YIELD (FI_WAIT_NONE: -FI_EINVAL; others
// -FI_ENOSYS); flags must be 0. fi_close: -FI_EBUSY while objects are bound.
// Thread-safety: MT-safe; objects bind and unbind (open/close) while others wait.
#pragma once
#include <rdma/fi_domain.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "lib/core/fid.hpp"
#include "lib/core/progress.hpp"
#include "lib/core/waiter.hpp"

namespace pollfab::core {

// A CQ, counter or EQ as a wait set (or poll set) sees it.
class WaitMember {
 public:
  // Entries or errors are queued (CQ, EQ). Counters: false (their changes are events).
  virtual bool has_entries() noexcept = 0;
  // The progress its reads drive (null: none, e.g. automatic progress or an EQ).
  virtual Progressable* progress_source() noexcept = 0;

 protected:
  ~WaitMember() = default;
};

class WaitSet final : public Object, public WaitSink, private Progressable {
 public:
  // 0, -FI_EINVAL (null attr or flags, FI_WAIT_NONE), -FI_ENOSYS (FI_WAIT_SET, POLLFD).
  static int validate(const fi_wait_attr* attr) noexcept;
  // owner: the fabric, referenced while the set lives. Throws std::system_error (no eventfd).
  WaitSet(Object* owner, const fi_wait_attr& attr, void* context);
  fid_wait* fid() noexcept { return &box_.fid; }
  int close() override;
  int control(int command, void* arg);
  fi_wait_obj wait_kind() const noexcept { return waiter_.kind(); }

  int wait(int timeout_ms) noexcept;
  int trywait() noexcept;
  void on_event() noexcept override;

  // Binding (the object's open and close).
  void add(WaitMember* m);
  void remove(WaitMember* m) noexcept;

 private:
  void progress() noexcept override;
  int wait_fd() noexcept override;
  bool prepare_wait() noexcept override;
  uint64_t next_deadline_ns() noexcept override;
  bool ready() noexcept;  // takes the event flag
  // Makes src_epfd_ hold exactly the members' distinct wait descriptors (mu_ held).
  void update_source_fds() noexcept;
  // The distinct progress sources of the members (mu_ held).
  template <class F>
  void each_source(F&& f);

  FidBox<fid_wait> box_;
  Object* owner_;
  std::mutex mu_;
  std::vector<WaitMember*> members_;
  std::atomic<bool> event_{false};
  int src_epfd_ = -1;     // an epoll set of the member domains' wait descriptors
  std::vector<int> fds_;  // what it holds
  Waiter waiter_;
};

// How a CQ, counter or EQ joins the wait set its attr names (wait_obj FI_WAIT_SET).
class SetBinding {
 public:
  // A wait_obj with its wait_set: 0; -FI_EINVAL (FI_WAIT_SET with a null wait_set or an
  // object that is not a wait set); -FI_ENOSYS (a kind Waiter does not support).
  static int validate(fi_wait_obj kind, fid_wait* set) noexcept;
  // The kind of the object's own Waiter: the set's for FI_WAIT_SET, else kind.
  static fi_wait_obj own_kind(fi_wait_obj kind, fid_wait* set) noexcept;
  // No-op unless kind is FI_WAIT_SET: then m joins the set and w forwards its events there.
  void join(fi_wait_obj kind, fid_wait* set, WaitMember* m, Waiter& w);
  void leave(WaitMember* m) noexcept;
  WaitSet* set() const noexcept { return set_; }

 private:
  WaitSet* set_ = nullptr;
};

}  // namespace pollfab::core
