// fi_ops_domain (fi_domain(3)) and fi_ops_mr (fi_mr(3)) built from a domain class D by the
// mechanism of lib/core/ops.hpp. Members (absent: -FI_ENOSYS):
//     int av_open(fi_av_attr*, fid_av**, void* context);                  fi_av_open
//     int cq_open(fi_cq_attr*, fid_cq**, void* context);                  fi_cq_open
//     int cntr_open(fi_cntr_attr*, fid_cntr**, void* context);            fi_cntr_open
//     int open_endpoint(fi_info*, fid_ep**, uint64_t flags, void* ctx);   fi_endpoint(2)
//     int scalable_ep(fi_info*, fid_ep**, void* context);                 fi_scalable_ep
//     int poll_open(fi_poll_attr*, fid_poll**);                           fi_poll_open
//     int stx_ctx(fi_tx_attr*, fid_stx**, void* context);                 fi_stx_context
//     int srx_ctx(fi_rx_attr*, fid_ep**, void* context);                  fi_srx_context
//     int query_atomic(fi_datatype, fi_op, fi_atomic_attr*, uint64_t flags);
//     int query_collective(fi_collective_op, fi_collective_attr*, uint64_t flags);
//     int mr_reg(const iovec* iov, size_t count, uint64_t access, uint64_t offset,
//                uint64_t requested_key, uint64_t flags, fid_mr** mr, void* context);
//         fi_mr_reg, fi_mr_regv, fi_mr_regattr (regattr: iface other than FI_HMEM_SYSTEM is
//         -FI_ENOSYS; the attr's context is the MR's)
// Control path: guarded (exceptions become -FI_ENOMEM / -FI_EOTHER); null objects and
// out-pointers are -FI_EINVAL at the slot (cntr_open's attr may be null: defaults).
#pragma once
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "lib/core/ops.hpp"

namespace pollfab::core {

template <class D>
struct DomainSlots {
  using O = fi_ops_domain;
  static constexpr decltype(O::av_open) av_open() {
    if constexpr (requires(D& d, fi_av_attr* a, fid_av** o) { d.av_open(a, o, nullptr); })
      return [](fid_domain* f, fi_av_attr* attr, fid_av** av, void* ctx) -> int {
        if (!f || !attr || !av) return -FI_EINVAL;
        return guarded([&] { return self<D>(f)->av_open(attr, av, ctx); });
      };
    else
      return enosys<decltype(O::av_open)>;
  }
  static constexpr decltype(O::cq_open) cq_open() {
    if constexpr (requires(D& d, fi_cq_attr* a, fid_cq** o) { d.cq_open(a, o, nullptr); })
      return [](fid_domain* f, fi_cq_attr* attr, fid_cq** cq, void* ctx) -> int {
        if (!f || !attr || !cq) return -FI_EINVAL;
        return guarded([&] { return self<D>(f)->cq_open(attr, cq, ctx); });
      };
    else
      return enosys<decltype(O::cq_open)>;
  }
  static constexpr decltype(O::cntr_open) cntr_open() {
    if constexpr (requires(D& d, fi_cntr_attr* a, fid_cntr** o) { d.cntr_open(a, o, nullptr); })
      return [](fid_domain* f, fi_cntr_attr* attr, fid_cntr** c, void* ctx) -> int {
        if (!f || !c) return -FI_EINVAL;
        return guarded([&] { return self<D>(f)->cntr_open(attr, c, ctx); });
      };
    else
      return enosys<decltype(O::cntr_open)>;
  }
  static int endpoint2(fid_domain* f, fi_info* info, fid_ep** ep, uint64_t flags, void* ctx) {
    if (!f || !info || !ep) return -FI_EINVAL;
    return guarded([&] { return self<D>(f)->open_endpoint(info, ep, flags, ctx); });
  }
  static int endpoint(fid_domain* f, fi_info* info, fid_ep** ep, void* ctx) {
    return endpoint2(f, info, ep, 0, ctx);
  }
  static constexpr decltype(O::scalable_ep) scalable_ep() {
    if constexpr (requires(D& d, fi_info* i, fid_ep** o) { d.scalable_ep(i, o, nullptr); })
      return [](fid_domain* f, fi_info* info, fid_ep** sep, void* ctx) -> int {
        if (!f || !info || !sep) return -FI_EINVAL;
        return guarded([&] { return self<D>(f)->scalable_ep(info, sep, ctx); });
      };
    else
      return enosys<decltype(O::scalable_ep)>;
  }
  static constexpr decltype(O::poll_open) poll_open() {
    if constexpr (requires(D& d, fi_poll_attr* a, fid_poll** o) { d.poll_open(a, o); })
      return [](fid_domain* f, fi_poll_attr* attr, fid_poll** ps) -> int {
        if (!f || !ps) return -FI_EINVAL;
        return guarded([&] { return self<D>(f)->poll_open(attr, ps); });
      };
    else
      return enosys<decltype(O::poll_open)>;
  }
  static constexpr decltype(O::stx_ctx) stx_ctx() {
    if constexpr (requires(D& d, fi_tx_attr* a, fid_stx** o) { d.stx_ctx(a, o, nullptr); })
      return [](fid_domain* f, fi_tx_attr* attr, fid_stx** stx, void* ctx) -> int {
        if (!f || !stx) return -FI_EINVAL;
        return guarded([&] { return self<D>(f)->stx_ctx(attr, stx, ctx); });
      };
    else
      return enosys<decltype(O::stx_ctx)>;
  }
  static constexpr decltype(O::srx_ctx) srx_ctx() {
    if constexpr (requires(D& d, fi_rx_attr* a, fid_ep** o) { d.srx_ctx(a, o, nullptr); })
      return [](fid_domain* f, fi_rx_attr* attr, fid_ep** rx, void* ctx) -> int {
        if (!f || !rx) return -FI_EINVAL;
        return guarded([&] { return self<D>(f)->srx_ctx(attr, rx, ctx); });
      };
    else
      return enosys<decltype(O::srx_ctx)>;
  }
  static constexpr decltype(O::query_atomic) query_atomic() {
    if constexpr (requires(D& d, fi_atomic_attr* a) { d.query_atomic(FI_INT8, FI_SUM, a, 0); })
      return [](fid_domain* f, fi_datatype dt, fi_op op, fi_atomic_attr* attr,
                uint64_t flags) -> int {
        if (!f || !attr) return -FI_EINVAL;
        return guarded([&] { return self<D>(f)->query_atomic(dt, op, attr, flags); });
      };
    else
      return enosys<decltype(O::query_atomic)>;
  }
  static constexpr decltype(O::query_collective) query_collective() {
    if constexpr (requires(D& d, fi_collective_attr* a) {
                    d.query_collective(FI_BARRIER, a, 0);
                  })
      return [](fid_domain* f, fi_collective_op op, fi_collective_attr* attr,
                uint64_t flags) -> int {
        if (!f) return -FI_EINVAL;
        return guarded([&] { return self<D>(f)->query_collective(op, attr, flags); });
      };
    else
      return enosys<decltype(O::query_collective)>;
  }
};

template <class D>
inline fi_ops_domain ops_domain = {
    .size = sizeof(fi_ops_domain),
    .av_open = DomainSlots<D>::av_open(),
    .cq_open = DomainSlots<D>::cq_open(),
    .endpoint = DomainSlots<D>::endpoint,
    .scalable_ep = DomainSlots<D>::scalable_ep(),
    .cntr_open = DomainSlots<D>::cntr_open(),
    .poll_open = DomainSlots<D>::poll_open(),
    .stx_ctx = DomainSlots<D>::stx_ctx(),
    .srx_ctx = DomainSlots<D>::srx_ctx(),
    .query_atomic = DomainSlots<D>::query_atomic(),
    .query_collective = DomainSlots<D>::query_collective(),
    .endpoint2 = DomainSlots<D>::endpoint2,
};

template <class D>
struct MrSlots {
  static int regv(fid* f, const iovec* iov, size_t count, uint64_t access, uint64_t offset,
                  uint64_t key, uint64_t flags, fid_mr** mr, void* ctx) {
    if (!f || !mr || (!iov && count)) return -FI_EINVAL;
    return guarded(
        [&] { return self<D>(f)->mr_reg(iov, count, access, offset, key, flags, mr, ctx); });
  }
  static int reg(fid* f, const void* buf, size_t len, uint64_t access, uint64_t offset,
                 uint64_t key, uint64_t flags, fid_mr** mr, void* ctx) {
    iovec iov{const_cast<void*>(buf), len};
    return regv(f, &iov, 1, access, offset, key, flags, mr, ctx);
  }
  static int regattr(fid* f, const fi_mr_attr* attr, uint64_t flags, fid_mr** mr) {
    if (!attr) return -FI_EINVAL;
    if (attr->iface != FI_HMEM_SYSTEM) return -FI_ENOSYS;
    return regv(f, attr->mr_iov, attr->iov_count, attr->access, attr->offset,
                attr->requested_key, flags, mr, attr->context);
  }
};

template <class D>
inline fi_ops_mr ops_mr = {
    .size = sizeof(fi_ops_mr),
    .reg = MrSlots<D>::reg,
    .regv = MrSlots<D>::regv,
    .regattr = MrSlots<D>::regattr,
};

// Points the domain fid's tables at D's. Call from D's constructor.
template <class D>
void install_domain_ops(fid_domain& fid) noexcept {
  fid.ops = &ops_domain<D>;
  fid.mr = &ops_mr<D>;
}

}  // namespace pollfab::core
