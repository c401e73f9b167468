// fi_ops_cq (fi_cq(3)), fi_ops_cntr (fi_cntr(3)), fi_ops_av (fi_av(3)) and fi_ops_eq (fi_eq(3))
// built by the mechanism of lib/core/ops.hpp from the class implementing the object (today
// core's Cq, Cntr, Av, Eq; a provider may supply its own class with the same members).
//
// fi_ops_cq (class C; read, readerr, sread, signal required, all noexcept: data path):
//     ssize_t read(void* buf, size_t count, fi_addr_t* src);         fi_cq_read, readfrom
//     ssize_t readerr(fi_cq_err_entry* buf, uint64_t flags);         fi_cq_readerr
//     ssize_t sread(void* buf, size_t count, fi_addr_t* src, int timeout_ms);
//                                                         fi_cq_sread, sreadfrom (cond ignored)
//     int signal();                                                  fi_cq_signal
//     ProvErrnoText prov_errno_text() const noexcept;   what fi_cq_strerror names prov_errno by
//   strerror: core::prov_strerror with that function (null: prov_errno is an FI_E* code).
// fi_ops_cntr (class N; all required, noexcept): read, readerr, add, set,
//     wait(uint64_t threshold, int timeout_ms), adderr, seterr.
// fi_ops_av (class A): insert(addr, count, fi_addr_t*, flags, ctx), remove(fi_addr_t*, count,
//     flags), lookup(fi_addr, addr, size_t* len), straddr(addr, buf, size_t* len) required;
//     insertsvc(node, service, fi_addr_t*, flags, ctx), insertsym(node, nodecnt, service,
//     svccnt, fi_addr_t*, flags, ctx), av_set(fi_av_set_attr*, fid_av_set**, ctx) optional.
// fi_ops_eq (class Q; read, readerr, write, sread required):
//     ssize_t read(uint32_t* event, void* buf, size_t len, uint64_t flags);
//     ssize_t readerr(fi_eq_err_entry*, uint64_t flags);
//     ssize_t write(uint32_t event, const void* buf, size_t len, uint64_t flags);
//     ssize_t sread(uint32_t* event, void* buf, size_t len, int timeout_ms, uint64_t flags);
//   strerror: core::prov_strerror.
// A null object, a null buffer with a non-zero count, or a null required out-pointer is
// -FI_EINVAL at the slot (fi_cntr_read of a null counter returns 0).
#pragma once
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include "lib/core/errors.hpp"
#include "lib/core/ops.hpp"

namespace pollfab::core {

// ---- fi_ops_cq -------------------------------------------------------------------------------

template <class C>
struct CqSlots {
  // Data path: every member the CQ slots call must be noexcept (nothing crosses the C ABI).
  static_assert(noexcept(std::declval<C&>().read(nullptr, 0, nullptr)), "CQ read: noexcept");
  static_assert(noexcept(std::declval<C&>().readerr(nullptr, 0)), "CQ readerr: noexcept");
  static_assert(noexcept(std::declval<C&>().sread(nullptr, 0, nullptr, 0)), "CQ sread: noexcept");
  static_assert(noexcept(std::declval<C&>().signal()), "CQ signal: noexcept");
  static ssize_t read(fid_cq* f, void* buf, size_t count) {
    if (!f || (!buf && count)) return -FI_EINVAL;
    return self<C>(f)->read(buf, count, nullptr);
  }
  static ssize_t readfrom(fid_cq* f, void* buf, size_t count, fi_addr_t* src) {
    if (!f || (!buf && count)) return -FI_EINVAL;
    return self<C>(f)->read(buf, count, src);
  }
  static ssize_t readerr(fid_cq* f, fi_cq_err_entry* buf, uint64_t flags) {
    if (!f || !buf) return -FI_EINVAL;
    return self<C>(f)->readerr(buf, flags);
  }
  static ssize_t sread(fid_cq* f, void* buf, size_t count, const void*, int timeout) {
    if (!f || (!buf && count)) return -FI_EINVAL;
    return self<C>(f)->sread(buf, count, nullptr, timeout);
  }
  static ssize_t sreadfrom(fid_cq* f, void* buf, size_t count, fi_addr_t* src, const void*,
                           int timeout) {
    if (!f || (!buf && count)) return -FI_EINVAL;
    return self<C>(f)->sread(buf, count, src, timeout);
  }
  static int signal(fid_cq* f) { return f ? self<C>(f)->signal() : -FI_EINVAL; }
  static const char* strerror(fid_cq* f, int prov_errno, const void*, char* buf, size_t len) {
    return prov_strerror(f ? self<C>(f)->prov_errno_text() : nullptr, prov_errno, buf, len);
  }
};

template <class C>
inline fi_ops_cq ops_cq = {
    .size = sizeof(fi_ops_cq),
    .read = CqSlots<C>::read,
    .readfrom = CqSlots<C>::readfrom,
    .readerr = CqSlots<C>::readerr,
    .sread = CqSlots<C>::sread,
    .sreadfrom = CqSlots<C>::sreadfrom,
    .signal = CqSlots<C>::signal,
    .strerror = CqSlots<C>::strerror,
};

// ---- fi_ops_cntr -----------------------------------------------------------------------------

template <class N>
struct CntrSlots {
  static_assert(noexcept(std::declval<N&>().read()) && noexcept(std::declval<N&>().readerr()) &&
                    noexcept(std::declval<N&>().add(0)) && noexcept(std::declval<N&>().set(0)) &&
                    noexcept(std::declval<N&>().wait(0, 0)) &&
                    noexcept(std::declval<N&>().adderr(0)) && noexcept(std::declval<N&>().seterr(0)),
                "counter members: noexcept");
  static uint64_t read(fid_cntr* c) { return c ? self<N>(c)->read() : 0; }
  static uint64_t readerr(fid_cntr* c) { return c ? self<N>(c)->readerr() : 0; }
  static int add(fid_cntr* c, uint64_t v) { return c ? self<N>(c)->add(v) : -FI_EINVAL; }
  static int set(fid_cntr* c, uint64_t v) { return c ? self<N>(c)->set(v) : -FI_EINVAL; }
  static int wait(fid_cntr* c, uint64_t threshold, int timeout) {
    return c ? self<N>(c)->wait(threshold, timeout) : -FI_EINVAL;
  }
  static int adderr(fid_cntr* c, uint64_t v) { return c ? self<N>(c)->adderr(v) : -FI_EINVAL; }
  static int seterr(fid_cntr* c, uint64_t v) { return c ? self<N>(c)->seterr(v) : -FI_EINVAL; }
};

template <class N>
inline fi_ops_cntr ops_cntr = {
    .size = sizeof(fi_ops_cntr),
    .read = CntrSlots<N>::read,
    .readerr = CntrSlots<N>::readerr,
    .add = CntrSlots<N>::add,
    .set = CntrSlots<N>::set,
    .wait = CntrSlots<N>::wait,
    .adderr = CntrSlots<N>::adderr,
    .seterr = CntrSlots<N>::seterr,
};

// ---- fi_ops_av -------------------------------------------------------------------------------

template <class A>
struct AvSlots {
  using O = fi_ops_av;
  static int insert(fid_av* av, const void* addr, size_t count, fi_addr_t* fi_addr,
                    uint64_t flags, void* ctx) {
    if (!av || (!addr && count)) return -FI_EINVAL;
    return guarded([&] { return self<A>(av)->insert(addr, count, fi_addr, flags, ctx); });
  }
  static constexpr decltype(O::insertsvc) insertsvc() {
    if constexpr (requires(A& a, fi_addr_t* o) { a.insertsvc("", "", o, 0, nullptr); })
      return [](fid_av* av, const char* node, const char* service, fi_addr_t* fi_addr,
                uint64_t flags, void* ctx) -> int {
        if (!av || !node || !service) return -FI_EINVAL;
        return guarded([&] { return self<A>(av)->insertsvc(node, service, fi_addr, flags, ctx); });
      };
    else
      return enosys<decltype(O::insertsvc)>;
  }
  static constexpr decltype(O::insertsym) insertsym() {
    if constexpr (requires(A& a, fi_addr_t* o) { a.insertsym("", 1, "", 1, o, 0, nullptr); })
      return [](fid_av* av, const char* node, size_t nodecnt, const char* service, size_t svccnt,
                fi_addr_t* fi_addr, uint64_t flags, void* ctx) -> int {
        if (!av || !node || !service) return -FI_EINVAL;
        return guarded([&] {
          return self<A>(av)->insertsym(node, nodecnt, service, svccnt, fi_addr, flags, ctx);
        });
      };
    else
      return enosys<decltype(O::insertsym)>;
  }
  static int remove(fid_av* av, fi_addr_t* fi_addr, size_t count, uint64_t flags) {
    if (!av || (!fi_addr && count)) return -FI_EINVAL;
    return guarded([&] { return self<A>(av)->remove(fi_addr, count, flags); });
  }
  static int lookup(fid_av* av, fi_addr_t fi_addr, void* addr, size_t* addrlen) {
    if (!av || !addrlen) return -FI_EINVAL;
    return guarded([&] { return self<A>(av)->lookup(fi_addr, addr, addrlen); });
  }
  static const char* straddr(fid_av* av, const void* addr, char* buf, size_t* len) {
    if (!av || !addr || !len) return nullptr;
    try {
      return self<A>(av)->straddr(addr, buf, len);
    } catch (...) {
      return nullptr;
    }
  }
  static constexpr decltype(O::av_set) av_set() {
    if constexpr (requires(A& a, fi_av_set_attr* s, fid_av_set** o) { a.av_set(s, o, nullptr); })
      return [](fid_av* av, fi_av_set_attr* attr, fid_av_set** set, void* ctx) -> int {
        if (!av || !attr || !set) return -FI_EINVAL;
        return guarded([&] { return self<A>(av)->av_set(attr, set, ctx); });
      };
    else
      return enosys<decltype(O::av_set)>;
  }
};

template <class A>
inline fi_ops_av ops_av = {
    .size = sizeof(fi_ops_av),
    .insert = AvSlots<A>::insert,
    .insertsvc = AvSlots<A>::insertsvc(),
    .insertsym = AvSlots<A>::insertsym(),
    .remove = AvSlots<A>::remove,
    .lookup = AvSlots<A>::lookup,
    .straddr = AvSlots<A>::straddr,
    .av_set = AvSlots<A>::av_set(),
};

// ---- fi_ops_eq -------------------------------------------------------------------------------

template <class Q>
struct EqSlots {
  static ssize_t read(fid_eq* eq, uint32_t* event, void* buf, size_t len, uint64_t flags) {
    if (!eq) return -FI_EINVAL;
    return guarded([&]() -> ssize_t { return self<Q>(eq)->read(event, buf, len, flags); });
  }
  static ssize_t readerr(fid_eq* eq, fi_eq_err_entry* buf, uint64_t flags) {
    if (!eq || !buf) return -FI_EINVAL;
    return guarded([&]() -> ssize_t { return self<Q>(eq)->readerr(buf, flags); });
  }
  static ssize_t write(fid_eq* eq, uint32_t event, const void* buf, size_t len, uint64_t flags) {
    if (!eq || (!buf && len)) return -FI_EINVAL;
    return guarded([&]() -> ssize_t { return self<Q>(eq)->write(event, buf, len, flags); });
  }
  static ssize_t sread(fid_eq* eq, uint32_t* event, void* buf, size_t len, int timeout,
                       uint64_t flags) {
    if (!eq) return -FI_EINVAL;
    return guarded(
        [&]() -> ssize_t { return self<Q>(eq)->sread(event, buf, len, timeout, flags); });
  }
  static const char* strerror(fid_eq*, int prov_errno, const void*, char* buf, size_t len) {
    return prov_strerror(prov_errno, buf, len);
  }
};

template <class Q>
inline fi_ops_eq ops_eq = {
    .size = sizeof(fi_ops_eq),
    .read = EqSlots<Q>::read,
    .readerr = EqSlots<Q>::readerr,
    .write = EqSlots<Q>::write,
    .sread = EqSlots<Q>::sread,
    .strerror = EqSlots<Q>::strerror,
};

}  // namespace pollfab::core
