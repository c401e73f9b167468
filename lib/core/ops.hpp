// How every OFI ops table (fi_ops, fi_ops_fabric, fi_ops_domain, fi_ops_mr, fi_ops_cq,
// fi_ops_cntr, fi_ops_av, fi_ops_eq, fi_ops_ep, fi_ops_cm, fi_ops_msg, fi_ops_tagged,
// fi_ops_rma, fi_ops_atomic) is built: one mechanism for every provider.
//
// A class (core's Cq, a provider's endpoint, ...) supplies member functions with fixed names
// (ops_endpoint.hpp and ops_objects.hpp list them per table). A table is a variable template,
// e.g. `core::ops_msg<MyEndpoint>`, whose every slot is either
//   - a trampoline: casts the fid back to the class (Object::as, one load) and calls the
//     member, which the compiler sees and may inline: the application's call through the table
//     stays the only indirect call, or
//   - the one Enosys template (returns -FI_ENOSYS), when the class has no such member.
// Which members a class has is decided at compile time (a requires-expression per slot), so a
// provider implements exactly the calls it supports and the rest are -FI_ENOSYS, never a null
// slot. Providers state the families they mean to implement with the concepts of
// ops_endpoint.hpp (static_assert(core::MsgEndpoint<E>)), so a misspelt member fails the build
// instead of silently becoming -FI_ENOSYS.
//
// Data-path members (send, recv, CQ read, ...) must be noexcept (checked). Control-path
// trampolines run the member inside guarded(): an escaping std::bad_alloc becomes -FI_ENOMEM,
// anything else -FI_EOTHER; exceptions never cross the C ABI.
//
// Tables are mutable globals only because libfabric's fid structs hold non-const pointers;
// they are constant-initialised and never written.
#pragma once
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <new>

#include "lib/core/fid.hpp"

namespace pollfab::core {

// A function of any ops-table slot type that returns -FI_ENOSYS (unsupported operations).
template <class Slot>
struct Enosys;
template <class R, class... A>
struct Enosys<R (*)(A...)> {
  static R fn(A...) noexcept { return static_cast<R>(-FI_ENOSYS); }
};
// The Enosys function for the slot type Slot (e.g. decltype(fi_ops_msg::send)).
template <class Slot>
inline constexpr Slot enosys = &Enosys<Slot>::fn;

// Runs f() and maps escaping exceptions to -FI_E* (every control-path trampoline).
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

// The object behind any fid pointer of class T (see FidBox).
template <class T>
inline T* self(const void* fid) noexcept {
  return Object::as<T>(fid);
}

}  // namespace pollfab::core
