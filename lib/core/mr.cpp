#include "lib/core/mr.hpp"

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
  dom_->mrs().remove(key());
  teardown();
  delete this;
  return 0;
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
