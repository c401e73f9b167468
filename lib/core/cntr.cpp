#include "lib/core/cntr.hpp"

#include <sched.h>

#include "lib/core/ops_fid.hpp"
#include "lib/core/ops_queues.hpp"
#include "lib/util/clock.hpp"

namespace pollfab::core {
int Cntr::validate(const fi_cntr_attr* attr) noexcept {
  if (!attr) return 0;
  if (attr->events != FI_CNTR_EVENTS_COMP) return -FI_ENOSYS;
  switch (attr->wait_obj) {
    case FI_WAIT_NONE: case FI_WAIT_UNSPEC: case FI_WAIT_YIELD: break;
    default: return -FI_ENOSYS;
  }
  return 0;
}

Cntr::Cntr(Object* owner, Progressable* progress, const fi_cntr_attr*, void* context)
    : owner_(owner), progress_(progress) {
  init_fid(box_, FI_CLASS_CNTR, context, &ops_fid<Cntr>);
  box_.fid.ops = &ops_cntr<Cntr>;
  owner_->ref();
}

int Cntr::close() {
  if (refs()) return -FI_EBUSY;
  owner_->unref();
  delete this;
  return 0;
}

uint64_t Cntr::read() noexcept {
  if (progress_) progress_->progress();
  return value_.load(std::memory_order_acquire);
}

uint64_t Cntr::readerr() noexcept {
  if (progress_) progress_->progress();
  return err_.load(std::memory_order_acquire);
}

int Cntr::wait(uint64_t threshold, int timeout_ms) noexcept {
  uint64_t deadline = timeout_ms < 0 ? UINT64_MAX
                                     : util::monotonic_ns() + uint64_t(timeout_ms) * 1000000ull;
  uint64_t errs = err_.load();
  for (uint32_t spins = 0;; ++spins) {
    if (read() >= threshold) return 0;
    if (err_.load() != errs) return -FI_EAVAIL;
    if (util::monotonic_ns() >= deadline) return -FI_ETIMEDOUT;
    if ((spins & 63) == 63) sched_yield();
  }
}

}  // namespace pollfab::core
