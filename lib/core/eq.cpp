#include "lib/core/eq.hpp"

#include "lib/core/errors.hpp"
#include "lib/core/ops_fid.hpp"
#include "lib/core/ops_queues.hpp"

#include <cstring>

namespace pollfab::core {
namespace {
// The EQ's own sleeps need a native object even when the application asked for none.
fi_wait_obj internal_kind(const fi_eq_attr* attr) {
  if (!attr || attr->wait_obj == FI_WAIT_NONE) return FI_WAIT_UNSPEC;
  return SetBinding::own_kind(attr->wait_obj, attr->wait_set);
}
}  // namespace

Eq::Eq(Object* owner, const fi_eq_attr* attr, void* context)
    : owner_(owner), waiter_(internal_kind(attr)) {
  if (attr) attr_ = *attr;
  init_fid(box_, FI_CLASS_EQ, context, &ops_fid<Eq>);
  box_.fid.ops = &ops_eq<Eq>;
  if (attr) set_.join(attr->wait_obj, attr->wait_set, this, waiter_);
  if (owner_) owner_->ref();
}

int Eq::close() {
  if (refs()) return -FI_EBUSY;
  set_.leave(this);
  waiter_.close();
  if (owner_) owner_->unref();
  delete this;
  return 0;
}

int Eq::control(int command, void* arg) {
  if (set_.set()) return set_.set()->control(command, arg);
  if (command == FI_GETWAIT && attr_.wait_obj == FI_WAIT_NONE) return -FI_ENODATA;
  return waiter_.control(command, arg, -1, attr_.wait_obj);
}

int Eq::trywait() noexcept {
  if (set_.set()) return set_.set()->trywait();
  if (attr_.wait_obj == FI_WAIT_NONE) return -FI_EINVAL;
  return waiter_.trywait(nullptr, [&] { return has_entries(); });
}

bool Eq::has_entries() noexcept {
  std::lock_guard<std::mutex> g(mu_);
  return !q_.empty();
}

ssize_t Eq::read_locked(uint32_t* event, void* buf, size_t len, uint64_t flags) {
  if (q_.empty()) return -FI_EAGAIN;
  Event& e = q_.front();
  if (e.error) return -FI_EAVAIL;
  if (len < e.data.size()) return -FI_ETOOSMALL;
  if (event) *event = e.event;
  if (buf && !e.data.empty()) std::memcpy(buf, e.data.data(), e.data.size());
  ssize_t n = static_cast<ssize_t>(e.data.size());
  if (!(flags & FI_PEEK)) q_.pop_front();
  return n;
}

ssize_t Eq::read(uint32_t* event, void* buf, size_t len, uint64_t flags) {
  std::lock_guard<std::mutex> g(mu_);
  return read_locked(event, buf, len, flags);
}

ssize_t Eq::readerr(fi_eq_err_entry* buf, uint64_t flags) {
  std::lock_guard<std::mutex> g(mu_);
  if (q_.empty() || !q_.front().error) return -FI_EAGAIN;
  Event& ev = q_.front();
  void* user = buf->err_data;
  const size_t room = buf->err_data_size;
  *buf = ev.err;
  if (user && room) {  // the caller's buffer
    const size_t n = std::min(room, ev.err_data.size());
    if (n) std::memcpy(user, ev.err_data.data(), n);
    buf->err_data = user;
    buf->err_data_size = n;
  } else {
    last_err_data_ = ev.err_data;
    buf->err_data = last_err_data_.empty() ? nullptr : last_err_data_.data();
    buf->err_data_size = last_err_data_.size();
  }
  if (!(flags & FI_PEEK)) q_.pop_front();
  return sizeof(fi_eq_err_entry);
}

ssize_t Eq::write(uint32_t event, const void* buf, size_t len, uint64_t flags) {
  Event e;
  e.event = event;
  e.data.assign(static_cast<const uint8_t*>(buf), static_cast<const uint8_t*>(buf) + len);
  {
    std::lock_guard<std::mutex> g(mu_);
    q_.push_back(std::move(e));
  }
  waiter_.notify();
  return static_cast<ssize_t>(len);
}

void Eq::write_error(const fi_eq_err_entry& err, const void* data, size_t len) {
  Event e;
  e.error = true;
  e.err = err;
  e.err.err_data = nullptr;
  e.err.err_data_size = 0;
  if (data && len)
    e.err_data.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + len);
  {
    std::lock_guard<std::mutex> g(mu_);
    q_.push_back(std::move(e));
  }
  waiter_.notify();
}

ssize_t Eq::sread(uint32_t* event, void* buf, size_t len, int timeout, uint64_t flags) {
  const uint64_t deadline = Waiter::deadline_after_ms(timeout);
  ssize_t r = -FI_EAGAIN;
  const int w = waiter_.block(nullptr, deadline, [&] {
    std::lock_guard<std::mutex> g(mu_);
    r = read_locked(event, buf, len, flags);
    return r != -FI_EAGAIN;
  });
  return w == 0 ? r : w;
}

}  // namespace pollfab::core
