#include "lib/core/av.hpp"

#include "lib/core/eq.hpp"
#include "lib/core/ops_fid.hpp"
#include "lib/core/ops_queues.hpp"

namespace pollfab::core {
int Av::validate(const fi_av_attr* attr) noexcept {
  if (!attr) return -FI_EINVAL;
  switch (attr->type) {
    case FI_AV_UNSPEC: case FI_AV_TABLE: case FI_AV_MAP: break;
    default: return -FI_EINVAL;
  }
  if (attr->rx_ctx_bits) return -FI_ENOSYS;  // scalable endpoints: not yet
  if (attr->name) return -FI_ENOSYS;         // named (shared) AVs: not yet
  if (attr->flags & ~(FI_EVENT | FI_SYMMETRIC)) return -FI_EINVAL;
  return 0;
}

Av::Av(Object* owner, const AddressFormat& fmt, const fi_av_attr* attr, void* context)
    : owner_(owner), fmt_(fmt) {
  type_ = attr && attr->type != FI_AV_UNSPEC ? attr->type : FI_AV_TABLE;
  init_fid(box_, FI_CLASS_AV, context, &ops_fid<Av>);
  box_.fid.ops = &ops_av<Av>;
  owner_->ref();
}

int Av::close() {
  if (refs()) return -FI_EBUSY;
  if (eq_) eq_->unref();
  owner_->unref();
  delete this;
  return 0;
}

int Av::bind(struct fid* bfid, uint64_t flags) {
  if (bfid->fclass != FI_CLASS_EQ) return -FI_EINVAL;
  std::lock_guard<std::mutex> g(mu_);
  if (eq_) return -FI_EINVAL;
  eq_ = Object::as<Eq>(bfid);
  eq_->ref();
  return 0;
}

int Av::insert(const void* addr, size_t count, fi_addr_t* fi_addr, uint64_t flags, void* context) {
  if (flags & ~(FI_MORE | FI_SYNC_ERR)) return -FI_EINVAL;
  const size_t len = fmt_.len();
  int* errors = (flags & FI_SYNC_ERR) ? static_cast<int*>(context) : nullptr;
  int inserted = 0;
  std::lock_guard<std::mutex> g(mu_);
  for (size_t i = 0; i < count; ++i) {
    const auto* a = static_cast<const uint8_t*>(addr) + i * len;
    if (!fmt_.valid(a, len)) {
      if (fi_addr) fi_addr[i] = FI_ADDR_NOTAVAIL;
      if (errors) errors[i] = -FI_EINVAL;
      continue;
    }
    std::string key(reinterpret_cast<const char*>(a), len);
    fi_addr_t idx;
    auto it = index_.find(key);
    if (it != index_.end()) {
      idx = it->second;  // the same name twice maps to the same fi_addr
    } else {
      Slot s;
      s.valid = true;
      std::memcpy(s.bytes, a, len);
      slots_.push_back(s);
      idx = slots_.size() - 1;
      index_.emplace(std::move(key), idx);
    }
    if (fi_addr) fi_addr[i] = idx;
    if (errors) errors[i] = 0;
    ++inserted;
  }
  if (eq_) {
    fi_eq_entry ev{};
    ev.context = context;
    ev.data = static_cast<uint64_t>(inserted);
    eq_->write(FI_AV_COMPLETE, &ev, sizeof ev, 0);
    return 0;
  }
  return inserted;
}

int Av::remove(fi_addr_t* fi_addr, size_t count, uint64_t flags) {
  std::lock_guard<std::mutex> g(mu_);
  for (size_t i = 0; i < count; ++i)
    if (fi_addr[i] >= slots_.size() || !slots_[fi_addr[i]].valid) return -FI_EINVAL;
  for (size_t i = 0; i < count; ++i) {
    Slot& s = slots_[fi_addr[i]];
    index_.erase(std::string(reinterpret_cast<const char*>(s.bytes), fmt_.len()));
    s.valid = false;
  }
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return 0;
}

int Av::lookup(fi_addr_t fi_addr, void* addr, size_t* addrlen) {
  std::lock_guard<std::mutex> g(mu_);
  if (fi_addr >= slots_.size() || !slots_[fi_addr].valid) return -FI_EINVAL;
  size_t n = std::min(*addrlen, fmt_.len());
  if (addr && n) std::memcpy(addr, slots_[fi_addr].bytes, n);
  *addrlen = fmt_.len();
  return 0;
}

const char* Av::straddr(const void* addr, char* buf, size_t* len) {
  std::string s = fmt_.str(addr, fmt_.len());
  if (buf && *len) {
    size_t n = std::min(*len - 1, s.size());
    std::memcpy(buf, s.data(), n);
    buf[n] = 0;
  }
  *len = s.size() + 1;
  return buf;
}

fi_addr_t Av::reverse(const void* addr) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = index_.find(std::string(static_cast<const char*>(addr), fmt_.len()));
  return it == index_.end() ? FI_ADDR_NOTAVAIL : it->second;
}

}  // namespace pollfab::core
