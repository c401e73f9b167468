// RcSrx: a shared receive context of RC endpoints (fi_srx_context, fi_endpoint(3) "Shared
// Contexts") as a device shared receive queue (ibv_create_srq): receives posted to it serve
// every RC endpoint bound to it (fi_ep_bind before fi_enable; the QP is created on the SRQ), and
// complete on the CQ of the endpoint whose connection the message came on. Receives are posted
// at once (descriptors required, FI_MR_LOCAL), up to attr.size outstanding (-FI_EAGAIN above).
// Errors: -FI_EINVAL (iov count, a buffer without descriptor), -FI_EOPNOTSUPP (tagged, sends).
// Thread-safety: posts and completions run under the domain lock.
#pragma once
#include <cstdint>
#include <vector>

#include "lib/core/ops_msg.hpp"
#include "lib/core/srx.hpp"

struct ibv_srq;

namespace pollfab::providers::verbs {

class RcDomain;

class RcSrx final : public core::SrxBase {
 public:
  struct RxOp {
    void* context;
    void* buf;
    uint32_t len;
    bool completion;  // FI_COMPLETION given (the endpoint's FI_SELECTIVE_COMPLETION decides)
  };
  // 0 and *out, -FI_EINVAL (attributes), -FI_EIO (ibv_create_srq failed, logged).
  static int open(RcDomain* dom, const fi_rx_attr& attr, void* context, fid_ep** out);
  void teardown() noexcept override;

  ssize_t send(const core::MsgArgs&, uint64_t, bool, bool) noexcept { return -FI_EOPNOTSUPP; }
  ssize_t recv(const core::MsgArgs& a, uint64_t flags, bool tagged) noexcept;

  ibv_srq* srq() const noexcept { return srq_; }
  // Under the domain lock: the receive a completion's wr_id names, its slot freed.
  RxOp take(uint32_t slot) noexcept;

 private:
  RcSrx(RcDomain* dom, const fi_rx_attr& attr, void* context);
  RcDomain* rdom_;
  ibv_srq* srq_ = nullptr;
  std::vector<RxOp> ops_;
  std::vector<uint32_t> free_;  // free slots of ops_
};

}  // namespace pollfab::providers::verbs
