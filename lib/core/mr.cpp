#include "lib/core/mr.hpp"

#include "lib/core/cntr.hpp"
#include "lib/core/domain.hpp"
#include "lib/core/ops_fid.hpp"

namespace pollfab::core {

Mr::Mr(Domain* dom, const iovec* iov, size_t count, uint64_t access, uint64_t offset,
       uint64_t key, void* context)
    : dom_(dom), iov_(iov, iov + count), access_(access), offset_(offset) {
  init_fid(box_, FI_CLASS_MR, context, &ops_fid<Mr>);
  box_.fid.mem_desc = this;
  box_.fid.key = key;
  dom_->ref();
}

Mr::~Mr() { dom_->unref(); }

int Mr::close() {
  if (refs()) return -FI_EBUSY;
  {
    util::Guard<util::MaybeLock> g(dom_->lock());  // the data path looks keys up under it
    dom_->mrs().remove(key());
  }
  teardown();
  for (Cntr* c : {rwrite_cntr_, rread_cntr_})
    if (c) c->unref();
  delete this;
  return 0;
}

uint8_t* Mr::resolve(uint64_t addr, uint64_t len, bool virt_addr) const noexcept {
  uint64_t off = addr;
  if (!virt_addr) {
    if (addr < offset_) return nullptr;
    off = addr - offset_;
  }
  for (const iovec& v : iov_) {
    const auto base = reinterpret_cast<uintptr_t>(v.iov_base);
    if (virt_addr) {
      if (addr < base || addr - base > v.iov_len || len > v.iov_len - (addr - base)) continue;
      return reinterpret_cast<uint8_t*>(addr);
    }
    if (off < v.iov_len) {
      if (len > v.iov_len - off) return nullptr;
      return static_cast<uint8_t*>(v.iov_base) + off;
    }
    if (off == v.iov_len && len == 0) return static_cast<uint8_t*>(v.iov_base) + off;
    off -= v.iov_len;
  }
  return nullptr;
}

int Mr::bind(struct fid* bfid, uint64_t flags) {
  if (!bfid || bfid->fclass != FI_CLASS_CNTR) return -FI_EINVAL;
  if (!flags || (flags & ~(FI_REMOTE_WRITE | FI_REMOTE_READ))) return -FI_EBADFLAGS;
  Cntr* c = Object::as<Cntr>(bfid);
  if (c->owner() != dom_) return -FI_EINVAL;
  for (auto [flag, slot] : {std::pair{FI_REMOTE_WRITE, &rwrite_cntr_}, std::pair{FI_REMOTE_READ, &rread_cntr_}}) {
    if (!(flags & flag)) continue;
    if (*slot) (*slot)->unref();
    c->ref();
    *slot = c;
  }
  return 0;
}

void Mr::remote_access(bool read, bool write) noexcept {
  if (write && rwrite_cntr_) rwrite_cntr_->inc();
  if (read && rread_cntr_) rread_cntr_->inc();
}

bool Mr::contains(const void* addr, size_t len) const noexcept {
  auto a = reinterpret_cast<uintptr_t>(addr);
  for (const iovec& v : iov_) {
    auto b = reinterpret_cast<uintptr_t>(v.iov_base);
    if (a >= b && a + len <= b + v.iov_len) return true;
  }
  return false;
}

int MrMap::reserve(uint64_t requested, uint64_t& key) {
  std::lock_guard<std::mutex> g(mu_);
  if (prov_key_) {
    while (mrs_.count(next_key_)) ++next_key_;
    key = next_key_++;
  } else {
    if (mrs_.count(requested)) return -FI_ENOKEY;
    key = requested;
  }
  mrs_.emplace(key, nullptr);
  return 0;
}

void MrMap::set(uint64_t key, Mr* mr) noexcept {
  std::lock_guard<std::mutex> g(mu_);
  auto it = mrs_.find(key);
  if (it != mrs_.end()) it->second = mr;
}

void MrMap::remove(uint64_t key) noexcept {
  std::lock_guard<std::mutex> g(mu_);
  mrs_.erase(key);
}

Mr* MrMap::find(uint64_t key) const noexcept {
  std::lock_guard<std::mutex> g(mu_);
  auto it = mrs_.find(key);
  return it == mrs_.end() ? nullptr : it->second;
}

}  // namespace pollfab::core
