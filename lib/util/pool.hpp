// ObjectPool<T>: a fixed number of T preallocated at construction; get()/put() are O(1) and
// never allocate. get() returns nullptr when exhausted (back-pressure, the caller maps it to
// -FI_EAGAIN). Thread-safety: none.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace pollfab::util {

template <class T>
class ObjectPool {
 public:
  ObjectPool() = default;
  explicit ObjectPool(uint32_t n) { reset(n); }

  void reset(uint32_t n) {
    objs_ = std::make_unique<T[]>(n);
    free_.clear();
    free_.reserve(n);
    for (uint32_t i = n; i-- > 0;) free_.push_back(&objs_[i]);
    n_ = n;
  }
  T* get() noexcept {
    if (free_.empty()) return nullptr;
    T* o = free_.back();
    free_.pop_back();
    return o;
  }
  void put(T* o) noexcept { free_.push_back(o); }  // capacity reserved: never reallocates
  uint32_t capacity() const noexcept { return n_; }
  uint32_t in_use() const noexcept { return n_ - static_cast<uint32_t>(free_.size()); }

 private:
  std::unique_ptr<T[]> objs_;
  std::vector<T*> free_;
  uint32_t n_ = 0;
};

}  // namespace pollfab::util
