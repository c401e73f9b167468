// SrxBase: base of every provider's shared receive context (fi_srx_context, fi_endpoint(3)
// "Shared Contexts"): an fid_ep of class FI_CLASS_SRX_CTX to which the application posts
// receives that any endpoint bound to it (fi_ep_bind before fi_enable) may use. It has no CQ
// or counter of its own: a receive completes on the CQ (and counter) bound to the endpoint the
// message arrived on. The provider's class installs the data tables (install_endpoint_ops<Self>,
// lib/core/ops_ep.hpp); this base gives it the fid, the attributes and the lifetime.
// Lifetime: holds a reference on its domain; every endpoint bound to it holds one on it, so
// fi_close is -FI_EBUSY while any of them is open.
// Thread-safety: the provider's (the domain's lock guards its data calls).
#pragma once
#include "lib/core/domain.hpp"
#include "lib/core/fid.hpp"

namespace pollfab::core {

class SrxBase : public Object {
 public:
  // attr: the fi_rx_attr given to fi_srx_context (copied; the provider validated it).
  SrxBase(Domain* dom, const fi_rx_attr& attr, void* context);
  ~SrxBase() override;
  fid_ep* fid() noexcept { return &box_.fid; }
  Domain* domain() const noexcept { return dom_; }
  const fi_rx_attr& attr() const noexcept { return attr_; }
  // Default flags of fi_recv / fi_trecv on the context (attr.op_flags); it sends nothing.
  uint64_t rx_op_flags() const noexcept { return attr_.op_flags; }
  uint64_t tx_op_flags() const noexcept { return 0; }

  // fi_close(3): -FI_EBUSY while an endpoint is bound; else teardown() and delete.
  int close() override;
  virtual void teardown() noexcept {}

 protected:
  FidBox<fid_ep> box_;
  Domain* dom_;
  fi_rx_attr attr_;
};

}  // namespace pollfab::core
