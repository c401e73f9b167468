// fi_ops tables of TransportEndpoint: thin trampolines from the C ABI (fid_ep*) to the
// endpoint's noexcept data-path methods. One indirect call (the application's) per operation.
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_atomic.h>

#include "providers/common/endpoint.hpp"

namespace pollfab::providers {
namespace {

inline TransportEndpoint* E(fid_ep* ep) noexcept { return core::Object::as<TransportEndpoint>(ep); }
inline TransportEndpoint* E(fid_t f) noexcept { return core::Object::as<TransportEndpoint>(f); }

// --- fi_msg(3)
ssize_t m_recv(fid_ep* ep, void* buf, size_t len, void*, fi_addr_t src, void* ctx) {
  iovec iov{buf, len};
  return E(ep)->post_recv(&iov, 1, src, ctx, 0, 0, E(ep)->rx_op_flags(), false);
}
ssize_t m_recvv(fid_ep* ep, const iovec* iov, void**, size_t count, fi_addr_t src, void* ctx) {
  return E(ep)->post_recv(iov, count, src, ctx, 0, 0, E(ep)->rx_op_flags(), false);
}
ssize_t m_recvmsg(fid_ep* ep, const fi_msg* msg, uint64_t flags) {
  if (!msg) return -FI_EINVAL;
  return E(ep)->post_recv(msg->msg_iov, msg->iov_count, msg->addr, msg->context, 0, 0, flags, false);
}
ssize_t m_send(fid_ep* ep, const void* buf, size_t len, void*, fi_addr_t dest, void* ctx) {
  iovec iov{const_cast<void*>(buf), len};
  return E(ep)->post_send(&iov, 1, dest, ctx, 0, 0, E(ep)->tx_op_flags(), false);
}
ssize_t m_sendv(fid_ep* ep, const iovec* iov, void**, size_t count, fi_addr_t dest, void* ctx) {
  return E(ep)->post_send(iov, count, dest, ctx, 0, 0, E(ep)->tx_op_flags(), false);
}
ssize_t m_sendmsg(fid_ep* ep, const fi_msg* msg, uint64_t flags) {
  if (!msg) return -FI_EINVAL;
  return E(ep)->post_send(msg->msg_iov, msg->iov_count, msg->addr, msg->context, msg->data, 0,
                          flags, false);
}
ssize_t m_inject(fid_ep* ep, const void* buf, size_t len, fi_addr_t dest) {
  iovec iov{const_cast<void*>(buf), len};
  return E(ep)->post_send(&iov, 1, dest, nullptr, 0, 0, FI_INJECT, false, true);
}
ssize_t m_senddata(fid_ep* ep, const void* buf, size_t len, void*, uint64_t data, fi_addr_t dest,
                   void* ctx) {
  iovec iov{const_cast<void*>(buf), len};
  return E(ep)->post_send(&iov, 1, dest, ctx, data, 0, E(ep)->tx_op_flags() | FI_REMOTE_CQ_DATA,
                          false);
}
ssize_t m_injectdata(fid_ep* ep, const void* buf, size_t len, uint64_t data, fi_addr_t dest) {
  iovec iov{const_cast<void*>(buf), len};
  return E(ep)->post_send(&iov, 1, dest, nullptr, data, 0, FI_INJECT | FI_REMOTE_CQ_DATA, false, true);
}

fi_ops_msg g_msg_ops = {
    .size = sizeof(fi_ops_msg),
    .recv = m_recv,
    .recvv = m_recvv,
    .recvmsg = m_recvmsg,
    .send = m_send,
    .sendv = m_sendv,
    .sendmsg = m_sendmsg,
    .inject = m_inject,
    .senddata = m_senddata,
    .injectdata = m_injectdata,
};

// --- fi_tagged(3)
ssize_t t_recv(fid_ep* ep, void* buf, size_t len, void*, fi_addr_t src, uint64_t tag,
               uint64_t ignore, void* ctx) {
  iovec iov{buf, len};
  return E(ep)->post_recv(&iov, 1, src, ctx, tag, ignore, E(ep)->rx_op_flags(), true);
}
ssize_t t_recvv(fid_ep* ep, const iovec* iov, void**, size_t count, fi_addr_t src, uint64_t tag,
                uint64_t ignore, void* ctx) {
  return E(ep)->post_recv(iov, count, src, ctx, tag, ignore, E(ep)->rx_op_flags(), true);
}
ssize_t t_recvmsg(fid_ep* ep, const fi_msg_tagged* msg, uint64_t flags) {
  if (!msg) return -FI_EINVAL;
  return E(ep)->post_recv(msg->msg_iov, msg->iov_count, msg->addr, msg->context, msg->tag,
                          msg->ignore, flags, true);
}
ssize_t t_send(fid_ep* ep, const void* buf, size_t len, void*, fi_addr_t dest, uint64_t tag,
               void* ctx) {
  iovec iov{const_cast<void*>(buf), len};
  return E(ep)->post_send(&iov, 1, dest, ctx, 0, tag, E(ep)->tx_op_flags(), true);
}
ssize_t t_sendv(fid_ep* ep, const iovec* iov, void**, size_t count, fi_addr_t dest, uint64_t tag,
                void* ctx) {
  return E(ep)->post_send(iov, count, dest, ctx, 0, tag, E(ep)->tx_op_flags(), true);
}
ssize_t t_sendmsg(fid_ep* ep, const fi_msg_tagged* msg, uint64_t flags) {
  if (!msg) return -FI_EINVAL;
  return E(ep)->post_send(msg->msg_iov, msg->iov_count, msg->addr, msg->context, msg->data,
                          msg->tag, flags, true);
}
ssize_t t_inject(fid_ep* ep, const void* buf, size_t len, fi_addr_t dest, uint64_t tag) {
  iovec iov{const_cast<void*>(buf), len};
  return E(ep)->post_send(&iov, 1, dest, nullptr, 0, tag, FI_INJECT, true, true);
}
ssize_t t_senddata(fid_ep* ep, const void* buf, size_t len, void*, uint64_t data, fi_addr_t dest,
                   uint64_t tag, void* ctx) {
  iovec iov{const_cast<void*>(buf), len};
  return E(ep)->post_send(&iov, 1, dest, ctx, data, tag, E(ep)->tx_op_flags() | FI_REMOTE_CQ_DATA,
                          true);
}
ssize_t t_injectdata(fid_ep* ep, const void* buf, size_t len, uint64_t data, fi_addr_t dest,
                     uint64_t tag) {
  iovec iov{const_cast<void*>(buf), len};
  return E(ep)->post_send(&iov, 1, dest, nullptr, data, tag, FI_INJECT | FI_REMOTE_CQ_DATA, true, true);
}

fi_ops_tagged g_tagged_ops = {
    .size = sizeof(fi_ops_tagged),
    .recv = t_recv,
    .recvv = t_recvv,
    .recvmsg = t_recvmsg,
    .send = t_send,
    .sendv = t_sendv,
    .sendmsg = t_sendmsg,
    .inject = t_inject,
    .senddata = t_senddata,
    .injectdata = t_injectdata,
};

// --- fi_endpoint(3) ops and fi_cm(3)
ssize_t e_cancel(fid_t f, void* ctx) { return E(f)->cancel(ctx); }
int e_getopt(fid_t, int level, int, void*, size_t*) {
  return level == FI_OPT_ENDPOINT ? -FI_ENOPROTOOPT : -FI_ENOPROTOOPT;
}
int e_setopt(fid_t, int level, int, const void*, size_t) { return -FI_ENOPROTOOPT; }

fi_ops_ep g_ep_ops = {
    .size = sizeof(fi_ops_ep),
    .cancel = e_cancel,
    .getopt = e_getopt,
    .setopt = e_setopt,
    .tx_ctx = PF_ENOSYS(fi_ops_ep, tx_ctx),
    .rx_ctx = PF_ENOSYS(fi_ops_ep, rx_ctx),
    .rx_size_left = PF_ENOSYS(fi_ops_ep, rx_size_left),
    .tx_size_left = PF_ENOSYS(fi_ops_ep, tx_size_left),
};

int c_getname(fid_t f, void* addr, size_t* addrlen) { return E(f)->getname(addr, addrlen); }
int c_setname(fid_t f, void* addr, size_t addrlen) {
  if (!addr) return -FI_EINVAL;
  return E(f)->setname(addr, addrlen);
}

fi_ops_cm g_cm_ops = {
    .size = sizeof(fi_ops_cm),
    .setname = c_setname,
    .getname = c_getname,
    .getpeer = PF_ENOSYS(fi_ops_cm, getpeer),
    .connect = PF_ENOSYS(fi_ops_cm, connect),
    .listen = PF_ENOSYS(fi_ops_cm, listen),
    .accept = PF_ENOSYS(fi_ops_cm, accept),
    .reject = PF_ENOSYS(fi_ops_cm, reject),
    .shutdown = PF_ENOSYS(fi_ops_cm, shutdown),
    .join = PF_ENOSYS(fi_ops_cm, join),
};

// RMA and atomics arrive with their issue; until then every call is -FI_ENOSYS (never a
// null slot an application could jump through).
fi_ops_rma g_rma_ops = {
    .size = sizeof(fi_ops_rma),
    .read = PF_ENOSYS(fi_ops_rma, read),
    .readv = PF_ENOSYS(fi_ops_rma, readv),
    .readmsg = PF_ENOSYS(fi_ops_rma, readmsg),
    .write = PF_ENOSYS(fi_ops_rma, write),
    .writev = PF_ENOSYS(fi_ops_rma, writev),
    .writemsg = PF_ENOSYS(fi_ops_rma, writemsg),
    .inject = PF_ENOSYS(fi_ops_rma, inject),
    .writedata = PF_ENOSYS(fi_ops_rma, writedata),
    .injectdata = PF_ENOSYS(fi_ops_rma, injectdata),
};

fi_ops_atomic g_atomic_ops = {
    .size = sizeof(fi_ops_atomic),
    .write = PF_ENOSYS(fi_ops_atomic, write),
    .writev = PF_ENOSYS(fi_ops_atomic, writev),
    .writemsg = PF_ENOSYS(fi_ops_atomic, writemsg),
    .inject = PF_ENOSYS(fi_ops_atomic, inject),
    .readwrite = PF_ENOSYS(fi_ops_atomic, readwrite),
    .readwritev = PF_ENOSYS(fi_ops_atomic, readwritev),
    .readwritemsg = PF_ENOSYS(fi_ops_atomic, readwritemsg),
    .compwrite = PF_ENOSYS(fi_ops_atomic, compwrite),
    .compwritev = PF_ENOSYS(fi_ops_atomic, compwritev),
    .compwritemsg = PF_ENOSYS(fi_ops_atomic, compwritemsg),
    .writevalid = PF_ENOSYS(fi_ops_atomic, writevalid),
    .readwritevalid = PF_ENOSYS(fi_ops_atomic, readwritevalid),
    .compwritevalid = PF_ENOSYS(fi_ops_atomic, compwritevalid),
};

}  // namespace

void install_endpoint_ops(fid_ep* ep) noexcept {
  ep->ops = &g_ep_ops;
  ep->cm = &g_cm_ops;
  ep->msg = &g_msg_ops;
  ep->tagged = &g_tagged_ops;
  ep->rma = &g_rma_ops;
  ep->atomic = &g_atomic_ops;
  ep->collective = nullptr;
}

}  // namespace pollfab::providers
