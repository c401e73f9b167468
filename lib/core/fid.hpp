// The OFI object model's root: every OFI object is a C++ Object that embeds its libfabric fid
// struct in a FidBox. The application holds &box.fid; Object::from() turns any fid pointer
// (struct fid*, fid_ep*, fid_cq*, ...) back into the Object with one load, because the box
// stores the owner pointer immediately before the fid struct.
//
// Lifetime (fi_close(3), fi_endpoint(3) "fi_close"): objects count the bindings and children
// that use them; close() on an object still referenced returns -FI_EBUSY and changes nothing.
// Every ops table, this fi_ops included, is built by the mechanism of lib/core/ops.hpp:
// init_fid() installs ops_fid<T> (close, bind, control, ... of class T, ops_fid.hpp).
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
  // (fi_bind, fi_control and fi_open_ops are members of the classes that support them; see
  // lib/core/ops_fid.hpp.)
  virtual int close() = 0;

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

 protected:
  // Fills the fid header: class, context and the fi_ops table (core::ops_fid<T> of
  // lib/core/ops_fid.hpp, T the class whose close, bind, control, ... the fid calls).
  template <class F>
  void init_fid(FidBox<F>& box, size_t fclass, void* context, fi_ops* ops) noexcept {
    static_assert(offsetof(FidBox<F>, fid) == sizeof(void*));
    box.self = this;
    auto* f = reinterpret_cast<struct fid*>(&box.fid);
    f->fclass = fclass;
    f->context = context;
    f->ops = ops;
  }

 private:
  std::atomic<int> refs_{0};
};

}  // namespace pollfab::core

