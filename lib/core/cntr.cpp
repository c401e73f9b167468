#include "lib/core/cntr.hpp"

#include "lib/core/ops_fid.hpp"
#include "lib/core/ops_queues.hpp"
#include "lib/util/clock.hpp"

namespace pollfab::core {
int Cntr::validate(const fi_cntr_attr* attr) noexcept {
  if (!attr) return 0;
  if (attr->events != FI_CNTR_EVENTS_COMP) return -FI_ENOSYS;
  return SetBinding::validate(attr->wait_obj, attr->wait_set);
}

Cntr::Cntr(Object* owner, Progressable* progress, const fi_cntr_attr* attr, void* context)
    : owner_(owner), progress_(progress), waiter_(attr ? SetBinding::own_kind(attr->wait_obj, attr->wait_set) : FI_WAIT_NONE) {
  init_fid(box_, FI_CLASS_CNTR, context, &ops_fid<Cntr>);
  box_.fid.ops = &ops_cntr<Cntr>;
  if (attr) set_.join(attr->wait_obj, attr->wait_set, this, waiter_);
  owner_->ref();
}

int Cntr::close() {
  if (refs()) return -FI_EBUSY;
  set_.leave(this);
  waiter_.close();
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
  const uint64_t deadline = Waiter::deadline_after_ms(timeout_ms);
  const uint64_t errs = err_.load();
  bool reached = false;
  const int w = waiter_.block(progress_, deadline, [&] {
    reached = read() >= threshold;
    return reached || err_.load() != errs;
  });
  if (w == -FI_EAGAIN) return -FI_ETIMEDOUT;
  if (w) return w;
  return reached ? 0 : -FI_EAVAIL;
}

int Cntr::add(uint64_t v) noexcept {
  seen_value_.store(value_.fetch_add(v) + v);
  waiter_.notify();
  return 0;
}

int Cntr::set(uint64_t v) noexcept {
  value_.store(v);
  seen_value_.store(v);
  waiter_.notify();
  return 0;
}

bool Cntr::take_change() noexcept {
  const uint64_t v = value_.load(std::memory_order_acquire), e = err_.load(std::memory_order_acquire);
  const bool changed = seen_value_.exchange(v) != v;
  return (seen_err_.exchange(e) != e) || changed;
}

int Cntr::control(int command, void* arg) {
  if (set_.set()) return set_.set()->control(command, arg);
  return waiter_.control(command, arg, progress_ ? progress_->wait_fd() : -1, waiter_.kind());
}

int Cntr::trywait() noexcept {
  if (set_.set()) return set_.set()->trywait();
  return waiter_.trywait(progress_, [] { return false; });  // any change wakes the sleeper
}

}  // namespace pollfab::core
