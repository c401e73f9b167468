// RcDomain: the verbs domain of FI_EP_MSG endpoints over RC queue pairs
// (docs/architecture-notes.md item 18; fi_domain(3), fi_verbs(7)). One device port, opened on
// the device context rdma_cm uses (rdma_get_devices: rdma_create_qp refuses a PD of another
// context), with a protection domain, memory registration through ibv_reg_mr (RcMr) and one
// completion channel that is the domain's wait source (FI_WAIT_FD through FI_GETWAIT).
//
// Progress: under FI_PROGRESS_MANUAL the domain is its CQs' progress source; progress() polls
// the ibv CQ of every enabled endpoint and writes their completions. Under FI_PROGRESS_AUTO a
// thread (core::ProgressThread, started with the first endpoint; `progress.cores`,
// `progress.idle_us`) does that and sleeps on the completion channel when idle. prepare_wait() acknowledges
// the channel's events, re-arms every endpoint's CQ and polls once more (a completion that
// came before the arm raises no event).
// Addresses are FI_SOCKADDR_IN (rdma_cm's IP addressing of RoCE); endpoints of this domain
// have no AV.
// Thread-safety: the domain lock (on at every threading level but FI_THREAD_DOMAIN, because
// one progress call writes every endpoint's CQ and a Cq has one producer) serialises
// progress, the data calls and the endpoint list.
#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include "lib/config/config.hpp"
#include <rdma/fi_atomic.h>

#include "lib/core/domain.hpp"
#include "lib/core/progress_thread.hpp"
#include "lib/core/fabric.hpp"
#include "providers/verbs/device.hpp"
#include "providers/verbs/cm_thread.hpp"
#include "providers/verbs/rc_mr_cache.hpp"

struct ibv_context;
struct ibv_pd;
struct ibv_comp_channel;

namespace pollfab::providers::verbs {

class RcEndpoint;

class RcDomain final : public core::Domain {
 public:
  // Opens the domain of `port` for info (FI_EP_MSG, protocol FI_PROTO_RDMA_CM_IB_RC). Returns
  // 0 and *out, or -FI_ENODEV (rdma_cm does not know the device), -FI_EIO (a verbs call
  // failed; the call and errno are logged), -FI_ENOMEM.
  static int open(core::Fabric* fabric, fi_info* info, void* context, std::shared_ptr<CmThread> cm,
                  const PortInfo& port, const config::Config& cfg, fid_domain** out);

  int open_endpoint(fi_info* info, fid_ep** ep, uint64_t flags, void* context) override;
  const core::AddressFormat& address_format() const noexcept override;
  void progress() noexcept override;
  int wait_fd() noexcept override;
  bool prepare_wait() noexcept override;
  // fi_mr_reg: ibv_reg_mr of one iov (mr_iov_limit 1), through the registration cache (an open
  // registration covering the range is shared: same keys, no new pinning). The key is the rkey, fi_mr_desc the
  // RcMr (its lkey). Errors: -FI_EINVAL (count != 1, access bits), -FI_EBADFLAGS, -FI_EFAULT
  // (memory the device cannot register: unmapped, read-only for local write), -FI_ENOMEM,
  // -FI_EIO (another failure, logged).
  int mr_reg(const iovec* iov, size_t count, uint64_t access, uint64_t offset, uint64_t key,
             uint64_t flags, fid_mr** mr, void* context) override;
  // fi_query_atomic (fi_atomic(3)): 0 with size 8 and count 1 for what the device's atomics
  // serve (rc_wire.hpp device_atomic), else -FI_EOPNOTSUPP; -FI_EBADFLAGS for other flags.
  int query_atomic(fi_datatype dt, fi_op op, fi_atomic_attr* attr, uint64_t flags) noexcept;
  // fi_srx_context: a device shared receive queue (rc_srx.hpp).
  int srx_ctx(fi_rx_attr* attr, fid_ep** rx, void* context);
  // prov_errno of this domain's CQ errors is an ibv_wc_status.
  core::ProvErrnoText prov_errno_text() const noexcept override;
  void teardown() noexcept override;

  ibv_context* context() const noexcept { return ctx_; }
  ibv_pd* pd() const noexcept { return pd_; }
  ibv_comp_channel* channel() const noexcept { return channel_; }
  const PortInfo& port() const noexcept { return port_; }
  const config::VerbsConfig& cfg() const noexcept { return cfg_; }
  const std::shared_ptr<CmThread>& cm() const noexcept { return cm_; }
  RcMrCache::Stats mr_cache_stats() const { return mr_cache_ ? mr_cache_->stats() : RcMrCache::Stats{}; }
  // RDMA READ / atomic depth a connection asks for (responder resources, initiator depth):
  // the device's limits, at most 16.
  uint8_t rd_atomic() const noexcept { return rd_atomic_; }
  // The device's largest CQ, entries.
  size_t max_cqe() const noexcept { return max_cqe_; }
  // FI_PROGRESS_AUTO: starts the progress thread once (the first enabled endpoint calls it).
  // Throws std::system_error if no thread can be made.
  void ensure_auto_progress();
  // Enabled endpoints join the progress list and leave it before their CQ goes (under lock()).
  void attach(RcEndpoint* ep);
  void detach(RcEndpoint* ep) noexcept;

 private:
  RcDomain(core::Fabric* fabric, const fi_info* info, void* context, std::shared_ptr<CmThread> cm,
           const PortInfo& port, const config::Config& cfg);

  int init();

  std::shared_ptr<CmThread> cm_;
  PortInfo port_;
  config::VerbsConfig cfg_;
  config::ProgressConfig progress_cfg_;
  core::ProgressThread auto_;
  ibv_context* ctx_ = nullptr;  // rdma_cm's (not ours to close)
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  uint8_t rd_atomic_ = 1;
  size_t max_cqe_ = 4096;
  std::mutex auto_mu_;  // starting the progress thread
  std::unique_ptr<RcMrCache> mr_cache_;
  std::vector<RcEndpoint*> eps_;
};

}  // namespace pollfab::providers::verbs
