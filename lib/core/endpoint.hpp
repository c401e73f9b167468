// EndpointBase: what every provider's endpoint shares (fi_endpoint(3)): the fid_ep box (its
// fi_ops are ops_fid<EndpointBase>; the provider's class installs the data and CM tables with
// core::install_endpoint_ops<Self>, lib/core/ops_ep.hpp),
// bindings to CQs (FI_TRANSMIT / FI_RECV, FI_SELECTIVE_COMPLETION), counters (FI_SEND,
// FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE), an AV, an EQ and a shared
// receive context (FI_CLASS_SRX_CTX, where the provider's accepts_srx() says so); fi_enable
// checks; FI_GETOPSFLAG / FI_SETOPSFLAG. Bindings hold references, released at close.
// Errors: bind after enable or a second CQ for the same direction -> -FI_EINVAL; an object of
// another domain -> -FI_EINVAL; unknown flags -> -FI_EBADFLAGS; a shared receive context the
// endpoint cannot use -> -FI_EOPNOTSUPP.
#pragma once
#include "lib/core/av.hpp"
#include "lib/core/cntr.hpp"
#include "lib/core/cq.hpp"
#include "lib/core/domain.hpp"
#include "lib/core/eq.hpp"
#include "lib/core/fid.hpp"
#include "lib/core/srx.hpp"

namespace pollfab::core {

class EndpointBase : public Object {
 public:
  EndpointBase(Domain* dom, const fi_info* info, void* context);
  ~EndpointBase() override;
  fid_ep* fid() noexcept { return &box_.fid; }
  Domain* domain() const noexcept { return dom_; }
  // The endpoint's default operation flags (fi_endpoint(3) FI_GETOPSFLAG / FI_SETOPSFLAG),
  // used by the data calls that take none (fi_send, fi_recv, ...: lib/core/ops_msg.hpp).
  uint64_t tx_op_flags() const noexcept { return tx_op_flags_; }
  uint64_t rx_op_flags() const noexcept { return rx_op_flags_; }

  int close() override;
  int bind(struct fid* bfid, uint64_t flags);
  int control(int command, void* arg);
  // fi_enable(3): the provider brings the endpoint up (bindings are final from here).
  virtual int enable() = 0;
  // Called by close() before bindings are released and the object deleted.
  virtual void teardown() noexcept {}
  // True if this endpoint can take its receives from a shared receive context.
  virtual bool accepts_srx() const noexcept { return false; }

 protected:
  // Counter bumps for a completed operation (success or error), by kind.
  static void bump(Cntr* c, bool ok) noexcept {
    if (c) ok ? c->inc() : c->inc_err();
  }
  // n operations completed successfully (a burst of completions): one increment.
  static void bump_ok(Cntr* c, uint32_t n) noexcept {
    if (c && n) c->inc(n);
  }

  FidBox<fid_ep> box_;
  Domain* dom_;
  fi_ep_type type_;
  uint64_t caps_ = 0;
  uint64_t tx_op_flags_ = 0, rx_op_flags_ = 0;
  uint64_t msg_order_ = 0;
  Cq* tx_cq_ = nullptr;
  Cq* rx_cq_ = nullptr;
  bool tx_selective_ = false, rx_selective_ = false;
  Cntr* send_cntr_ = nullptr;
  Cntr* recv_cntr_ = nullptr;
  Cntr* read_cntr_ = nullptr;
  Cntr* write_cntr_ = nullptr;
  Cntr* rread_cntr_ = nullptr;
  Cntr* rwrite_cntr_ = nullptr;
  Av* av_ = nullptr;
  Eq* eq_ = nullptr;
  SrxBase* srx_ = nullptr;
  bool enabled_ = false;
};

}  // namespace pollfab::core
