// RcEndpoint's RMA (fi_rma(3)): RDMA READ and WRITE on the connection's queue pair.
#include <infiniband/verbs.h>

#include "providers/verbs/rc_endpoint.hpp"

namespace pollfab::providers::verbs {

ssize_t RcEndpoint::rma_read(const fi_msg_rma& m, uint64_t flags) noexcept {
  if (!enabled_) return -FI_EOPBADSTATE;
  if (state_.load(std::memory_order_acquire) != State::Connected) return -FI_ENOTCONN;
  if (m.rma_iov_count != 1 || !m.rma_iov) return -FI_EINVAL;
  ibv_sge sge[kIovLimit];
  const core::MsgArgs a{m.msg_iov, m.desc, m.iov_count, m.addr, m.context, 0, 0, 0};
  const ssize_t total = fill_sge(a, sge, true);  // the device writes into local memory
  if (total < 0) return total;
  if (uint64_t(total) > m.rma_iov[0].len) return -FI_EINVAL;
  ibv_send_wr wr{};
  wr.sg_list = m.iov_count ? sge : nullptr;
  wr.num_sge = static_cast<int>(m.iov_count);
  wr.opcode = IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = m.rma_iov[0].addr;
  wr.wr.rdma.rkey = static_cast<uint32_t>(m.rma_iov[0].key);
  return post_send(wr, TxOp{m.context, FI_RMA | FI_READ, static_cast<uint32_t>(total),
                            !tx_selective_ || (flags & FI_COMPLETION), TxKind::Read});
}

ssize_t RcEndpoint::rma_write(const fi_msg_rma& m, uint64_t flags, bool inject) noexcept {
  if (!enabled_) return -FI_EOPBADSTATE;
  if ((flags & FI_REMOTE_CQ_DATA) && !rx_cq_data_) return -FI_EOPNOTSUPP;
  if (state_.load(std::memory_order_acquire) != State::Connected) return -FI_ENOTCONN;
  if (m.rma_iov_count != 1 || !m.rma_iov) return -FI_EINVAL;
  ibv_sge sge[kIovLimit];
  ibv_send_wr wr{};
  const core::MsgArgs a{m.msg_iov, m.desc, m.iov_count, m.addr, m.context, m.data, 0, 0};
  const ssize_t total = prepare_outbound(a, inject || (flags & FI_INJECT), flags, true, sge, wr);
  if (total < 0) return total;
  if (uint64_t(total) > m.rma_iov[0].len) return -FI_EINVAL;
  wr.wr.rdma.remote_addr = m.rma_iov[0].addr;
  wr.wr.rdma.rkey = static_cast<uint32_t>(m.rma_iov[0].key);
  return post_send(wr, TxOp{m.context, FI_RMA | FI_WRITE, static_cast<uint32_t>(total),
                            !inject && (!tx_selective_ || (flags & FI_COMPLETION)), TxKind::Write});
}

}  // namespace pollfab::providers::verbs
