// Cntr: the provider-neutral counter (fi_cntr(3)): read, readerr, add, set, adderr, seterr,
// wait with a timeout. Providers bump it with inc()/inc_err() as operations complete.
// Thread-safety: MT-safe (atomics). Under manual progress read/wait drive the domain.
#pragma once
#include <atomic>

#include "lib/core/fid.hpp"
#include "lib/core/progress.hpp"

namespace pollfab::core {

class Cntr final : public Object {
 public:
  static int validate(const fi_cntr_attr* attr) noexcept;
  Cntr(Object* owner, Progressable* progress, const fi_cntr_attr* attr, void* context);
  fid_cntr* fid() noexcept { return &box_.fid; }
  int close() override;
  Object* owner() const noexcept { return owner_; }

  void inc() noexcept { value_.fetch_add(1, std::memory_order_release); }
  void inc_err() noexcept { err_.fetch_add(1, std::memory_order_release); }
  uint64_t read() noexcept;
  uint64_t readerr() noexcept;
  int add(uint64_t v) noexcept { value_.fetch_add(v); return 0; }
  int set(uint64_t v) noexcept { value_.store(v); return 0; }
  int adderr(uint64_t v) noexcept { err_.fetch_add(v); return 0; }
  int seterr(uint64_t v) noexcept { err_.store(v); return 0; }
  // Waits until value >= threshold (0), an error count change (-FI_EAVAIL) or timeout ms
  // (-FI_ETIMEDOUT); -1 waits forever.
  int wait(uint64_t threshold, int timeout_ms) noexcept;

 private:
  FidBox<fid_cntr> box_;
  Object* owner_;
  Progressable* progress_;
  std::atomic<uint64_t> value_{0}, err_{0};
};

}  // namespace pollfab::core
