#include "providers/verbs/rc_endpoint.hpp"

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/fi_cm.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>
#include <cstring>

#include "lib/core/ep_options.hpp"
#include "lib/core/info_alloc.hpp"
#include "lib/core/ops_ep.hpp"
#include "lib/util/log.hpp"
#include "lib/util/spinlock.hpp"
#include "providers/verbs/rc_domain.hpp"
#include "providers/verbs/rc_mr.hpp"
#include "providers/verbs/rc_pep.hpp"
#include "providers/verbs/rc_srx.hpp"

namespace pollfab::providers::verbs {
namespace {

constexpr const char* kProv = "verbs";

bool sockaddr_in_of(const void* addr, size_t len, sockaddr_in& out) {
  if (!addr || len < sizeof(sockaddr_in)) return false;
  std::memcpy(&out, addr, sizeof out);
  return out.sin_family == AF_INET;
}

}  // namespace

RcEndpoint::RcEndpoint(RcDomain* dom, const fi_info* info, void* context)
    : core::EndpointBase(dom, info, context), rdom_(dom) {
  core::install_endpoint_ops<RcEndpoint>(box_.fid);
  const size_t tx = info->tx_attr && info->tx_attr->size ? info->tx_attr->size : dom->cfg().tx_depth;
  const size_t rx = info->rx_attr && info->rx_attr->size ? info->rx_attr->size : dom->cfg().rx_depth;
  tx_.resize(tx);
  rx_.resize(rx);
  rx_cq_data_ = info->rx_attr && (info->rx_attr->mode & FI_RX_CQ_DATA);
  max_msg_ = std::min<uint64_t>(info->ep_attr && info->ep_attr->max_msg_size ? info->ep_attr->max_msg_size
                                                                             : kRcMaxMsg,
                                kRcMaxMsg);
}

RcEndpoint::~RcEndpoint() = default;

int RcEndpoint::open(RcDomain* dom, fi_info* info, void* context, fid_ep** ep) {
  if (!info->ep_attr || info->ep_attr->type != FI_EP_MSG) return -FI_EINVAL;
  const uint32_t max_wr = dom->port().max_qp_wr;
  if ((info->tx_attr && info->tx_attr->size > max_wr) || (info->rx_attr && info->rx_attr->size > max_wr))
    return -FI_EINVAL;
  rdma_cm_id* id = nullptr;
  bool passive = false;
  uint8_t req_initiator_depth = 0, req_responder_resources = 0;
  if (info->handle) {
    if (info->handle->fclass != FI_CLASS_CONNREQ) return -FI_EINVAL;
    auto* req = dynamic_cast<RcConnReq*>(core::Object::from(info->handle));
    if (!req || !req->id() || req->id()->verbs != dom->context()) return -FI_EINVAL;
    if (!(id = req->take())) return -FI_EINVAL;  // another endpoint took it
    passive = true;
    req_initiator_depth = req->initiator_depth();
    req_responder_resources = req->responder_resources();
    req->pep()->taken(req);  // from here req may be freed (an answered handle beyond the kept ones)
  } else {
    if (rdma_create_id(dom->cm()->channel(), &id, nullptr, RDMA_PS_TCP) != 0) {
      PF_LOG(kProv, Warn, EpCtrl, "fi_endpoint: rdma_create_id: {}", strerror(errno));
      return -FI_EIO;
    }
    sockaddr_in src{};
    if (!sockaddr_in_of(info->src_addr, info->src_addrlen, src)) {
      src.sin_family = AF_INET;
      src.sin_port = 0;
    }
    if (src.sin_addr.s_addr == 0) src.sin_addr.s_addr = htonl(dom->port().ipv4);
    if (ntohl(src.sin_addr.s_addr) != dom->port().ipv4) {
      rdma_destroy_id(id);
      return -FI_EADDRNOTAVAIL;
    }
    src.sin_port = 0;  // the source service names a listener; a client binds an ephemeral one
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&src)) != 0 || id->verbs != dom->context()) {
      PF_LOG(kProv, Warn, EpCtrl, "fi_endpoint: rdma_bind_addr to {}: {}",
             inet_ntoa(src.sin_addr), id->verbs ? "another device" : strerror(errno));
      rdma_destroy_id(id);
      return -FI_EIO;
    }
  }
  RcEndpoint* e;
  try {
    e = new RcEndpoint(dom, info, context);
  } catch (...) {
    rdma_destroy_id(id);  // a request's id: the client is rejected
    throw;
  }
  e->id_ = id;
  e->passive_ = passive;
  e->peer_initiator_depth_ = req_initiator_depth;
  e->peer_responder_resources_ = req_responder_resources;
  id->context = static_cast<CmHandler*>(e);
  *ep = e->fid();
  return 0;
}

int RcEndpoint::enable() {
  if (enabled_) return 0;
  if (!tx_cq_ || !rx_cq_) return -FI_ENOCQ;
  // Every send and every receive this QP can complete: its own receives, or the whole SRQ's.
  const size_t rx = srx_ ? static_cast<RcSrx*>(srx_)->attr().size : rx_.size();
  const int depth = static_cast<int>(std::min<size_t>(tx_.size() + rx, rdom_->max_cqe()));
  if (!(cq_ = ibv_create_cq(rdom_->context(), depth, this, rdom_->channel(), 0))) {
    PF_LOG(kProv, Warn, EpCtrl, "fi_enable: ibv_create_cq({}): {}", depth, strerror(errno));
    return -FI_EIO;
  }
  ibv_qp_init_attr qa{};
  qa.send_cq = cq_;
  qa.recv_cq = cq_;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = static_cast<uint32_t>(tx_.size());
  qa.cap.max_recv_wr = static_cast<uint32_t>(rx_.size());
  qa.cap.max_send_sge = kIovLimit;
  qa.cap.max_recv_sge = kIovLimit;
  qa.cap.max_inline_data = rdom_->cfg().inline_bytes;
  if (srx_) {
    qa.srq = static_cast<RcSrx*>(srx_)->srq();
    qa.cap.max_recv_wr = 0;
    qa.cap.max_recv_sge = 0;
  }
  if (rdma_create_qp(id_, rdom_->pd(), &qa) != 0) {
    PF_LOG(kProv, Warn, EpCtrl, "fi_enable: rdma_create_qp (send {} recv {} inline {}): {}",
           tx_.size(), rx_.size(), rdom_->cfg().inline_bytes, strerror(errno));
    ibv_destroy_cq(cq_);
    cq_ = nullptr;
    return -FI_EIO;
  }
  qp_ = id_->qp;
  if (!(scratch_mr_ = ibv_reg_mr(rdom_->pd(), scratch_, sizeof scratch_, IBV_ACCESS_LOCAL_WRITE)))
    PF_LOG(kProv, Warn, EpCtrl, "fi_enable: ibv_reg_mr (atomic scratch): {}", strerror(errno));
  inline_max_ = qa.cap.max_inline_data;
  if (ibv_req_notify_cq(cq_, 0) != 0) PF_LOG(kProv, Warn, EpCtrl, "ibv_req_notify_cq: {}", strerror(errno));
  rdom_->attach(this);
  attached_ = true;  // from here teardown detaches, whatever follows throws
  rdom_->ensure_auto_progress();
  enabled_ = true;
  return 0;
}

void RcEndpoint::teardown() noexcept {
  if (attached_) rdom_->detach(this);
  attached_ = false;
  // After rdma_destroy_id returns no event of the id is being handled or will come.
  // rdma_destroy_id leaves the QP alone (ours to destroy below); id_->qp stays set while the CM
  // thread may still be reading an event of the id (librdmacm uses it for CONNECT_RESPONSE).
  if (id_) rdma_destroy_id(id_);
  id_ = nullptr;
  if (srx_ && qp_) drain_srq_receives();
  if (qp_) ibv_destroy_qp(qp_);
  if (scratch_mr_) ibv_dereg_mr(scratch_mr_);
  scratch_mr_ = nullptr;
  if (cq_) ibv_destroy_cq(cq_);
  qp_ = nullptr, cq_ = nullptr;
}

// SRQ receives this QP took but has not completed would keep their RcSrx slots forever: move
// the QP to the error state and write what it flushes (FI_ECANCELED) before the CQ goes.
// Bounded: until 10 ms pass without a completion, 100 ms at most.
void RcEndpoint::drain_srq_receives() noexcept {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  if (ibv_modify_qp(qp_, &a, IBV_QP_STATE) != 0) return;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  auto quiet_since = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < end &&
         std::chrono::steady_clock::now() - quiet_since < std::chrono::milliseconds(10)) {
    int n;
    {
      util::Guard<util::MaybeLock> g(rdom_->lock());
      n = poll();
    }
    if (n) quiet_since = std::chrono::steady_clock::now();
    else std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

ssize_t RcEndpoint::fill_sge(const core::MsgArgs& a, ibv_sge* sge, bool need_keys) const noexcept {
  if (a.count > kIovLimit || (a.count && !a.iov)) return -FI_EINVAL;
  uint64_t total = 0;
  for (size_t i = 0; i < a.count; ++i) {
    const void* desc = a.desc ? a.desc[i] : nullptr;
    if (need_keys && !desc && a.iov[i].iov_len) return -FI_EINVAL;
    sge[i].addr = reinterpret_cast<uintptr_t>(a.iov[i].iov_base);
    sge[i].length = static_cast<uint32_t>(a.iov[i].iov_len);
    sge[i].lkey = RcMr::lkey_of(desc);
    total += a.iov[i].iov_len;
  }
  if (total > max_msg_) return -FI_EINVAL;
  return static_cast<ssize_t>(total);
}

ssize_t RcEndpoint::send(const core::MsgArgs& a, uint64_t flags, bool tagged, bool inject) noexcept {
  if (tagged) return -FI_EOPNOTSUPP;
  if (!enabled_) return -FI_EOPBADSTATE;
  if (state_.load(std::memory_order_acquire) != State::Connected) return -FI_ENOTCONN;
  ibv_sge sge[kIovLimit];
  ibv_send_wr wr{};
  const ssize_t total = prepare_outbound(a, inject || (flags & FI_INJECT), flags, false, sge, wr);
  if (total < 0) return total;
  return post_send(wr, TxOp{a.context, FI_SEND | FI_MSG, static_cast<uint32_t>(total),
                            !inject && (!tx_selective_ || (flags & FI_COMPLETION)), TxKind::Send});
}

ssize_t RcEndpoint::prepare_outbound(const core::MsgArgs& a, bool copy_now, uint64_t flags,
                                     bool rdma, ibv_sge* sge, ibv_send_wr& wr) const noexcept {
  uint64_t bytes = 0;
  for (size_t i = 0; i < a.count && a.iov; ++i) bytes += a.iov[i].iov_len;
  if (copy_now && bytes > inline_max_) return -FI_EINVAL;
  // Inline when asked to copy now, or when small enough to need no registration.
  const bool inl = copy_now || bytes <= inline_max_;
  const ssize_t total = fill_sge(a, sge, !inl);
  if (total < 0) return total;
  wr.sg_list = a.count ? sge : nullptr;
  wr.num_sge = static_cast<int>(a.count);
  wr.send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0);
  const bool imm = flags & FI_REMOTE_CQ_DATA;
  if (imm) wr.imm_data = htonl(static_cast<uint32_t>(a.data));
  wr.opcode = rdma ? (imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE)
                   : (imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND);
  return total;
}

ssize_t RcEndpoint::post_send(ibv_send_wr& wr, const TxOp& op) noexcept {
  util::Guard<util::MaybeLock> g(rdom_->lock());
  if (tx_posted_ - tx_done_ >= tx_.size()) {
    poll();
    if (tx_posted_ - tx_done_ >= tx_.size()) return -FI_EAGAIN;
  }
  const uint32_t slot = static_cast<uint32_t>(tx_posted_ % tx_.size());
  tx_[slot] = op;
  wr.wr_id = slot;
  ibv_send_wr* bad = nullptr;
  if (int r = ibv_post_send(qp_, &wr, &bad)) return r == ENOMEM ? -FI_EAGAIN : -FI_EIO;
  ++tx_posted_;
  return 0;
}

ssize_t RcEndpoint::recv(const core::MsgArgs& a, uint64_t flags, bool tagged) noexcept {
  if (tagged || srx_) return -FI_EOPNOTSUPP;
  if (!enabled_) return -FI_EOPBADSTATE;
  ibv_sge sge[kIovLimit];
  const ssize_t total = fill_sge(a, sge, true);
  if (total < 0) return total;
  util::Guard<util::MaybeLock> g(rdom_->lock());
  if (rx_posted_ - rx_done_ >= rx_.size()) return -FI_EAGAIN;
  const uint32_t slot = static_cast<uint32_t>(rx_posted_ % rx_.size());
  rx_[slot] = RxOp{a.context, a.count ? a.iov[0].iov_base : nullptr, static_cast<uint32_t>(total),
                   !rx_selective_ || (flags & FI_COMPLETION)};
  ibv_recv_wr wr{};
  wr.wr_id = kRxBit | slot;
  wr.sg_list = a.count ? sge : nullptr;
  wr.num_sge = static_cast<int>(a.count);
  ibv_recv_wr* bad = nullptr;
  if (int r = ibv_post_recv(qp_, &wr, &bad)) return r == ENOMEM ? -FI_EAGAIN : -FI_EIO;
  ++rx_posted_;
  return 0;
}

ssize_t RcEndpoint::tx_size_left() noexcept {
  if (!enabled_) return -FI_EOPBADSTATE;
  util::Guard<util::MaybeLock> g(rdom_->lock());
  return static_cast<ssize_t>(tx_.size() - (tx_posted_ - tx_done_));
}

ssize_t RcEndpoint::rx_size_left() noexcept {
  if (!enabled_) return -FI_EOPBADSTATE;
  util::Guard<util::MaybeLock> g(rdom_->lock());
  return static_cast<ssize_t>(rx_.size() - (rx_posted_ - rx_done_));
}

int RcEndpoint::poll() noexcept {
  if (!cq_) return 0;
  ibv_wc wc[16];
  int total = 0;
  for (;;) {
    const int n = ibv_poll_cq(cq_, 16, wc);
    if (n <= 0) break;
    for (int i = 0; i < n; ++i) complete(wc[i]);
    total += n;
    if (n < 16) break;
  }
  return total;
}

bool RcEndpoint::arm() noexcept { return !cq_ || ibv_req_notify_cq(cq_, 0) == 0; }

void RcEndpoint::complete(const ibv_wc& wc) noexcept {
  const bool rx = wc.wr_id & kRxBit;
  const uint32_t slot = static_cast<uint32_t>(wc.wr_id);
  const bool ok = wc.status == IBV_WC_SUCCESS;
  core::Cq* cq = rx ? rx_cq_ : tx_cq_;
  void* ctx;
  uint64_t flags;
  void* buf = nullptr;
  uint32_t len;
  bool report;
  if (rx) {
    RxOp op;
    if (srx_) {
      const RcSrx::RxOp s = static_cast<RcSrx*>(srx_)->take(slot);
      op = RxOp{s.context, s.buf, s.len, !rx_selective_ || s.completion};
    } else {
      op = rx_[slot % rx_.size()];
      ++rx_done_;
    }
    ctx = op.context, buf = op.buf, len = op.len, report = op.report;
    flags = FI_RECV | FI_MSG;
    if (ok && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
      // A remote write with CQ data consumed this receive (FI_RX_CQ_DATA): no data placed here.
      flags = FI_RMA | FI_REMOTE_WRITE;
      buf = nullptr;
      bump(rwrite_cntr_, ok);
    } else {
      bump(recv_cntr_, ok);
    }
  } else {
    const TxOp& op = tx_[slot % tx_.size()];
    ++tx_done_;
    ctx = op.context, flags = op.flags, len = op.len, report = op.report;
    bump(op.kind == TxKind::Send ? send_cntr_ : op.kind == TxKind::Read ? read_cntr_ : write_cntr_, ok);
  }
  if (ok) {
    // Remote CQ data is reported even for a receive posted without FI_COMPLETION.
    if (!cq || (!report && !(rx && (wc.wc_flags & IBV_WC_WITH_IMM)))) return;
    uint64_t data = 0;
    if (rx && (wc.wc_flags & IBV_WC_WITH_IMM)) {
      flags |= FI_REMOTE_CQ_DATA;
      data = ntohl(wc.imm_data);
    }
    cq->push(ctx, flags, rx ? wc.byte_len : len, rx ? buf : nullptr, data, 0, FI_ADDR_NOTAVAIL);
    return;
  }
  if (!cq) return;
  fi_cq_err_entry e{};
  e.op_context = ctx;
  e.flags = flags;
  e.len = 0;
  e.buf = buf;
  e.err = wc_status_errno(wc.status);
  e.prov_errno = wc.status;
  cq->push_error(e);
  if (wc.status != IBV_WC_WR_FLUSH_ERR && !broken_.exchange(true)) {
    // The QP is in the error state: break the connection so that both sides learn it.
    PF_LOG(kProv, Warn, EpData, "{} completion error: {} (vendor error {:#x}); disconnecting",
           rx ? "receive" : "send", ibv_wc_status_str(wc.status), wc.vendor_err);
    if (id_) rdma_disconnect(id_);
  }
}

}  // namespace pollfab::providers::verbs
