// ObjectPool<T>: a fixed number of T preallocated at construction; get()/put() are O(1) and
// never allocate. get() returns nullptr when exhausted (back-pressure, the caller maps it to
// -FI_EAGAIN). put() takes only objects get() gave out (at most capacity() are ever out, so
// the free stack never overflows). Thread-safety: none.
#pragma once
#include <cstdint>
#include <memory>

namespace pollfab::util {

template <class T>
class ObjectPool {
 public:
  ObjectPool() = default;
  explicit ObjectPool(uint32_t n) { reset(n); }

  void reset(uint32_t n) {
    objs_ = std::make_unique<T[]>(n);
    free_ = std::make_unique<T*[]>(n);
    // get() hands out objs_[0] first, as before.
    for (uint32_t i = 0; i < n; ++i) free_[i] = &objs_[n - 1 - i];
    n_free_ = n_ = n;
  }
  T* get() noexcept { return n_free_ ? free_[--n_free_] : nullptr; }
  // A fixed stack, not a vector: a push_back's growth path (never taken: the capacity is
  // reserved) kept the callers from being inlined (Matcher::release, every receive).
  void put(T* o) noexcept {
#if POLLFAB_DEBUG_CHECKS
    if (n_free_ >= n_) __builtin_trap();  // put more than get() gave out (meson -Ddebug_checks)
#endif
    free_[n_free_++] = o;
  }
  uint32_t capacity() const noexcept { return n_; }
  uint32_t in_use() const noexcept { return n_ - n_free_; }

 private:
  std::unique_ptr<T[]> objs_;
  std::unique_ptr<T*[]> free_;  // the free objects, a stack of n_free_
  uint32_t n_free_ = 0;
  uint32_t n_ = 0;
};

}  // namespace pollfab::util
