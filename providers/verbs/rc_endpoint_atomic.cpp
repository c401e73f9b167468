// RcEndpoint's atomics (fi_atomic(3)) through the device's RDMA atomics.
#include <infiniband/verbs.h>

#include <cstring>

#include "providers/verbs/rc_domain.hpp"
#include "providers/verbs/rc_endpoint.hpp"
#include "providers/verbs/rc_mr.hpp"

namespace pollfab::providers::verbs {
namespace {

int kind_of(core::AtomicKind k) {
  return k == core::AtomicKind::Write ? 0 : k == core::AtomicKind::Fetch ? 1 : 2;
}

// One 64-bit element here and there; its value.
bool one_element(const fi_msg_atomic& m, uint64_t& value) {
  if (m.iov_count != 1 || !m.msg_iov || m.msg_iov[0].count != 1 || m.rma_iov_count != 1 ||
      !m.rma_iov || m.rma_iov[0].count != 1 || (m.rma_iov[0].addr & 7))
    return false;
  if (m.op == FI_ATOMIC_READ) value = 0;
  else if (!m.msg_iov[0].addr) return false;
  else std::memcpy(&value, m.msg_iov[0].addr, sizeof value);
  return true;
}

}  // namespace

int RcEndpoint::atomic_valid(core::AtomicKind kind, fi_datatype dt, fi_op op, size_t* count) noexcept {
  fi_atomic_attr attr{};
  const uint64_t flags = kind == core::AtomicKind::Fetch     ? FI_FETCH_ATOMIC
                         : kind == core::AtomicKind::Compare ? FI_COMPARE_ATOMIC
                                                             : 0;
  if (int r = rdom_->query_atomic(dt, op, &attr, flags)) return r;
  *count = attr.count;
  return 0;
}

ssize_t RcEndpoint::post_atomic(const fi_msg_atomic& m, DeviceAtomic a, uint64_t operand,
                                uint64_t compare, void* result, uint32_t lkey,
                                const TxOp& op) noexcept {
  if (!enabled_) return -FI_EOPBADSTATE;
  if (state_.load(std::memory_order_acquire) != State::Connected) return -FI_ENOTCONN;
  ibv_sge sge{reinterpret_cast<uintptr_t>(result), sizeof(uint64_t), lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.opcode = a == DeviceAtomic::CmpSwap ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
  wr.wr.atomic.remote_addr = m.rma_iov[0].addr;
  wr.wr.atomic.rkey = static_cast<uint32_t>(m.rma_iov[0].key);
  wr.wr.atomic.compare_add = a == DeviceAtomic::CmpSwap ? compare : operand;
  wr.wr.atomic.swap = operand;
  return post_send(wr, op);
}

ssize_t RcEndpoint::atomic_write(const fi_msg_atomic& m, uint64_t flags, bool inject) noexcept {
  const DeviceAtomic a = device_atomic(kind_of(core::AtomicKind::Write), m.datatype, m.op);
  if (a == DeviceAtomic::None || !rdom_->port().atomics) return -FI_EOPNOTSUPP;
  uint64_t operand = 0;
  if (!one_element(m, operand) || !scratch_mr_) return -FI_EINVAL;
  return post_atomic(m, a, operand, 0, scratch_, scratch_mr_->lkey,
                     TxOp{m.context, FI_ATOMIC | FI_WRITE, sizeof operand,
                          !inject && (!tx_selective_ || (flags & FI_COMPLETION)), TxKind::Write});
}

ssize_t RcEndpoint::atomic_fetch(const fi_msg_atomic& m, fi_ioc* res, void** res_desc,
                                 size_t res_count, uint64_t flags) noexcept {
  const DeviceAtomic a = device_atomic(kind_of(core::AtomicKind::Fetch), m.datatype, m.op);
  if (a == DeviceAtomic::None || !rdom_->port().atomics) return -FI_EOPNOTSUPP;
  uint64_t operand = 0;
  if (!one_element(m, operand) || res_count != 1 || !res || res[0].count != 1 || !res_desc ||
      !res_desc[0])
    return -FI_EINVAL;
  return post_atomic(m, a, operand, 0, res[0].addr, RcMr::lkey_of(res_desc[0]),
                     TxOp{m.context, FI_ATOMIC | FI_READ, sizeof operand,
                          !tx_selective_ || (flags & FI_COMPLETION), TxKind::Read});
}

ssize_t RcEndpoint::atomic_compare(const fi_msg_atomic& m, const fi_ioc* cmp, void** cmp_desc,
                                   size_t cmp_count, fi_ioc* res, void** res_desc,
                                   size_t res_count, uint64_t flags) noexcept {
  (void)cmp_desc;  // the compare value travels in the work request
  const DeviceAtomic a = device_atomic(kind_of(core::AtomicKind::Compare), m.datatype, m.op);
  if (a == DeviceAtomic::None || !rdom_->port().atomics) return -FI_EOPNOTSUPP;
  uint64_t operand = 0, compare = 0;
  if (!one_element(m, operand) || cmp_count != 1 || !cmp || cmp[0].count != 1 || !cmp[0].addr ||
      res_count != 1 || !res || res[0].count != 1 || !res_desc || !res_desc[0])
    return -FI_EINVAL;
  std::memcpy(&compare, cmp[0].addr, sizeof compare);
  return post_atomic(m, a, operand, compare, res[0].addr, RcMr::lkey_of(res_desc[0]),
                     TxOp{m.context, FI_ATOMIC | FI_READ, sizeof operand,
                          !tx_selective_ || (flags & FI_COMPLETION), TxKind::Read});
}

}  // namespace pollfab::providers::verbs
