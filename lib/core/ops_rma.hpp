// fi_ops_rma and fi_ops_atomic (fi_rma(3), fi_atomic(3)) built from an endpoint class E.
//
// RMA (concept RmaEndpoint; without it every slot is -FI_ENOSYS):
//     ssize_t rma_read(const fi_msg_rma& m, uint64_t flags) noexcept;
//     ssize_t rma_write(const fi_msg_rma& m, uint64_t flags, bool inject) noexcept;
//     uint64_t tx_op_flags() const noexcept;
//   fi_read/readv/write/writev use tx_op_flags(), fi_writedata adds FI_REMOTE_CQ_DATA;
//   fi_readmsg/writemsg pass the caller's flags (null msg: -FI_EINVAL);
//   fi_inject_write / fi_inject_writedata: FI_INJECT (| FI_REMOTE_CQ_DATA), inject = true (no
//   completion is ever written).
//
// Atomics (concept AtomicEndpoint; without it every slot is -FI_ENOSYS):
//     ssize_t atomic_write(const fi_msg_atomic& m, uint64_t flags, bool inject) noexcept;
//     ssize_t atomic_fetch(const fi_msg_atomic& m, fi_ioc* res, void** res_desc,
//                          size_t res_count, uint64_t flags) noexcept;
//     ssize_t atomic_compare(const fi_msg_atomic& m, const fi_ioc* cmp, void** cmp_desc,
//                            size_t cmp_count, fi_ioc* res, void** res_desc, size_t res_count,
//                            uint64_t flags) noexcept;
//     int atomic_valid(AtomicKind kind, fi_datatype dt, fi_op op, size_t* count) noexcept;
//   The single-buffer calls (fi_atomic, fi_fetch_atomic, fi_compare_atomic, fi_inject_atomic)
//   become a one-entry fi_msg_atomic whose rma_ioc count equals the element count.
// The mechanism: lib/core/ops.hpp.
#pragma once
#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>

#include <concepts>

#include "lib/core/ops.hpp"

namespace pollfab::core {

// Which atomic call fi_atomicvalid / fi_fetch_atomicvalid / fi_compare_atomicvalid asks about.
enum class AtomicKind : uint8_t { Write, Fetch, Compare };

template <class E>
concept RmaEndpoint = requires(E& e, const E& ce, const fi_msg_rma& m) {
  { e.rma_read(m, uint64_t{}) } noexcept -> std::same_as<ssize_t>;
  { e.rma_write(m, uint64_t{}, bool{}) } noexcept -> std::same_as<ssize_t>;
  { ce.tx_op_flags() } noexcept -> std::same_as<uint64_t>;
};

template <class E>
concept AtomicEndpoint = requires(E& e, const E& ce, const fi_msg_atomic& m, fi_ioc* r,
                                  const fi_ioc* c, void** d, size_t n, size_t* cnt) {
  { e.atomic_write(m, uint64_t{}, bool{}) } noexcept -> std::same_as<ssize_t>;
  { e.atomic_fetch(m, r, d, n, uint64_t{}) } noexcept -> std::same_as<ssize_t>;
  { e.atomic_compare(m, c, d, n, r, d, n, uint64_t{}) } noexcept -> std::same_as<ssize_t>;
  { e.atomic_valid(AtomicKind::Write, FI_INT8, FI_SUM, cnt) } noexcept -> std::same_as<int>;
  { ce.tx_op_flags() } noexcept -> std::same_as<uint64_t>;
};

// ---- fi_ops_rma ------------------------------------------------------------------------------

template <class E>
struct RmaSlots {
  static E* ep(fid_ep* f) noexcept { return self<E>(f); }
  static ssize_t one(fid_ep* f, bool write, const iovec* iov, void** desc, size_t count,
                     fi_addr_t peer, uint64_t addr, uint64_t key, void* ctx, uint64_t data,
                     uint64_t flags, bool inject) noexcept {
    if (!iov && count) return -FI_EINVAL;
    size_t len = 0;
    for (size_t i = 0; i < count; ++i) len += iov[i].iov_len;
    fi_rma_iov r{addr, len, key};
    fi_msg_rma m{iov, desc, count, peer, &r, 1, ctx, data};
    return write ? ep(f)->rma_write(m, flags, inject) : ep(f)->rma_read(m, flags);
  }
  static uint64_t txf(fid_ep* f) noexcept { return ep(f)->tx_op_flags(); }

  static ssize_t read(fid_ep* f, void* buf, size_t len, void* desc, fi_addr_t src, uint64_t addr,
                      uint64_t key, void* ctx) {
    iovec iov{buf, len};
    return one(f, false, &iov, &desc, 1, src, addr, key, ctx, 0, txf(f), false);
  }
  static ssize_t readv(fid_ep* f, const iovec* iov, void** desc, size_t count, fi_addr_t src,
                       uint64_t addr, uint64_t key, void* ctx) {
    return one(f, false, iov, desc, count, src, addr, key, ctx, 0, txf(f), false);
  }
  static ssize_t readmsg(fid_ep* f, const fi_msg_rma* m, uint64_t flags) {
    if (!m) return -FI_EINVAL;
    return ep(f)->rma_read(*m, flags);
  }
  static ssize_t write(fid_ep* f, const void* buf, size_t len, void* desc, fi_addr_t dest,
                       uint64_t addr, uint64_t key, void* ctx) {
    iovec iov{const_cast<void*>(buf), len};
    return one(f, true, &iov, &desc, 1, dest, addr, key, ctx, 0, txf(f), false);
  }
  static ssize_t writev(fid_ep* f, const iovec* iov, void** desc, size_t count, fi_addr_t dest,
                        uint64_t addr, uint64_t key, void* ctx) {
    return one(f, true, iov, desc, count, dest, addr, key, ctx, 0, txf(f), false);
  }
  static ssize_t writemsg(fid_ep* f, const fi_msg_rma* m, uint64_t flags) {
    if (!m) return -FI_EINVAL;
    return ep(f)->rma_write(*m, flags, false);
  }
  static ssize_t inject(fid_ep* f, const void* buf, size_t len, fi_addr_t dest, uint64_t addr,
                        uint64_t key) {
    iovec iov{const_cast<void*>(buf), len};
    return one(f, true, &iov, nullptr, 1, dest, addr, key, nullptr, 0, FI_INJECT, true);
  }
  static ssize_t writedata(fid_ep* f, const void* buf, size_t len, void* desc, uint64_t data,
                           fi_addr_t dest, uint64_t addr, uint64_t key, void* ctx) {
    iovec iov{const_cast<void*>(buf), len};
    return one(f, true, &iov, &desc, 1, dest, addr, key, ctx, data, txf(f) | FI_REMOTE_CQ_DATA,
               false);
  }
  static ssize_t injectdata(fid_ep* f, const void* buf, size_t len, uint64_t data,
                            fi_addr_t dest, uint64_t addr, uint64_t key) {
    iovec iov{const_cast<void*>(buf), len};
    return one(f, true, &iov, nullptr, 1, dest, addr, key, nullptr, data,
               FI_INJECT | FI_REMOTE_CQ_DATA, true);
  }
};

template <class E>
constexpr fi_ops_rma make_ops_rma() noexcept {
  using R = fi_ops_rma;
  if constexpr (RmaEndpoint<E>) {
    using S = RmaSlots<E>;
    return {sizeof(R), S::read, S::readv, S::readmsg, S::write, S::writev, S::writemsg,
            S::inject, S::writedata, S::injectdata};
  } else {
    return {sizeof(R),
            enosys<decltype(R::read)>,     enosys<decltype(R::readv)>,
            enosys<decltype(R::readmsg)>,  enosys<decltype(R::write)>,
            enosys<decltype(R::writev)>,   enosys<decltype(R::writemsg)>,
            enosys<decltype(R::inject)>,   enosys<decltype(R::writedata)>,
            enosys<decltype(R::injectdata)>};
  }
}

template <class E>
inline fi_ops_rma ops_rma = make_ops_rma<E>();

// ---- fi_ops_atomic ---------------------------------------------------------------------------

template <class E>
struct AtomicSlots {
  static E* ep(fid_ep* f) noexcept { return self<E>(f); }
  static uint64_t txf(fid_ep* f) noexcept { return ep(f)->tx_op_flags(); }
  // A one-entry fi_msg_atomic over caller storage.
  struct One {
    fi_ioc ioc;
    fi_rma_ioc rioc;
    fi_msg_atomic msg;
    One(const void* buf, size_t count, void** desc, fi_addr_t dest, uint64_t addr, uint64_t key,
        fi_datatype dt, fi_op op, void* ctx) noexcept
        : ioc{const_cast<void*>(buf), count},
          rioc{addr, count, key},
          msg{&ioc, desc, 1, dest, &rioc, 1, dt, op, ctx, 0} {}
    One(const One&) = delete;
  };
  static fi_msg_atomic vec(const fi_ioc* iov, void** desc, size_t count, fi_addr_t dest,
                           const fi_rma_ioc* rioc, fi_datatype dt, fi_op op, void* ctx) noexcept {
    return fi_msg_atomic{iov, desc, count, dest, rioc, 1, dt, op, ctx, 0};
  }
  static size_t elems(const fi_ioc* iov, size_t count) noexcept {
    size_t n = 0;
    for (size_t i = 0; i < count; ++i) n += iov[i].count;
    return n;
  }

  static ssize_t write(fid_ep* f, const void* buf, size_t count, void* desc, fi_addr_t dest,
                       uint64_t addr, uint64_t key, fi_datatype dt, fi_op op, void* ctx) {
    One o(buf, count, &desc, dest, addr, key, dt, op, ctx);
    return ep(f)->atomic_write(o.msg, txf(f), false);
  }
  static ssize_t writev(fid_ep* f, const fi_ioc* iov, void** desc, size_t count, fi_addr_t dest,
                        uint64_t addr, uint64_t key, fi_datatype dt, fi_op op, void* ctx) {
    if (!iov && count) return -FI_EINVAL;
    fi_rma_ioc r{addr, iov ? elems(iov, count) : 0, key};
    fi_msg_atomic m = vec(iov, desc, count, dest, &r, dt, op, ctx);
    return ep(f)->atomic_write(m, txf(f), false);
  }
  static ssize_t writemsg(fid_ep* f, const fi_msg_atomic* m, uint64_t flags) {
    if (!m) return -FI_EINVAL;
    return ep(f)->atomic_write(*m, flags, false);
  }
  static ssize_t inject(fid_ep* f, const void* buf, size_t count, fi_addr_t dest, uint64_t addr,
                        uint64_t key, fi_datatype dt, fi_op op) {
    One o(buf, count, nullptr, dest, addr, key, dt, op, nullptr);
    return ep(f)->atomic_write(o.msg, FI_INJECT, true);
  }
  static ssize_t readwrite(fid_ep* f, const void* buf, size_t count, void* desc, void* result,
                           void* result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
                           fi_datatype dt, fi_op op, void* ctx) {
    One o(buf, count, &desc, dest, addr, key, dt, op, ctx);
    fi_ioc res{result, count};
    return ep(f)->atomic_fetch(o.msg, &res, &result_desc, 1, txf(f));
  }
  static ssize_t readwritev(fid_ep* f, const fi_ioc* iov, void** desc, size_t count,
                            fi_ioc* resultv, void** result_desc, size_t result_count,
                            fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt, fi_op op,
                            void* ctx) {
    if ((!iov && count) || (!resultv && result_count)) return -FI_EINVAL;
    fi_rma_ioc r{addr, iov ? elems(iov, count) : elems(resultv, result_count), key};
    fi_msg_atomic m = vec(iov, desc, count, dest, &r, dt, op, ctx);
    return ep(f)->atomic_fetch(m, resultv, result_desc, result_count, txf(f));
  }
  static ssize_t readwritemsg(fid_ep* f, const fi_msg_atomic* m, fi_ioc* resultv,
                              void** result_desc, size_t result_count, uint64_t flags) {
    if (!m) return -FI_EINVAL;
    return ep(f)->atomic_fetch(*m, resultv, result_desc, result_count, flags);
  }
  static ssize_t compwrite(fid_ep* f, const void* buf, size_t count, void* desc,
                           const void* compare, void* compare_desc, void* result,
                           void* result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
                           fi_datatype dt, fi_op op, void* ctx) {
    One o(buf, count, &desc, dest, addr, key, dt, op, ctx);
    fi_ioc cmp{const_cast<void*>(compare), count};
    fi_ioc res{result, count};
    return ep(f)->atomic_compare(o.msg, &cmp, &compare_desc, 1, &res, &result_desc, 1, txf(f));
  }
  static ssize_t compwritev(fid_ep* f, const fi_ioc* iov, void** desc, size_t count,
                            const fi_ioc* comparev, void** compare_desc, size_t compare_count,
                            fi_ioc* resultv, void** result_desc, size_t result_count,
                            fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt, fi_op op,
                            void* ctx) {
    if (!iov && count) return -FI_EINVAL;
    fi_rma_ioc r{addr, iov ? elems(iov, count) : 0, key};
    fi_msg_atomic m = vec(iov, desc, count, dest, &r, dt, op, ctx);
    return ep(f)->atomic_compare(m, comparev, compare_desc, compare_count, resultv, result_desc,
                                 result_count, txf(f));
  }
  static ssize_t compwritemsg(fid_ep* f, const fi_msg_atomic* m, const fi_ioc* comparev,
                              void** compare_desc, size_t compare_count, fi_ioc* resultv,
                              void** result_desc, size_t result_count, uint64_t flags) {
    if (!m) return -FI_EINVAL;
    return ep(f)->atomic_compare(*m, comparev, compare_desc, compare_count, resultv,
                                 result_desc, result_count, flags);
  }
  static int writevalid(fid_ep* f, fi_datatype dt, fi_op op, size_t* count) {
    return ep(f)->atomic_valid(AtomicKind::Write, dt, op, count);
  }
  static int readwritevalid(fid_ep* f, fi_datatype dt, fi_op op, size_t* count) {
    return ep(f)->atomic_valid(AtomicKind::Fetch, dt, op, count);
  }
  static int compwritevalid(fid_ep* f, fi_datatype dt, fi_op op, size_t* count) {
    return ep(f)->atomic_valid(AtomicKind::Compare, dt, op, count);
  }
};

template <class E>
constexpr fi_ops_atomic make_ops_atomic() noexcept {
  using A = fi_ops_atomic;
  if constexpr (AtomicEndpoint<E>) {
    using S = AtomicSlots<E>;
    return {sizeof(A),         S::write,      S::writev,       S::writemsg,
            S::inject,         S::readwrite,  S::readwritev,   S::readwritemsg,
            S::compwrite,      S::compwritev, S::compwritemsg, S::writevalid,
            S::readwritevalid, S::compwritevalid};
  } else {
    return {sizeof(A),
            enosys<decltype(A::write)>,          enosys<decltype(A::writev)>,
            enosys<decltype(A::writemsg)>,       enosys<decltype(A::inject)>,
            enosys<decltype(A::readwrite)>,      enosys<decltype(A::readwritev)>,
            enosys<decltype(A::readwritemsg)>,   enosys<decltype(A::compwrite)>,
            enosys<decltype(A::compwritev)>,     enosys<decltype(A::compwritemsg)>,
            enosys<decltype(A::writevalid)>,     enosys<decltype(A::readwritevalid)>,
            enosys<decltype(A::compwritevalid)>};
  }
}

template <class E>
inline fi_ops_atomic ops_atomic = make_ops_atomic<E>();

}  // namespace pollfab::core
