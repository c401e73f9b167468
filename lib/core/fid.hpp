// The OFI object model's root: every OFI object is a C++ Object that embeds its libfabric fid
// struct in a FidBox. The application holds &box.fid; Object::from() turns any fid pointer
// (struct fid*, fid_ep*, fid_cq*, ...) back into the Object with one load, because the box
// stores the owner pointer immediately before the fid struct.
//
// Lifetime (fi_close(3), fi_endpoint(3) "fi_close"): objects count the bindings and children
// that use them; close() on an object still referenced returns -FI_EBUSY and changes nothing.
// Exceptions never cross the C ABI: control-path trampolines catch everything and return
// -FI_ENOMEM / -FI_EOTHER; data-path methods are noexcept.
#pragma once
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <atomic>
#include <cstddef>
#include <new>

namespace pollfab::core {

class Object;

template <class F>
struct FidBox {
  Object* self = nullptr;  // must precede fid: Object::from() reads it at fid - sizeof(void*)
  F fid{};
};

class Object {
 public:
  Object() = default;
  virtual ~Object() = default;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  // fi_close(3). Returns 0, or -FI_EBUSY while other objects still use this one.
  virtual int close() = 0;
  // fi_bind(3) on this object (e.g. fi_ep_bind). Default: -FI_ENOSYS.
  virtual int bind(struct fid* bfid, uint64_t flags) { return -FI_ENOSYS; }
  // fi_control(3). Default: -FI_ENOSYS.
  virtual int control(int command, void* arg) { return -FI_ENOSYS; }
  // fi_open_ops(3). Default: -FI_ENOSYS.
  virtual int ops_open(const char* name, uint64_t flags, void** ops, void* context) {
    return -FI_ENOSYS;
  }

  void ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void unref() noexcept { refs_.fetch_sub(1, std::memory_order_acq_rel); }
  int refs() const noexcept { return refs_.load(std::memory_order_acquire); }

  static Object* from(const void* fid_ptr) noexcept {
    return *reinterpret_cast<Object* const*>(static_cast<const char*>(fid_ptr) - sizeof(void*));
  }
  template <class T>
  static T* as(const void* fid_ptr) noexcept {
    return static_cast<T*>(from(fid_ptr));
  }
  // The fi_ops table shared by every object (close, bind, control, ops_open trampolines).
  static fi_ops* generic_ops() noexcept;

 protected:
  template <class F>
  void init_fid(FidBox<F>& box, size_t fclass, void* context) noexcept {
    static_assert(offsetof(FidBox<F>, fid) == sizeof(void*));
    box.self = this;
    auto* f = reinterpret_cast<struct fid*>(&box.fid);
    f->fclass = fclass;
    f->context = context;
    f->ops = generic_ops();
  }

 private:
  std::atomic<int> refs_{0};
};

// Runs f() and maps escaping exceptions to -FI_E* (used by every control-path trampoline).
template <class Fn>
inline auto guarded(Fn&& f) noexcept -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return -FI_ENOMEM;
  } catch (...) {
    return -FI_EOTHER;
  }
}

// A function of any ops-table slot type that returns -FI_ENOSYS (unsupported operations).
template <class F>
struct Enosys;
template <class R, class... A>
struct Enosys<R (*)(A...)> {
  static R fn(A...) noexcept { return static_cast<R>(-FI_ENOSYS); }
};
#define PF_ENOSYS(table, member) (&::pollfab::core::Enosys<decltype(table::member)>::fn)

}  // namespace pollfab::core
