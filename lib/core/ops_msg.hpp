// fi_ops_msg and fi_ops_tagged (fi_msg(3), fi_tagged(3)) built from an endpoint class E that
// supplies (concept MsgEndpoint; without it every slot is -FI_ENOSYS):
//     ssize_t send(const MsgArgs& a, uint64_t flags, bool tagged, bool inject) noexcept;
//     ssize_t recv(const MsgArgs& a, uint64_t flags, bool tagged) noexcept;
//     uint64_t tx_op_flags() const noexcept;  uint64_t rx_op_flags() const noexcept;
// Every fi_send*/fi_tsend*/fi_recv*/fi_trecv* variant becomes one of the two calls:
//   - fi_send, fi_sendv, fi_senddata (and the tagged ones): flags = tx_op_flags(), plus
//     FI_REMOTE_CQ_DATA for *data; fi_recv, fi_recvv: flags = rx_op_flags() (the endpoint's
//     default op_flags, fi_endpoint(3) FI_SETOPSFLAG);
//   - fi_sendmsg / fi_recvmsg: the caller's flags (a null msg is -FI_EINVAL here);
//   - fi_inject, fi_injectdata: flags = FI_INJECT (| FI_REMOTE_CQ_DATA), inject = true: the
//     buffer is reusable at return and no completion is ever written (fi_msg(3) "fi_inject");
//     FI_INJECT in sendmsg's flags only means "copy now" (inject = false).
// A single buffer goes to the endpoint's send_one / recv_one when it has them (no iovec built);
// otherwise it becomes a one-entry iov on the trampoline's stack; desc likewise. The vector and
// msg calls with exactly one iov entry take the same path (fi_sendmsg with FI_MORE is how an
// application batches: a sender of them spent 730 instructions a message, 695 since;
// docs/performance.md item 67).
// Errors are the endpoint's either way (its send/recv and send_one/recv_one check alike).
// The mechanism and the other tables: lib/core/ops.hpp, ops_ep.hpp.
#pragma once
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include <concepts>

#include "lib/core/ops.hpp"

namespace pollfab::core {

// One shape for every send and receive (the fields of fi_msg and fi_msg_tagged).
struct MsgArgs {
  const iovec* iov = nullptr;
  void** desc = nullptr;
  size_t count = 0;
  fi_addr_t addr = FI_ADDR_UNSPEC;  // destination, or source filter of a receive
  void* context = nullptr;
  uint64_t data = 0;                // remote CQ data (valid with FI_REMOTE_CQ_DATA)
  uint64_t tag = 0;                 // tagged only
  uint64_t ignore = 0;              // tagged receives only
};

template <class E>
concept MsgEndpoint = requires(E& e, const E& ce, const MsgArgs& a) {
  { e.send(a, uint64_t{}, bool{}, bool{}) } noexcept -> std::same_as<ssize_t>;
  { e.recv(a, uint64_t{}, bool{}) } noexcept -> std::same_as<ssize_t>;
  { ce.tx_op_flags() } noexcept -> std::same_as<uint64_t>;
  { ce.rx_op_flags() } noexcept -> std::same_as<uint64_t>;
};

// ---- fi_ops_msg / fi_ops_tagged --------------------------------------------------------------

template <class E>
struct MsgSlots {
  static E* ep(fid_ep* f) noexcept { return self<E>(f); }
  // send1, recv_buf, send_iov and recv_iov are inline in each slot: the slot is the one call an
  // operation makes into the provider.
  [[gnu::always_inline]] static ssize_t send1(fid_ep* f, const void* buf, size_t len, void* desc,
                                              fi_addr_t dest, void* ctx, uint64_t data,
                                              uint64_t tag, uint64_t flags, bool tagged,
                                              bool inject) noexcept {
    // A provider with a one-buffer entry point skips the iovec and MsgArgs round trip.
    if constexpr (requires(E& e) {
                    e.send_one(buf, len, dest, ctx, data, tag, flags, tagged, inject);
                  }) {
      return ep(f)->send_one(buf, len, dest, ctx, data, tag, flags, tagged, inject);
    } else {
      iovec iov{const_cast<void*>(buf), len};
      MsgArgs a{&iov, &desc, 1, dest, ctx, data, tag, 0};
      return ep(f)->send(a, flags, tagged, inject);
    }
  }
  static ssize_t recv1(fid_ep* f, const iovec* iov, void** desc, size_t count, fi_addr_t src,
                       void* ctx, uint64_t tag, uint64_t ignore, uint64_t flags,
                       bool tagged) noexcept {
    MsgArgs a{iov, desc, count, src, ctx, 0, tag, ignore};
    return ep(f)->recv(a, flags, tagged);
  }
  // fi_recv / fi_trecv: one buffer (a provider's recv_one when it has one, as send1).
  [[gnu::always_inline]] static ssize_t recv_buf(fid_ep* f, void* buf, size_t len, void* desc,
                                                 fi_addr_t src, void* ctx, uint64_t tag,
                                                 uint64_t ignore, uint64_t flags,
                                                 bool tagged) noexcept {
    if constexpr (requires(E& e) { e.recv_one(buf, len, src, ctx, tag, ignore, 0, tagged); }) {
      return ep(f)->recv_one(buf, len, src, ctx, tag, ignore, flags, tagged);
    } else {
      iovec iov{buf, len};
      return recv1(f, &iov, &desc, 1, src, ctx, tag, ignore, flags, tagged);
    }
  }
  // The vector and msg calls: one iov entry takes recv_buf's path, anything else recv1's.
  [[gnu::always_inline]] static ssize_t recv_iov(fid_ep* f, const iovec* iov, void** desc,
                                                 size_t count, fi_addr_t src, void* ctx,
                                                 uint64_t tag, uint64_t ignore, uint64_t flags,
                                                 bool tagged) noexcept {
    if (count == 1 && iov) [[likely]]
      return recv_buf(f, iov[0].iov_base, iov[0].iov_len, desc ? desc[0] : nullptr, src, ctx,
                      tag, ignore, flags, tagged);
    return recv1(f, iov, desc, count, src, ctx, tag, ignore, flags, tagged);
  }
  // Likewise for sends: one iov entry takes send1's path.
  [[gnu::always_inline]] static ssize_t send_iov(fid_ep* f, const iovec* iov, void** desc,
                                                 size_t count, fi_addr_t dest, void* ctx,
                                                 uint64_t data, uint64_t tag, uint64_t flags,
                                                 bool tagged) noexcept {
    if (count == 1 && iov) [[likely]]
      return send1(f, iov[0].iov_base, iov[0].iov_len, desc ? desc[0] : nullptr, dest, ctx,
                   data, tag, flags, tagged, false);
    MsgArgs a{iov, desc, count, dest, ctx, data, tag, 0};
    return ep(f)->send(a, flags, tagged, false);
  }
  static uint64_t txf(fid_ep* f) noexcept { return ep(f)->tx_op_flags(); }
  static uint64_t rxf(fid_ep* f) noexcept { return ep(f)->rx_op_flags(); }

  // fi_msg(3)
  static ssize_t recv(fid_ep* f, void* buf, size_t len, void* desc, fi_addr_t src, void* ctx) {
    return recv_buf(f, buf, len, desc, src, ctx, 0, 0, rxf(f), false);
  }
  static ssize_t recvv(fid_ep* f, const iovec* iov, void** desc, size_t count, fi_addr_t src,
                       void* ctx) {
    return recv_iov(f, iov, desc, count, src, ctx, 0, 0, rxf(f), false);
  }
  static ssize_t recvmsg(fid_ep* f, const fi_msg* m, uint64_t flags) {
    if (!m) return -FI_EINVAL;
    return recv_iov(f, m->msg_iov, m->desc, m->iov_count, m->addr, m->context, 0, 0, flags,
                    false);
  }
  static ssize_t send(fid_ep* f, const void* buf, size_t len, void* desc, fi_addr_t dest,
                      void* ctx) {
    return send1(f, buf, len, desc, dest, ctx, 0, 0, txf(f), false, false);
  }
  static ssize_t sendv(fid_ep* f, const iovec* iov, void** desc, size_t count, fi_addr_t dest,
                       void* ctx) {
    return send_iov(f, iov, desc, count, dest, ctx, 0, 0, txf(f), false);
  }
  static ssize_t sendmsg(fid_ep* f, const fi_msg* m, uint64_t flags) {
    if (!m) return -FI_EINVAL;
    return send_iov(f, m->msg_iov, m->desc, m->iov_count, m->addr, m->context, m->data, 0, flags,
                    false);
  }
  static ssize_t inject(fid_ep* f, const void* buf, size_t len, fi_addr_t dest) {
    return send1(f, buf, len, nullptr, dest, nullptr, 0, 0, FI_INJECT, false, true);
  }
  static ssize_t senddata(fid_ep* f, const void* buf, size_t len, void* desc, uint64_t data,
                          fi_addr_t dest, void* ctx) {
    return send1(f, buf, len, desc, dest, ctx, data, 0, txf(f) | FI_REMOTE_CQ_DATA, false, false);
  }
  static ssize_t injectdata(fid_ep* f, const void* buf, size_t len, uint64_t data,
                            fi_addr_t dest) {
    return send1(f, buf, len, nullptr, dest, nullptr, data, 0, FI_INJECT | FI_REMOTE_CQ_DATA,
                 false, true);
  }

  // fi_tagged(3)
  static ssize_t trecv(fid_ep* f, void* buf, size_t len, void* desc, fi_addr_t src, uint64_t tag,
                       uint64_t ignore, void* ctx) {
    return recv_buf(f, buf, len, desc, src, ctx, tag, ignore, rxf(f), true);
  }
  static ssize_t trecvv(fid_ep* f, const iovec* iov, void** desc, size_t count, fi_addr_t src,
                        uint64_t tag, uint64_t ignore, void* ctx) {
    return recv_iov(f, iov, desc, count, src, ctx, tag, ignore, rxf(f), true);
  }
  static ssize_t trecvmsg(fid_ep* f, const fi_msg_tagged* m, uint64_t flags) {
    if (!m) return -FI_EINVAL;
    return recv_iov(f, m->msg_iov, m->desc, m->iov_count, m->addr, m->context, m->tag,
                    m->ignore, flags, true);
  }
  static ssize_t tsend(fid_ep* f, const void* buf, size_t len, void* desc, fi_addr_t dest,
                       uint64_t tag, void* ctx) {
    return send1(f, buf, len, desc, dest, ctx, 0, tag, txf(f), true, false);
  }
  static ssize_t tsendv(fid_ep* f, const iovec* iov, void** desc, size_t count, fi_addr_t dest,
                        uint64_t tag, void* ctx) {
    return send_iov(f, iov, desc, count, dest, ctx, 0, tag, txf(f), true);
  }
  static ssize_t tsendmsg(fid_ep* f, const fi_msg_tagged* m, uint64_t flags) {
    if (!m) return -FI_EINVAL;
    return send_iov(f, m->msg_iov, m->desc, m->iov_count, m->addr, m->context, m->data, m->tag,
                    flags, true);
  }
  static ssize_t tinject(fid_ep* f, const void* buf, size_t len, fi_addr_t dest, uint64_t tag) {
    return send1(f, buf, len, nullptr, dest, nullptr, 0, tag, FI_INJECT, true, true);
  }
  static ssize_t tsenddata(fid_ep* f, const void* buf, size_t len, void* desc, uint64_t data,
                           fi_addr_t dest, uint64_t tag, void* ctx) {
    return send1(f, buf, len, desc, dest, ctx, data, tag, txf(f) | FI_REMOTE_CQ_DATA, true, false);
  }
  static ssize_t tinjectdata(fid_ep* f, const void* buf, size_t len, uint64_t data,
                             fi_addr_t dest, uint64_t tag) {
    return send1(f, buf, len, nullptr, dest, nullptr, data, tag, FI_INJECT | FI_REMOTE_CQ_DATA,
                 true, true);
  }
};

template <class E>
constexpr fi_ops_msg make_ops_msg() noexcept {
  if constexpr (MsgEndpoint<E>) {
    using S = MsgSlots<E>;
    return {sizeof(fi_ops_msg), S::recv, S::recvv, S::recvmsg, S::send, S::sendv, S::sendmsg,
            S::inject, S::senddata, S::injectdata};
  } else {
    using M = fi_ops_msg;
    return {sizeof(M),
            enosys<decltype(M::recv)>,     enosys<decltype(M::recvv)>,
            enosys<decltype(M::recvmsg)>,  enosys<decltype(M::send)>,
            enosys<decltype(M::sendv)>,    enosys<decltype(M::sendmsg)>,
            enosys<decltype(M::inject)>,   enosys<decltype(M::senddata)>,
            enosys<decltype(M::injectdata)>};
  }
}

template <class E>
constexpr fi_ops_tagged make_ops_tagged() noexcept {
  if constexpr (MsgEndpoint<E>) {
    using S = MsgSlots<E>;
    return {sizeof(fi_ops_tagged), S::trecv, S::trecvv, S::trecvmsg, S::tsend, S::tsendv,
            S::tsendmsg, S::tinject, S::tsenddata, S::tinjectdata};
  } else {
    using T = fi_ops_tagged;
    return {sizeof(T),
            enosys<decltype(T::recv)>,     enosys<decltype(T::recvv)>,
            enosys<decltype(T::recvmsg)>,  enosys<decltype(T::send)>,
            enosys<decltype(T::sendv)>,    enosys<decltype(T::sendmsg)>,
            enosys<decltype(T::inject)>,   enosys<decltype(T::senddata)>,
            enosys<decltype(T::injectdata)>};
  }
}

template <class E>
inline fi_ops_msg ops_msg = make_ops_msg<E>();
template <class E>
inline fi_ops_tagged ops_tagged = make_ops_tagged<E>();

}  // namespace pollfab::core
