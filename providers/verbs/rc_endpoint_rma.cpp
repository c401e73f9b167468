// RcEndpoint's RMA (fi_rma(3)): RDMA READ and WRITE on the connection's queue pair.
#include <arpa/inet.h>
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
  uint64_t bytes = 0;
  for (size_t i = 0; i < m.iov_count && m.msg_iov; ++i) bytes += m.msg_iov[i].iov_len;
  const bool copy_now = inject || (flags & FI_INJECT);
  if (copy_now && bytes > inline_max_) return -FI_EINVAL;
  const bool inl = copy_now || bytes <= inline_max_;
  ibv_sge sge[kIovLimit];
  const core::MsgArgs a{m.msg_iov, m.desc, m.iov_count, m.addr, m.context, 0, 0, 0};
  const ssize_t total = fill_sge(a, sge, !inl);
  if (total < 0) return total;
  if (uint64_t(total) > m.rma_iov[0].len) return -FI_EINVAL;
  ibv_send_wr wr{};
  wr.sg_list = m.iov_count ? sge : nullptr;
  wr.num_sge = static_cast<int>(m.iov_count);
  wr.send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0);
  if (flags & FI_REMOTE_CQ_DATA) {
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(static_cast<uint32_t>(m.data));
  } else {
    wr.opcode = IBV_WR_RDMA_WRITE;
  }
  wr.wr.rdma.remote_addr = m.rma_iov[0].addr;
  wr.wr.rdma.rkey = static_cast<uint32_t>(m.rma_iov[0].key);
  return post_send(wr, TxOp{m.context, FI_RMA | FI_WRITE, static_cast<uint32_t>(total),
                            !inject && (!tx_selective_ || (flags & FI_COMPLETION)), TxKind::Write});
}

}  // namespace pollfab::providers::verbs
