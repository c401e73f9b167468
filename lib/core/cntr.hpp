// Cntr: the provider-neutral counter (fi_cntr(3)): read, readerr, add, set, adderr, seterr,
// wait with a timeout, its wait object (lib/core/waiter.hpp: fi_control FI_GETWAIT /
// FI_GETWAITOBJ, fi_trywait). Providers bump it with inc()/inc_err() as operations complete.
// Thread-safety: MT-safe (atomics). Under manual progress read/wait drive the domain.
#pragma once
#include <atomic>

#include "lib/core/fid.hpp"
#include "lib/core/progress.hpp"
#include "lib/core/wait_set.hpp"
#include "lib/core/waiter.hpp"

namespace pollfab::core {

class Cntr final : public Object, public WaitMember {
 public:
  static int validate(const fi_cntr_attr* attr) noexcept;
  Cntr(Object* owner, Progressable* progress, const fi_cntr_attr* attr, void* context);
  fid_cntr* fid() noexcept { return &box_.fid; }
  int close() override;
  Object* owner() const noexcept { return owner_; }

  // n operations completed (a burst: one increment, one wake-up).
  void inc(uint64_t n = 1) noexcept {
    value_.fetch_add(n, std::memory_order_release);
    waiter_.notify();
  }
  void inc_err() noexcept {
    err_.fetch_add(1, std::memory_order_release);
    waiter_.notify();
  }
  uint64_t read() noexcept;
  uint64_t readerr() noexcept;
  // add and set also move the checkpoint fi_poll compares against (fi_poll(3)).
  int add(uint64_t v) noexcept;
  int set(uint64_t v) noexcept;
  int adderr(uint64_t v) noexcept { err_.fetch_add(v); waiter_.notify(); return 0; }
  int seterr(uint64_t v) noexcept { err_.store(v); waiter_.notify(); return 0; }
  // fi_cntr_wait: blocks (lib/core/waiter.hpp) until value >= threshold (0), an error count
  // change (-FI_EAVAIL) or timeout ms (-FI_ETIMEDOUT; -1 waits forever); -FI_EINTR (a signal
  // handler ran), -FI_ECANCELED (the counter is closing).
  int wait(uint64_t threshold, int timeout_ms) noexcept;
  // fi_control FI_GETWAIT / FI_GETWAITOBJ; others -FI_ENOSYS.
  int control(int command, void* arg);
  // fi_trywait: 0 (block on the FI_GETWAIT object: any change wakes it), -FI_EAGAIN (the
  // domain's wait source could not arm), -FI_EINVAL (no native wait object).
  int trywait() noexcept;
  fi_wait_obj wait_kind() const noexcept { return set_.set() ? set_.set()->wait_kind() : waiter_.kind(); }
  // fi_poll: true if the value or error count changed since the last take_change, fi_cntr_add
  // or fi_cntr_set (and makes the current values the checkpoint).
  bool take_change() noexcept;
  // As a wait set's or poll set's member (a change is an event, never an entry).
  bool has_entries() noexcept override { return false; }
  Progressable* progress_source() noexcept override { return progress_; }

 private:
  FidBox<fid_cntr> box_;
  Object* owner_;
  Progressable* progress_;
  std::atomic<uint64_t> value_{0}, err_{0};
  std::atomic<uint64_t> seen_value_{0}, seen_err_{0};  // fi_poll's checkpoint
  Waiter waiter_;
  SetBinding set_;  // wait_obj FI_WAIT_SET
};

}  // namespace pollfab::core
