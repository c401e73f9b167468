// The transport receive an fi_recv* / fi_trecv* call describes (fi_msg(3), fi_tagged(3)): one
// translation for endpoints and shared receive contexts alike.
#pragma once
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include "lib/core/ops_msg.hpp"
#include "transport/ops.hpp"

namespace pollfab::providers::packet {

// The checks on an fi_recv* / fi_trecv* call's arguments: 0 or -FI_EINVAL (too many iovs, a
// null iov, FI_MULTI_RECV with FI_PEEK/FI_CLAIM, FI_DISCARD without FI_PEEK/FI_CLAIM).
inline int check_recv_args(const core::MsgArgs& a, uint64_t flags) noexcept {
  if (a.count > transport::kMaxIov || (a.count && !a.iov)) return -FI_EINVAL;
  if (!(flags & (FI_MULTI_RECV | FI_PEEK | FI_CLAIM | FI_DISCARD))) return 0;  // the common case
  if ((flags & FI_MULTI_RECV) && (flags & (FI_PEEK | FI_CLAIM))) return -FI_EINVAL;
  if ((flags & FI_DISCARD) && !(flags & (FI_PEEK | FI_CLAIM))) return -FI_EINVAL;
  return 0;
}

// Fills op (every field but peer, which is the caller's: kAnyPeer, or the source the receive is
// directed at) from arguments check_recv_args() accepted; op may be a receive entry's, written
// in place (transport::Engine::recv_entry). completion: the receive asks for a CQ entry (not
// selective, or FI_COMPLETION).
inline void fill_recv_op(const core::MsgArgs& a, uint64_t flags, bool tagged, bool completion,
                         size_t min_multi_recv, transport::RecvOp& op) noexcept {
  transport::copy_iov(op.iov, a.iov, a.count);
  op.iov_count = static_cast<uint32_t>(a.count);
  op.tag = a.tag;
  op.ignore = a.ignore;
  op.context = a.context;
  op.min_multi_recv = min_multi_recv;
  uint32_t f = (tagged ? transport::kOpTagged : 0) | (completion ? transport::kOpCompletion : 0);
  if (flags & (FI_MULTI_RECV | FI_PEEK | FI_CLAIM | FI_DISCARD)) [[unlikely]]
    f |= ((flags & FI_MULTI_RECV) ? transport::kOpMultiRecv : 0) |
         ((flags & FI_PEEK) ? transport::kOpPeek : 0) |
         ((flags & FI_CLAIM) ? transport::kOpClaim : 0) |
         ((flags & FI_DISCARD) ? transport::kOpDiscard : 0);
  op.flags = f;
}

// check_recv_args() then fill_recv_op(): 0 or its error.
inline int make_recv_op(const core::MsgArgs& a, uint64_t flags, bool tagged, bool completion,
                        size_t min_multi_recv, transport::RecvOp& op) noexcept {
  if (int r = check_recv_args(a, flags)) return r;
  fill_recv_op(a, flags, tagged, completion, min_multi_recv, op);
  return 0;
}

}  // namespace pollfab::providers::packet
