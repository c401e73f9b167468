// fi_ops_fabric (fi_fabric(3)) built from a fabric class F by the mechanism of lib/core/ops.hpp.
// Members (absent: -FI_ENOSYS):
//     int open_domain(fi_info* info, fid_domain** dom, uint64_t flags, void* context);
//         fi_domain and fi_domain2 (required)
//     int open_passive_ep(fi_info* info, fid_pep** pep, void* context);   fi_passive_ep
//     int eq_open(fi_eq_attr* attr, fid_eq** eq, void* context);         fi_eq_open
//     int wait_open(fi_wait_attr* attr, fid_wait** waitset);             fi_wait_open
//     int trywait(fid** fids, int count);                                fi_trywait
// Control path: guarded (exceptions become -FI_ENOMEM / -FI_EOTHER); null out-pointers are
// -FI_EINVAL at the slot.
#pragma once
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include "lib/core/ops.hpp"

namespace pollfab::core {

// ---- fi_ops_fabric ---------------------------------------------------------------------------

template <class F>
struct FabricSlots {
  using O = fi_ops_fabric;
  static int domain2(fid_fabric* f, fi_info* info, fid_domain** dom, uint64_t flags, void* ctx) {
    if (!f || !info || !dom) return -FI_EINVAL;
    return guarded([&] { return self<F>(f)->open_domain(info, dom, flags, ctx); });
  }
  static int domain(fid_fabric* f, fi_info* info, fid_domain** dom, void* ctx) {
    return domain2(f, info, dom, 0, ctx);
  }
  static constexpr decltype(O::passive_ep) passive_ep() {
    if constexpr (requires(F& x, fi_info* i, fid_pep** p) { x.open_passive_ep(i, p, nullptr); })
      return [](fid_fabric* f, fi_info* info, fid_pep** pep, void* ctx) -> int {
        if (!f || !info || !pep) return -FI_EINVAL;
        return guarded([&] { return self<F>(f)->open_passive_ep(info, pep, ctx); });
      };
    else
      return enosys<decltype(O::passive_ep)>;
  }
  static constexpr decltype(O::eq_open) eq_open() {
    if constexpr (requires(F& x, fi_eq_attr* a, fid_eq** e) { x.eq_open(a, e, nullptr); })
      return [](fid_fabric* f, fi_eq_attr* attr, fid_eq** eq, void* ctx) -> int {
        if (!f || !eq) return -FI_EINVAL;
        return guarded([&] { return self<F>(f)->eq_open(attr, eq, ctx); });
      };
    else
      return enosys<decltype(O::eq_open)>;
  }
  static constexpr decltype(O::wait_open) wait_open() {
    if constexpr (requires(F& x, fi_wait_attr* a, fid_wait** w) { x.wait_open(a, w); })
      return [](fid_fabric* f, fi_wait_attr* attr, fid_wait** w) -> int {
        if (!f || !w) return -FI_EINVAL;
        return guarded([&] { return self<F>(f)->wait_open(attr, w); });
      };
    else
      return enosys<decltype(O::wait_open)>;
  }
  static constexpr decltype(O::trywait) trywait() {
    if constexpr (requires(F& x, fid** fids) { x.trywait(fids, 0); })
      return [](fid_fabric* f, fid** fids, int count) -> int {
        if (!f || (!fids && count)) return -FI_EINVAL;
        return guarded([&] { return self<F>(f)->trywait(fids, count); });
      };
    else
      return enosys<decltype(O::trywait)>;
  }
};

template <class F>
inline fi_ops_fabric ops_fabric = {
    .size = sizeof(fi_ops_fabric),
    .domain = FabricSlots<F>::domain,
    .passive_ep = FabricSlots<F>::passive_ep(),
    .eq_open = FabricSlots<F>::eq_open(),
    .wait_open = FabricSlots<F>::wait_open(),
    .trywait = FabricSlots<F>::trywait(),
    .domain2 = FabricSlots<F>::domain2,
};

// Points the fabric fid's table at F's. Call from F's constructor.
template <class F>
void install_fabric_ops(fid_fabric& fid) noexcept {
  fid.ops = &ops_fabric<F>;
}

}  // namespace pollfab::core
