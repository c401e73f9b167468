#include "lib/core/cntr.hpp"

#include <sched.h>

#include "lib/util/clock.hpp"

namespace pollfab::core {
namespace {

Cntr* self(fid_cntr* c) { return Object::as<Cntr>(c); }
uint64_t tr_read(fid_cntr* c) { return c ? self(c)->read() : 0; }
uint64_t tr_readerr(fid_cntr* c) { return c ? self(c)->readerr() : 0; }
int tr_add(fid_cntr* c, uint64_t v) { return c ? self(c)->add(v) : -FI_EINVAL; }
int tr_set(fid_cntr* c, uint64_t v) { return c ? self(c)->set(v) : -FI_EINVAL; }
int tr_wait(fid_cntr* c, uint64_t t, int timeout) { return c ? self(c)->wait(t, timeout) : -FI_EINVAL; }
int tr_adderr(fid_cntr* c, uint64_t v) { return c ? self(c)->adderr(v) : -FI_EINVAL; }
int tr_seterr(fid_cntr* c, uint64_t v) { return c ? self(c)->seterr(v) : -FI_EINVAL; }

fi_ops_cntr g_cntr_ops = {
    .size = sizeof(fi_ops_cntr),
    .read = tr_read,
    .readerr = tr_readerr,
    .add = tr_add,
    .set = tr_set,
    .wait = tr_wait,
    .adderr = tr_adderr,
    .seterr = tr_seterr,
};

}  // namespace

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
  init_fid(box_, FI_CLASS_CNTR, context);
  box_.fid.ops = &g_cntr_ops;
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
