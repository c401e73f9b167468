// The transport receive an fi_recv* / fi_trecv* call describes (fi_msg(3), fi_tagged(3)): one
// translation for endpoints and shared receive contexts alike.
#pragma once
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include "lib/core/ops_msg.hpp"
#include "transport/ops.hpp"

namespace pollfab::providers::packet {

// Fills op from the call's arguments (op.peer is left to the caller: kAnyPeer, or the source
// the receive is directed at). completion: the receive asks for a CQ entry (not selective, or
// FI_COMPLETION). Returns 0 or -FI_EINVAL (too many iovs, a null iov, FI_MULTI_RECV with
// FI_PEEK/FI_CLAIM, FI_DISCARD without FI_PEEK/FI_CLAIM).
inline int make_recv_op(const core::MsgArgs& a, uint64_t flags, bool tagged, bool completion,
                        size_t min_multi_recv, transport::RecvOp& op) noexcept {
  if (a.count > transport::kMaxIov || (a.count && !a.iov)) return -FI_EINVAL;
  if ((flags & FI_MULTI_RECV) && (flags & (FI_PEEK | FI_CLAIM))) return -FI_EINVAL;
  if ((flags & FI_DISCARD) && !(flags & (FI_PEEK | FI_CLAIM))) return -FI_EINVAL;
  transport::copy_iov(op.iov, a.iov, a.count);
  op.iov_count = static_cast<uint32_t>(a.count);
  op.tag = a.tag;
  op.ignore = a.ignore;
  op.context = a.context;
  op.min_multi_recv = min_multi_recv;
  op.flags = (tagged ? transport::kOpTagged : 0) |
             (completion ? transport::kOpCompletion : 0) |
             ((flags & FI_MULTI_RECV) ? transport::kOpMultiRecv : 0) |
             ((flags & FI_PEEK) ? transport::kOpPeek : 0) |
             ((flags & FI_CLAIM) ? transport::kOpClaim : 0) |
             ((flags & FI_DISCARD) ? transport::kOpDiscard : 0);
  return 0;
}

}  // namespace pollfab::providers::packet
