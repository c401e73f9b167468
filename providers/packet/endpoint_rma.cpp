// TransportEndpoint's RMA and atomics (fi_rma(3), fi_atomic(3)): libfabric's message forms
// turned into transport::RmaOp, and fi_atomicvalid & co. Completions: on_completion
// (endpoint.cpp). One remote segment per call (rma_iov_limit 1); the local side may have up to
// iov_limit entries.
#include "lib/core/errors.hpp"
#include "providers/packet/domain.hpp"
#include "providers/packet/endpoint.hpp"
#include "providers/packet/rma.hpp"

namespace pollfab::providers::packet {

using transport::AtomicKind;
using transport::RmaKind;
using transport::RmaOp;

int atomic_query(fi_datatype dt, fi_op op, AtomicKind kind, size_t* size, size_t* count) noexcept {
  if (int(dt) < 0 || dt >= FI_DATATYPE_LAST || int(op) < 0 || op >= FI_ATOMIC_OP_LAST)
    return -FI_EOPNOTSUPP;
  const auto t = static_cast<transport::AtomicType>(dt);
  if (!transport::atomic_valid(static_cast<transport::AtomicOp>(op), t, kind)) return -FI_EOPNOTSUPP;
  const size_t sz = transport::atomic_size(t);
  if (size) *size = sz;
  if (count) *count = transport::kMaxAtomicBytes / sz;
  return 0;
}

int TransportDomain::query_atomic(fi_datatype dt, fi_op op, fi_atomic_attr* attr,
                                  uint64_t flags) noexcept {
  if (!attr) return -FI_EINVAL;
  if (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC)) return -FI_EBADFLAGS;
  if ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC)) return -FI_EBADFLAGS;
  const AtomicKind kind = (flags & FI_FETCH_ATOMIC)     ? AtomicKind::Fetch
                          : (flags & FI_COMPARE_ATOMIC) ? AtomicKind::Compare
                                                        : AtomicKind::Plain;
  return atomic_query(dt, op, kind, &attr->size, &attr->count);
}

int TransportEndpoint::atomic_valid(core::AtomicKind kind, fi_datatype dt, fi_op op,
                                    size_t* count) noexcept {
  const AtomicKind k = kind == core::AtomicKind::Fetch     ? AtomicKind::Fetch
                       : kind == core::AtomicKind::Compare ? AtomicKind::Compare
                                                           : AtomicKind::Plain;
  return atomic_query(dt, op, k, nullptr, count);
}

ssize_t TransportEndpoint::post_rma(RmaOp& op, fi_addr_t addr) noexcept {
  util::Guard<util::MaybeLock> g(tdom_->lock());
  op.peer = resolve(addr);
  if (op.peer == transport::kNoPeer) return no_peer_error();
  const util::Status st = engine_->rma(op);
  tdom_->link().posted(st);
  return -core::fi_errno_of(st);
}

ssize_t TransportEndpoint::rma_common(const fi_msg_rma& m, uint64_t flags, bool inject_call,
                                      RmaKind kind) noexcept {
  if (!enabled_) return -FI_EOPBADSTATE;
  if (!(caps_ & FI_RMA)) return -FI_EOPNOTSUPP;
  if (m.iov_count > transport::kMaxIov || (m.iov_count && !m.msg_iov) || m.rma_iov_count != 1 ||
      !m.rma_iov)
    return -FI_EINVAL;
  RmaOp op;
  op.kind = kind;
  uint64_t len = 0;
  for (size_t i = 0; i < m.iov_count; ++i) {
    op.iov[i] = m.msg_iov[i];
    len += m.msg_iov[i].iov_len;
  }
  if (len != m.rma_iov[0].len) return -FI_EINVAL;  // local and remote lengths must agree
  op.iov_count = static_cast<uint32_t>(m.iov_count);
  op.addr = m.rma_iov[0].addr;
  op.key = m.rma_iov[0].key;
  op.cq_data = m.data;
  op.context = m.context;
  op.flags = tx_flags(flags, inject_call);
  return post_rma(op, m.addr);
}

ssize_t TransportEndpoint::rma_read(const fi_msg_rma& m, uint64_t flags) noexcept {
  return rma_common(m, flags & ~uint64_t(FI_INJECT | FI_REMOTE_CQ_DATA), false, RmaKind::Read);
}

ssize_t TransportEndpoint::rma_write(const fi_msg_rma& m, uint64_t flags, bool inject) noexcept {
  return rma_common(m, flags, inject, RmaKind::Write);
}

namespace {

// fi_ioc entries -> iovec bytes; false if there are too many or a pointer is missing.
bool ioc_to_iov(const fi_ioc* ioc, size_t n, size_t elem, iovec* out, uint32_t& out_n,
                uint64_t& elems) noexcept {
  if (n > transport::kMaxIov || (n && !ioc)) return false;
  elems = 0;
  for (size_t i = 0; i < n; ++i) {
    out[i] = {ioc[i].addr, ioc[i].count * elem};
    elems += ioc[i].count;
  }
  out_n = static_cast<uint32_t>(n);
  return true;
}

}  // namespace

ssize_t TransportEndpoint::atomic_common(const fi_msg_atomic& m, const fi_ioc* cmp, size_t cmp_n,
                                         fi_ioc* res, size_t res_n, uint64_t flags,
                                         bool inject_call, RmaKind kind) noexcept {
  if (!enabled_) return -FI_EOPBADSTATE;
  if (!(caps_ & FI_ATOMIC)) return -FI_EOPNOTSUPP;
  const AtomicKind ak = kind == RmaKind::FetchAtomic     ? AtomicKind::Fetch
                        : kind == RmaKind::CompareAtomic ? AtomicKind::Compare
                                                         : AtomicKind::Plain;
  size_t size = 0;
  if (int rc = atomic_query(m.datatype, m.op, ak, &size, nullptr)) return rc;
  if (m.rma_iov_count != 1 || !m.rma_iov) return -FI_EINVAL;
  RmaOp op;
  op.kind = kind;
  op.atomic_op = static_cast<transport::AtomicOp>(m.op);
  op.datatype = static_cast<transport::AtomicType>(m.datatype);
  const uint64_t count = m.rma_iov[0].count;
  uint64_t n = 0;
  if (m.op != FI_ATOMIC_READ) {
    if (!ioc_to_iov(m.msg_iov, m.iov_count, size, op.iov, op.iov_count, n) || n != count)
      return -FI_EINVAL;
  }
  if (kind == RmaKind::CompareAtomic &&
      (!ioc_to_iov(cmp, cmp_n, size, op.compare, op.compare_count, n) || n != count))
    return -FI_EINVAL;
  if (kind != RmaKind::Atomic &&
      (!ioc_to_iov(res, res_n, size, op.result, op.result_count, n) || n != count))
    return -FI_EINVAL;
  if (count > UINT32_MAX) return -FI_EINVAL;
  op.count = static_cast<uint32_t>(count);
  op.addr = m.rma_iov[0].addr;
  op.key = m.rma_iov[0].key;
  op.context = m.context;
  op.flags = tx_flags(flags & ~uint64_t(FI_REMOTE_CQ_DATA), inject_call);
  return post_rma(op, m.addr);
}

ssize_t TransportEndpoint::atomic_write(const fi_msg_atomic& m, uint64_t flags, bool inject) noexcept {
  return atomic_common(m, nullptr, 0, nullptr, 0, flags, inject, RmaKind::Atomic);
}

ssize_t TransportEndpoint::atomic_fetch(const fi_msg_atomic& m, fi_ioc* res, void** res_desc,
                                        size_t res_count, uint64_t flags) noexcept {
  (void)res_desc;
  return atomic_common(m, nullptr, 0, res, res_count, flags, false, RmaKind::FetchAtomic);
}

ssize_t TransportEndpoint::atomic_compare(const fi_msg_atomic& m, const fi_ioc* cmp,
                                          void** cmp_desc, size_t cmp_count, fi_ioc* res,
                                          void** res_desc, size_t res_count,
                                          uint64_t flags) noexcept {
  (void)cmp_desc, (void)res_desc;
  return atomic_common(m, cmp, cmp_count, res, res_count, flags, false, RmaKind::CompareAtomic);
}

}  // namespace pollfab::providers::packet
