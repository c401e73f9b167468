#include "lib/core/eq.hpp"

#include "lib/core/errors.hpp"

#include <chrono>
#include <cstring>

namespace pollfab::core {
namespace {

Eq* self(fid_eq* e) { return Object::as<Eq>(e); }

ssize_t tr_read(fid_eq* eq, uint32_t* event, void* buf, size_t len, uint64_t flags) {
  if (!eq) return -FI_EINVAL;
  return guarded([&]() -> ssize_t { return self(eq)->read(event, buf, len, flags); });
}
ssize_t tr_readerr(fid_eq* eq, fi_eq_err_entry* buf, uint64_t flags) {
  if (!eq || !buf) return -FI_EINVAL;
  return guarded([&]() -> ssize_t { return self(eq)->readerr(buf, flags); });
}
ssize_t tr_write(fid_eq* eq, uint32_t event, const void* buf, size_t len, uint64_t flags) {
  if (!eq || (!buf && len)) return -FI_EINVAL;
  return guarded([&]() -> ssize_t { return self(eq)->write(event, buf, len, flags); });
}
ssize_t tr_sread(fid_eq* eq, uint32_t* event, void* buf, size_t len, int timeout, uint64_t flags) {
  if (!eq) return -FI_EINVAL;
  return guarded([&]() -> ssize_t { return self(eq)->sread(event, buf, len, timeout, flags); });
}
const char* tr_strerror(fid_eq*, int prov_errno, const void*, char* buf, size_t len) {
  return prov_strerror(prov_errno, buf, len);
}

fi_ops_eq g_eq_ops = {
    .size = sizeof(fi_ops_eq),
    .read = tr_read,
    .readerr = tr_readerr,
    .write = tr_write,
    .sread = tr_sread,
    .strerror = tr_strerror,
};

}  // namespace

Eq::Eq(Object* owner, const fi_eq_attr* attr, void* context) : owner_(owner) {
  if (attr) attr_ = *attr;
  init_fid(box_, FI_CLASS_EQ, context);
  box_.fid.ops = &g_eq_ops;
  if (owner_) owner_->ref();
}

int Eq::close() {
  if (refs()) return -FI_EBUSY;
  if (owner_) owner_->unref();
  delete this;
  return 0;
}

int Eq::control(int command, void* arg) {
  if (command == FI_GETWAIT) return -FI_ENOSYS;
  return -FI_ENOSYS;
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
  *buf = q_.front().err;
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
  cv_.notify_all();
  return static_cast<ssize_t>(len);
}

void Eq::write_error(const fi_eq_err_entry& err) {
  Event e;
  e.error = true;
  e.err = err;
  {
    std::lock_guard<std::mutex> g(mu_);
    q_.push_back(std::move(e));
  }
  cv_.notify_all();
}

ssize_t Eq::sread(uint32_t* event, void* buf, size_t len, int timeout, uint64_t flags) {
  std::unique_lock<std::mutex> lk(mu_);
  auto ready = [&] { return !q_.empty(); };
  if (timeout < 0) {
    cv_.wait(lk, ready);
  } else if (!cv_.wait_for(lk, std::chrono::milliseconds(timeout), ready)) {
    return -FI_EAGAIN;
  }
  return read_locked(event, buf, len, flags);
}

}  // namespace pollfab::core
