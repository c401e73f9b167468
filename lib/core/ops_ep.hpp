// All of an endpoint's OFI ops tables (fi_endpoint(3), fi_cm(3) and the data tables of
// ops_msg.hpp and ops_rma.hpp) built from an endpoint class E by the mechanism of
// lib/core/ops.hpp, and install_endpoint_ops<E>() that points a fid_ep at them (call it from
// E's constructor).
//
// fi_ops_ep, each slot on its own (absent member: -FI_ENOSYS):
//     ssize_t cancel(void* context) noexcept;                       fi_cancel
//     int getopt(int level, int name, void* val, size_t* len);      fi_getopt
//     int setopt(int level, int name, const void* val, size_t len); fi_setopt
//     int tx_ctx(int index, fi_tx_attr*, fid_ep**, void* context);  fi_tx_context
//     int rx_ctx(int index, fi_rx_attr*, fid_ep**, void* context);  fi_rx_context
//     ssize_t tx_size_left() noexcept;  ssize_t rx_size_left() noexcept;
// fi_ops_cm (endpoints and passive endpoints), each slot on its own:
//     int setname(const void* addr, size_t len);   int getname(void* addr, size_t* len);
//     int getpeer(void* addr, size_t* len);
//     int connect(const void* addr, const void* param, size_t paramlen);
//     int listen();   int accept(const void* param, size_t paramlen);
//     int reject(fid_t handle, const void* param, size_t paramlen);
//     int shutdown(uint64_t flags);
//     int join(const void* addr, uint64_t flags, fid_mc** mc, void* context);
// Control-path members may throw (guarded: -FI_ENOMEM / -FI_EOTHER). Null pointers the spec
// requires (getname's addrlen, setname's addr, ...) are -FI_EINVAL before the member runs.
// fi_ops_collective: every slot -FI_ENOSYS (no provider offers FI_COLLECTIVE).
#pragma once
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_endpoint.h>

#include "lib/core/ops.hpp"
#include "lib/core/ops_msg.hpp"
#include "lib/core/ops_rma.hpp"

namespace pollfab::core {

// ---- fi_ops_ep -------------------------------------------------------------------------------

template <class E>
struct EpSlots {
  using O = fi_ops_ep;
  static constexpr decltype(O::cancel) cancel() {
    if constexpr (requires(E& e, void* c) { e.cancel(c); }) {
      static_assert(noexcept(std::declval<E&>().cancel(nullptr)), "cancel must be noexcept");
      return [](fid_t f, void* ctx) -> ssize_t { return self<E>(f)->cancel(ctx); };
    } else {
      return enosys<decltype(O::cancel)>;
    }
  }
  static constexpr decltype(O::getopt) getopt() {
    if constexpr (requires(E& e, void* v, size_t* l) { e.getopt(0, 0, v, l); })
      return [](fid_t f, int level, int name, void* val, size_t* len) -> int {
        if (!val || !len) return -FI_EINVAL;
        return guarded([&] { return self<E>(f)->getopt(level, name, val, len); });
      };
    else
      return enosys<decltype(O::getopt)>;
  }
  static constexpr decltype(O::setopt) setopt() {
    if constexpr (requires(E& e, const void* v) { e.setopt(0, 0, v, size_t{}); })
      return [](fid_t f, int level, int name, const void* val, size_t len) -> int {
        if (!val) return -FI_EINVAL;
        return guarded([&] { return self<E>(f)->setopt(level, name, val, len); });
      };
    else
      return enosys<decltype(O::setopt)>;
  }
  static constexpr decltype(O::tx_ctx) tx_ctx() {
    if constexpr (requires(E& e, fi_tx_attr* a, fid_ep** p) { e.tx_ctx(0, a, p, nullptr); })
      return [](fid_ep* f, int index, fi_tx_attr* attr, fid_ep** ep, void* ctx) -> int {
        if (!ep) return -FI_EINVAL;
        return guarded([&] { return self<E>(f)->tx_ctx(index, attr, ep, ctx); });
      };
    else
      return enosys<decltype(O::tx_ctx)>;
  }
  static constexpr decltype(O::rx_ctx) rx_ctx() {
    if constexpr (requires(E& e, fi_rx_attr* a, fid_ep** p) { e.rx_ctx(0, a, p, nullptr); })
      return [](fid_ep* f, int index, fi_rx_attr* attr, fid_ep** ep, void* ctx) -> int {
        if (!ep) return -FI_EINVAL;
        return guarded([&] { return self<E>(f)->rx_ctx(index, attr, ep, ctx); });
      };
    else
      return enosys<decltype(O::rx_ctx)>;
  }
  static constexpr decltype(O::rx_size_left) rx_size_left() {
    if constexpr (requires(E& e) { e.rx_size_left(); }) {
      static_assert(noexcept(std::declval<E&>().rx_size_left()), "rx_size_left must be noexcept");
      return [](fid_ep* f) -> ssize_t { return self<E>(f)->rx_size_left(); };
    } else {
      return enosys<decltype(O::rx_size_left)>;
    }
  }
  static constexpr decltype(O::tx_size_left) tx_size_left() {
    if constexpr (requires(E& e) { e.tx_size_left(); }) {
      static_assert(noexcept(std::declval<E&>().tx_size_left()), "tx_size_left must be noexcept");
      return [](fid_ep* f) -> ssize_t { return self<E>(f)->tx_size_left(); };
    } else {
      return enosys<decltype(O::tx_size_left)>;
    }
  }
};

template <class E>
inline fi_ops_ep ops_ep = {
    .size = sizeof(fi_ops_ep),
    .cancel = EpSlots<E>::cancel(),
    .getopt = EpSlots<E>::getopt(),
    .setopt = EpSlots<E>::setopt(),
    .tx_ctx = EpSlots<E>::tx_ctx(),
    .rx_ctx = EpSlots<E>::rx_ctx(),
    .rx_size_left = EpSlots<E>::rx_size_left(),
    .tx_size_left = EpSlots<E>::tx_size_left(),
};

// ---- fi_ops_cm -------------------------------------------------------------------------------

template <class E>
struct CmSlots {
  using O = fi_ops_cm;
  static constexpr decltype(O::setname) setname() {
    if constexpr (requires(E& e, const void* a) { e.setname(a, size_t{}); })
      return [](fid_t f, void* addr, size_t len) -> int {
        if (!addr) return -FI_EINVAL;
        return guarded([&] { return self<E>(f)->setname(addr, len); });
      };
    else
      return enosys<decltype(O::setname)>;
  }
  static constexpr decltype(O::getname) getname() {
    if constexpr (requires(E& e, void* a, size_t* l) { e.getname(a, l); })
      return [](fid_t f, void* addr, size_t* len) -> int {
        if (!len) return -FI_EINVAL;
        return guarded([&] { return self<E>(f)->getname(addr, len); });
      };
    else
      return enosys<decltype(O::getname)>;
  }
  static constexpr decltype(O::getpeer) getpeer() {
    if constexpr (requires(E& e, void* a, size_t* l) { e.getpeer(a, l); })
      return [](fid_ep* f, void* addr, size_t* len) -> int {
        if (!len) return -FI_EINVAL;
        return guarded([&] { return self<E>(f)->getpeer(addr, len); });
      };
    else
      return enosys<decltype(O::getpeer)>;
  }
  static constexpr decltype(O::connect) connect() {
    if constexpr (requires(E& e, const void* p) { e.connect(p, p, size_t{}); })
      return [](fid_ep* f, const void* addr, const void* param, size_t paramlen) -> int {
        return guarded([&] { return self<E>(f)->connect(addr, param, paramlen); });
      };
    else
      return enosys<decltype(O::connect)>;
  }
  static constexpr decltype(O::listen) listen() {
    if constexpr (requires(E& e) { e.listen(); })
      return [](fid_pep* f) -> int { return guarded([&] { return self<E>(f)->listen(); }); };
    else
      return enosys<decltype(O::listen)>;
  }
  static constexpr decltype(O::accept) accept() {
    if constexpr (requires(E& e, const void* p) { e.accept(p, size_t{}); })
      return [](fid_ep* f, const void* param, size_t paramlen) -> int {
        return guarded([&] { return self<E>(f)->accept(param, paramlen); });
      };
    else
      return enosys<decltype(O::accept)>;
  }
  static constexpr decltype(O::reject) reject() {
    if constexpr (requires(E& e, fid_t h, const void* p) { e.reject(h, p, size_t{}); })
      return [](fid_pep* f, fid_t handle, const void* param, size_t paramlen) -> int {
        return guarded([&] { return self<E>(f)->reject(handle, param, paramlen); });
      };
    else
      return enosys<decltype(O::reject)>;
  }
  static constexpr decltype(O::shutdown) shutdown() {
    if constexpr (requires(E& e) { e.shutdown(uint64_t{}); })
      return [](fid_ep* f, uint64_t flags) -> int {
        return guarded([&] { return self<E>(f)->shutdown(flags); });
      };
    else
      return enosys<decltype(O::shutdown)>;
  }
  static constexpr decltype(O::join) join() {
    if constexpr (requires(E& e, const void* a, fid_mc** mc) { e.join(a, uint64_t{}, mc, a); })
      return [](fid_ep* f, const void* addr, uint64_t flags, fid_mc** mc, void* ctx) -> int {
        if (!mc) return -FI_EINVAL;
        return guarded([&] { return self<E>(f)->join(addr, flags, mc, ctx); });
      };
    else
      return enosys<decltype(O::join)>;
  }
};

template <class E>
inline fi_ops_cm ops_cm = {
    .size = sizeof(fi_ops_cm),
    .setname = CmSlots<E>::setname(),
    .getname = CmSlots<E>::getname(),
    .getpeer = CmSlots<E>::getpeer(),
    .connect = CmSlots<E>::connect(),
    .listen = CmSlots<E>::listen(),
    .accept = CmSlots<E>::accept(),
    .reject = CmSlots<E>::reject(),
    .shutdown = CmSlots<E>::shutdown(),
    .join = CmSlots<E>::join(),
};

// ---- fi_ops_collective (never offered) -------------------------------------------------------

inline fi_ops_collective ops_collective_none = {
    .size = sizeof(fi_ops_collective),
    .barrier = enosys<decltype(fi_ops_collective::barrier)>,
    .broadcast = enosys<decltype(fi_ops_collective::broadcast)>,
    .alltoall = enosys<decltype(fi_ops_collective::alltoall)>,
    .allreduce = enosys<decltype(fi_ops_collective::allreduce)>,
    .allgather = enosys<decltype(fi_ops_collective::allgather)>,
    .reduce_scatter = enosys<decltype(fi_ops_collective::reduce_scatter)>,
    .reduce = enosys<decltype(fi_ops_collective::reduce)>,
    .scatter = enosys<decltype(fi_ops_collective::scatter)>,
    .gather = enosys<decltype(fi_ops_collective::gather)>,
    .msg = enosys<decltype(fi_ops_collective::msg)>,
    .barrier2 = enosys<decltype(fi_ops_collective::barrier2)>,
};

// Points every ops table of the endpoint fid at E's (the generic fi_ops stay as installed by
// the object's constructor). Call from E's constructor.
template <class E>
void install_endpoint_ops(fid_ep& fid) noexcept {
  fid.ops = &ops_ep<E>;
  fid.cm = &ops_cm<E>;
  fid.msg = &ops_msg<E>;
  fid.tagged = &ops_tagged<E>;
  fid.rma = &ops_rma<E>;
  fid.atomic = &ops_atomic<E>;
  fid.collective = &ops_collective_none;
}

}  // namespace pollfab::core
