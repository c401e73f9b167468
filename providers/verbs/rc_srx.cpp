#include "providers/verbs/rc_srx.hpp"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

#include "lib/core/ops_ep.hpp"
#include "lib/util/log.hpp"
#include "lib/util/spinlock.hpp"
#include "providers/verbs/rc_domain.hpp"
#include "providers/verbs/rc_endpoint.hpp"
#include "providers/verbs/rc_mr.hpp"

namespace pollfab::providers::verbs {

RcSrx::RcSrx(RcDomain* dom, const fi_rx_attr& attr, void* context)
    : core::SrxBase(dom, attr, context), rdom_(dom) {
  core::install_endpoint_ops<RcSrx>(box_.fid);
  ops_.resize(attr.size);
  free_.reserve(attr.size);
  for (uint32_t i = attr.size; i > 0; --i) free_.push_back(i - 1);
}

int RcSrx::open(RcDomain* dom, const fi_rx_attr& attr, void* context, fid_ep** out) {
  fi_rx_attr a = attr;
  if (a.iov_limit > RcEndpoint::kIovLimit || a.size > dom->port().max_qp_wr) return -FI_EINVAL;
  if (!a.size) a.size = dom->cfg().rx_depth;
  if (!a.iov_limit) a.iov_limit = RcEndpoint::kIovLimit;
  auto* s = new RcSrx(dom, a, context);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = static_cast<uint32_t>(a.size);
  sa.attr.max_sge = RcEndpoint::kIovLimit;
  if (!(s->srq_ = ibv_create_srq(dom->pd(), &sa))) {
    PF_LOG("verbs", Warn, EpCtrl, "fi_srx_context: ibv_create_srq({}): {}", a.size, strerror(errno));
    s->close();
    return -FI_EIO;
  }
  *out = s->fid();
  return 0;
}

void RcSrx::teardown() noexcept {
  if (srq_) ibv_destroy_srq(srq_);
  srq_ = nullptr;
}

ssize_t RcSrx::recv(const core::MsgArgs& a, uint64_t flags, bool tagged) noexcept {
  if (tagged) return -FI_EOPNOTSUPP;
  if (a.count > RcEndpoint::kIovLimit || (a.count && !a.iov)) return -FI_EINVAL;
  ibv_sge sge[RcEndpoint::kIovLimit];
  uint64_t total = 0;
  for (size_t i = 0; i < a.count; ++i) {
    const void* desc = a.desc ? a.desc[i] : nullptr;
    if (!desc && a.iov[i].iov_len) return -FI_EINVAL;
    sge[i] = ibv_sge{reinterpret_cast<uintptr_t>(a.iov[i].iov_base),
                     static_cast<uint32_t>(a.iov[i].iov_len), RcMr::lkey_of(desc)};
    total += a.iov[i].iov_len;
  }
  util::Guard<util::MaybeLock> g(rdom_->lock());
  if (free_.empty()) return -FI_EAGAIN;
  const uint32_t slot = free_.back();
  ops_[slot] = RxOp{a.context, a.count ? a.iov[0].iov_base : nullptr, static_cast<uint32_t>(total),
                    (flags & FI_COMPLETION) != 0};
  ibv_recv_wr wr{};
  wr.wr_id = RcEndpoint::kRxBit | slot;
  wr.sg_list = a.count ? sge : nullptr;
  wr.num_sge = static_cast<int>(a.count);
  ibv_recv_wr* bad = nullptr;
  if (int r = ibv_post_srq_recv(srq_, &wr, &bad)) return r == ENOMEM ? -FI_EAGAIN : -FI_EIO;
  free_.pop_back();
  return 0;
}

RcSrx::RxOp RcSrx::take(uint32_t slot) noexcept {
  if (slot >= ops_.size()) return RxOp{};
  free_.push_back(slot);  // capacity reserved: never allocates
  return ops_[slot];
}

}  // namespace pollfab::providers::verbs
