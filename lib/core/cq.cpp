#include "lib/core/cq.hpp"

#include <cstring>

#include "lib/core/errors.hpp"
#include "lib/core/ops_fid.hpp"
#include "lib/core/ops_queues.hpp"
#include "lib/util/clock.hpp"

namespace pollfab::core {
namespace {

// Appends v to a cold list (under its lock) and publishes the list's size; false if out of
// memory (the completion is lost, as an overflowing CQ's would be).
template <class Q, class V>
bool append_cold(Q& q, const V& v, std::atomic<size_t>& size) noexcept {
  try {
    q.push_back(v);
  } catch (...) {
    return false;
  }
  size.store(q.size(), std::memory_order_release);
  return true;
}

size_t entry_size(fi_cq_format f) {
  switch (f) {
    case FI_CQ_FORMAT_CONTEXT: return sizeof(fi_cq_entry);
    case FI_CQ_FORMAT_MSG: return sizeof(fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA: return sizeof(fi_cq_data_entry);
    case FI_CQ_FORMAT_TAGGED: return sizeof(fi_cq_tagged_entry);
    default: return 0;
  }
}

}  // namespace

int Cq::validate(const fi_cq_attr* attr) noexcept {
  if (!attr) return -FI_EINVAL;
  if (attr->format != FI_CQ_FORMAT_UNSPEC && entry_size(attr->format) == 0) return -FI_ENOSYS;
  if (int r = SetBinding::validate(attr->wait_obj, attr->wait_set)) return r;
  if (attr->flags & ~(FI_AFFINITY)) return -FI_EINVAL;
  return 0;
}

Cq::Cq(Object* owner, Progressable* progress, const fi_cq_attr& attr, uint32_t api_version,
       bool consumers_may_race, void* context)
    : owner_(owner), progress_(progress), api_version_(api_version),
      waiter_(SetBinding::own_kind(attr.wait_obj, attr.wait_set)) {
  format_ = attr.format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr.format;
  entry_size_ = entry_size(format_);
  ring_.reset(static_cast<uint32_t>(attr.size ? std::min<size_t>(attr.size, 1u << 20) : 1024));
  read_lock_.enable(consumers_may_race);
  init_fid(box_, FI_CLASS_CQ, context, &ops_fid<Cq>);
  box_.fid.ops = &ops_cq<Cq>;
  set_.join(attr.wait_obj, attr.wait_set, this, waiter_);
  owner_->ref();
}

int Cq::close() {
  if (refs()) return -FI_EBUSY;
  set_.leave(this);
  waiter_.close();  // a thread blocked in sread returns -FI_ECANCELED before we go
  owner_->unref();
  delete this;
  return 0;
}

int Cq::control(int command, void* arg) {
  if (set_.set()) return set_.set()->control(command, arg);
  return waiter_.control(command, arg, progress_ ? progress_->wait_fd() : -1, waiter_.kind());
}

int Cq::trywait() noexcept {
  if (set_.set()) return set_.set()->trywait();
  return waiter_.trywait(progress_, [&] { return has_entries() || signaled_.load(); });
}

bool Cq::has_entries() noexcept {
  return !ring_.empty() || overflow_n_.load(std::memory_order_acquire) ||
         errors_n_.load(std::memory_order_acquire);
}

void Cq::push_overflow(void* op_context, uint64_t flags, size_t len, void* buf, uint64_t data,
                       uint64_t tag, fi_addr_t src) noexcept {
  // Entries go to the overflow list while it holds any (order: the ring's are older).
  const Entry e{op_context, flags, len, buf, data, tag, src};
  {
    util::Guard<util::Spinlock> g(cold_lock_);
    if (!append_cold(overflow_, e, overflow_n_)) return;
  }
  waiter_.notify();
}

void Cq::push_error(const fi_cq_err_entry& err) noexcept {
  QueuedError q;
  q.e = err;
  try {
    if (err.err_data && err.err_data_size) {
      const auto* d = static_cast<const uint8_t*>(err.err_data);
      q.data.assign(d, d + err.err_data_size);
    }
  } catch (...) {
    return;  // out of memory: as append_cold, the entry is lost
  }
  q.e.err_data = nullptr;  // set to our copy when read (the deque may move entries)
  q.e.err_data_size = q.data.size();
  {
    util::Guard<util::Spinlock> g(cold_lock_);
    if (!append_cold(errors_, std::move(q), errors_n_)) return;
  }
  waiter_.notify();
}

bool Cq::pop_overflow(Entry& out) noexcept {
  // The caller found the ring empty, and the producer adds to it only once the overflow list
  // is empty.
  if (!overflow_n_.load(std::memory_order_acquire)) return false;
  util::Guard<util::Spinlock> g(cold_lock_);
  // Every ring entry is older than every overflow entry, but the producer may have filled the
  // ring and overflowed again since the check above (a CI run under TSan read one entry four
  // early): look again. From here the ring stays empty while the overflow list is not.
  if (Entry* e = ring_.front()) {
    out = *e;
    ring_.pop();
    return true;
  }
  if (overflow_.empty()) return false;
  out = overflow_.front();
  overflow_.pop_front();
  overflow_n_.store(overflow_.size(), std::memory_order_release);
  return true;
}

namespace {
// One entry in format Out (fi_cq_entry ... fi_cq_tagged_entry: each a prefix of the next).
template <class Out>
void put_entry(Out& o, const Cq::Entry& e) noexcept {
  o.op_context = e.op_context;
  if constexpr (sizeof(Out) >= sizeof(fi_cq_msg_entry)) {
    o.flags = e.flags;
    o.len = e.len;
  }
  if constexpr (sizeof(Out) >= sizeof(fi_cq_data_entry)) {
    o.buf = e.buf;
    o.data = e.data;
  }
  if constexpr (sizeof(Out) >= sizeof(fi_cq_tagged_entry)) o.tag = e.tag;
}
}  // namespace

template <class Out>
void Cq::copy_batch(uint8_t* out, size_t n) noexcept {
  auto* o = reinterpret_cast<Out*>(out);
  for (size_t i = 0; i < n; ++i) put_entry(o[i], *ring_.peek(static_cast<uint32_t>(i)));
}

void Cq::write_entry(void* dst, const Entry& e) const noexcept {
  switch (format_) {
    case FI_CQ_FORMAT_CONTEXT: put_entry(*static_cast<fi_cq_entry*>(dst), e); break;
    case FI_CQ_FORMAT_MSG: put_entry(*static_cast<fi_cq_msg_entry*>(dst), e); break;
    case FI_CQ_FORMAT_DATA: put_entry(*static_cast<fi_cq_data_entry*>(dst), e); break;
    default: put_entry(*static_cast<fi_cq_tagged_entry*>(dst), e); break;
  }
}

ssize_t Cq::read(void* buf, size_t count, fi_addr_t* src_addr) noexcept {
  // Completions already queued are served before progress pulls more from the wire: a round
  // can deliver hundreds of bundled messages, and a reader taking fewer per call than that
  // fell ever further behind (its posted receives ran out, the rest went to the unexpected
  // queue: a 64-byte stream with 512 sends in flight ran at 0.6x the rate of one with 64).
  // A read of 0 entries is a progress call (fi_cq_read(cq, NULL, 0)).
  if (progress_ && (count == 0 || ring_.size() < count)) progress_->progress();
  // Readers of an empty queue take no lock, even when they may race (a shared CQ).
  if (!has_entries()) return -FI_EAGAIN;
  util::Guard<util::MaybeLock> g(read_lock_);
  if (errors_n_.load(std::memory_order_acquire)) return -FI_EAVAIL;
  auto* out = static_cast<uint8_t*>(buf);
  // What the ring holds first, in one batch (the format chosen once, one index store); then
  // entry by entry, the overflow list behind it.
  const size_t batch = std::min<size_t>(count, ring_.available());
  switch (format_) {
    case FI_CQ_FORMAT_CONTEXT: copy_batch<fi_cq_entry>(out, batch); break;
    case FI_CQ_FORMAT_MSG: copy_batch<fi_cq_msg_entry>(out, batch); break;
    case FI_CQ_FORMAT_DATA: copy_batch<fi_cq_data_entry>(out, batch); break;
    default: copy_batch<fi_cq_tagged_entry>(out, batch); break;
  }
  if (src_addr)
    for (size_t i = 0; i < batch; ++i) src_addr[i] = ring_.peek(static_cast<uint32_t>(i))->src;
  ring_.pop_n(static_cast<uint32_t>(batch));
  size_t n = batch;
  Entry e;
  for (; n < count; ++n) {
    if (const Entry* r = ring_.front()) [[likely]] {  // straight from the ring, no copy
      write_entry(out + n * entry_size_, *r);
      if (src_addr) src_addr[n] = r->src;
      ring_.pop();
      continue;
    }
    if (!pop_overflow(e)) break;
    write_entry(out + n * entry_size_, e);
    if (src_addr) src_addr[n] = e.src;
  }
  return n ? static_cast<ssize_t>(n) : -FI_EAGAIN;
}

ssize_t Cq::readerr(fi_cq_err_entry* buf, uint64_t flags) noexcept {
  util::Guard<util::MaybeLock> g(read_lock_);
  {
    util::Guard<util::Spinlock> c(cold_lock_);
    if (errors_.empty()) return -FI_EAGAIN;
    last_err_ = std::move(errors_.front());
    errors_.pop_front();
    errors_n_.store(errors_.size(), std::memory_order_release);
  }
  fi_cq_err_entry& le = last_err_.e;
  le.err_data = last_err_.data.empty() ? nullptr : last_err_.data.data();
  if (FI_VERSION_GE(api_version_, FI_VERSION(1, 5))) {
    // api >= 1.5: if the caller gave an err_data buffer, copy into it; else point at ours
    // (valid until the next fi_cq_readerr, fi_cq(3)).
    void* user_data = buf->err_data;
    size_t user_size = buf->err_data_size;
    *buf = le;
    if (user_size && user_data) {
      size_t n = std::min(user_size, le.err_data_size);
      if (n && le.err_data) std::memcpy(user_data, le.err_data, n);
      buf->err_data = user_data;
      buf->err_data_size = n;
    }
  } else {
    auto* old = reinterpret_cast<fi_cq_err_entry_1_0*>(buf);
    std::memcpy(old, &le, sizeof(fi_cq_err_entry_1_0));
  }
  return 1;
}

ssize_t Cq::sread(void* buf, size_t count, fi_addr_t* src_addr, int timeout_ms) noexcept {
  const uint64_t deadline = Waiter::deadline_after_ms(timeout_ms);
  ssize_t r = -FI_EAGAIN;
  const int w = waiter_.block(progress_, deadline, [&] {
    r = read(buf, count, src_addr);
    return r != -FI_EAGAIN || signaled_.exchange(false);  // fi_cq_signal: -FI_EAGAIN now
  });
  return w == 0 ? r : w;
}

int Cq::signal() noexcept {
  signaled_.store(true);
  waiter_.notify();
  return 0;
}

size_t Cq::pending() noexcept {
  return ring_.size() + overflow_n_.load(std::memory_order_acquire);
}

}  // namespace pollfab::core
