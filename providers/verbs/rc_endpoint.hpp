// RcEndpoint: an FI_EP_MSG endpoint over one RC queue pair, connected through rdma_cm
// (fi_endpoint(3), fi_cm(3), fi_msg(3), fi_verbs(7); docs/architecture-notes.md item 18).
//
// Connection: the active side's id is bound to the domain's port at fi_endpoint; fi_connect
// resolves the address and route and connects from the fabric's CM thread (cm_thread.hpp), which
// writes FI_CONNECTED, or an FI_ECONNREFUSED / FI_ETIMEDOUT / FI_EHOSTUNREACH error event, on
// the bound EQ. The passive side takes the id of an FI_CONNREQ's handle (RcConnReq) and
// answers with fi_accept. CM data travels framed (rc_wire.hpp), at most kRcMaxCmData bytes.
// FI_SHUTDOWN is written when the peer disconnects (or a fatal completion error broke the
// queue pair), not after the application's own fi_shutdown, as the packet providers do.
//
// Data: fi_send/sendv/sendmsg/senddata/inject/injectdata and fi_recv/recvv/recvmsg post work
// requests at once (no copy; buffers need fi_mr_desc descriptors, FI_MR_LOCAL, except sends
// that fit the inline size). Every send is signalled; its completion (or an inject's counter
// bump) is written when the device reports it. Remote CQ data is 32 bits (immediate data).
// Completion errors carry the FI_E* code in err and the ibv_wc_status in prov_errno
// (fi_cq_strerror names it); a status other than a flush breaks the connection cleanly
// (rdma_disconnect: both sides get FI_SHUTDOWN, the rest of the posted work flushes as
// FI_ECANCELED).
// With a shared receive context bound, the endpoint's own fi_recv is -FI_EOPNOTSUPP.
// Errors of the data calls: -FI_EOPBADSTATE (not enabled), -FI_ENOTCONN (not connected, or
// shut down), -FI_EAGAIN (queue full), -FI_EINVAL (iov count, a buffer without descriptor, an
// inject above the inline size, a message above max_msg_size), -FI_EOPNOTSUPP (tagged).
// Thread-safety: the data calls and completions run under the domain lock; connection state is
// atomic (the CM thread writes it).
#pragma once
#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "lib/core/endpoint.hpp"
#include "lib/core/ops_msg.hpp"
#include "lib/core/ops_rma.hpp"
#include "providers/verbs/cm_thread.hpp"
#include "providers/verbs/rc_wire.hpp"

struct ibv_cq;
struct ibv_qp;
struct ibv_wc;
struct ibv_sge;
struct ibv_send_wr;
struct ibv_mr;

namespace pollfab::providers::verbs {

class RcDomain;

class RcEndpoint final : public core::EndpointBase, public CmHandler {
 public:
  static constexpr size_t kIovLimit = 4;
  // Receive work requests' wr_id carry this bit (completions of both queues share the CQ).
  static constexpr uint64_t kRxBit = 1ull << 63;
  // fi_endpoint for an RC info: info->handle an RcConnReq of this domain's device (the passive
  // side) or none (a new id bound to the info's source address, else the port's). Returns 0,
  // -FI_EINVAL (another endpoint type, a handle that is not an RC request of this device or
  // already taken), -FI_EADDRNOTAVAIL (the source is not this port's), -FI_EIO (rdma_cm).
  static int open(RcDomain* dom, fi_info* info, void* context, fid_ep** ep);
  ~RcEndpoint() override;

  // fi_enable: the CQ (on the domain's completion channel) and the QP. -FI_ENOCQ without both
  // CQs, -FI_EIO if the device refuses (logged).
  int enable() override;
  void teardown() noexcept override;
  // Receives may come from a shared receive context (rc_srx.hpp: the QP is created on its SRQ).
  bool accepts_srx() const noexcept override { return true; }

  ssize_t send(const core::MsgArgs& a, uint64_t flags, bool tagged, bool inject) noexcept;
  ssize_t recv(const core::MsgArgs& a, uint64_t flags, bool tagged) noexcept;
  // fi_read / fi_write / fi_writedata / fi_inject_write (fi_rma(3)) as RDMA READ / WRITE
  // (WRITE_WITH_IMM for remote CQ data, which consumes a posted receive at the target:
  // rx_attr->mode FI_RX_CQ_DATA). One remote segment (rma_iov_limit 1); reads need
  // descriptors, writes up to the inline size do not. Remote keys and bounds are checked by
  // the target's device: a bad one completes with FI_EACCES (IBV_WC_REM_ACCESS_ERR) and
  // breaks the connection. Errors as send, -FI_EINVAL for rma_iov_count != 1 or local
  // buffers longer than the remote segment, -FI_EOPNOTSUPP for CQ data when the application's
  // info lacks FI_RX_CQ_DATA.
  ssize_t rma_read(const fi_msg_rma& m, uint64_t flags) noexcept;
  ssize_t rma_write(const fi_msg_rma& m, uint64_t flags, bool inject) noexcept;
  // fi_atomic / fi_fetch_atomic / fi_compare_atomic (fi_atomic(3)) through the device's
  // atomics (rc_wire.hpp device_atomic: 64-bit fetch-and-add and compare-and-swap), one element
  // at an 8-byte aligned remote address. Results need descriptors (the device writes them).
  // Errors: -FI_EOPNOTSUPP (what the device cannot do), -FI_EINVAL (counts other than one,
  // misalignment, a result without descriptor), and as send.
  ssize_t atomic_write(const fi_msg_atomic& m, uint64_t flags, bool inject) noexcept;
  ssize_t atomic_fetch(const fi_msg_atomic& m, fi_ioc* res, void** res_desc, size_t res_count,
                       uint64_t flags) noexcept;
  ssize_t atomic_compare(const fi_msg_atomic& m, const fi_ioc* cmp, void** cmp_desc,
                         size_t cmp_count, fi_ioc* res, void** res_desc, size_t res_count,
                         uint64_t flags) noexcept;
  int atomic_valid(core::AtomicKind kind, fi_datatype dt, fi_op op, size_t* count) noexcept;
  ssize_t tx_size_left() noexcept;
  ssize_t rx_size_left() noexcept;
  int getopt(int level, int name, void* val, size_t* len);
  int connect(const void* addr, const void* param, size_t paramlen);
  int accept(const void* param, size_t paramlen);
  int shutdown(uint64_t flags);
  int getname(void* addr, size_t* len);
  int getpeer(void* addr, size_t* len);

  void on_cm_event(rdma_cm_event& ev) noexcept override;

  // Under the domain lock: writes the completions the device has (returns how many); arms
  // the CQ's notification (false if the device refused).
  int poll() noexcept;
  bool arm() noexcept;

 private:
  RcEndpoint(RcDomain* dom, const fi_info* info, void* context);
  enum class State : uint8_t { Idle, Connecting, Connected, Down };
  enum class TxKind : uint8_t { Send, Read, Write };
  struct TxOp {
    void* context;
    uint64_t flags;
    uint32_t len;
    bool report;
    TxKind kind;
  };
  struct RxOp {
    void* context;
    void* buf;
    uint32_t len;
    bool report;
  };
  // Sets up the lkeys of a's buffers in sge; returns the total bytes or -FI_EINVAL.
  ssize_t fill_sge(const core::MsgArgs& a, ibv_sge* sge, bool need_keys) const noexcept;
  void complete(const ibv_wc& wc) noexcept;
  void drain_srq_receives() noexcept;
  // One device atomic: operand (add or swap), compare, the 8 bytes the device writes the
  // original value to (result/lkey; the scratch word when the caller wants none).
  ssize_t post_atomic(const fi_msg_atomic& m, DeviceAtomic a, uint64_t operand, uint64_t compare,
                      void* result, uint32_t lkey, const TxOp& op) noexcept;
  // The work request of a send (rdma false) or an RDMA WRITE (true) of a's buffers: inline
  // when copy_now (above the inline size: -FI_EINVAL) or small enough, else with lkeys
  // (fill_sge); signalled; with immediate data under FI_REMOTE_CQ_DATA. Returns the bytes.
  ssize_t prepare_outbound(const core::MsgArgs& a, bool copy_now, uint64_t flags, bool rdma,
                           ibv_sge* sge, ibv_send_wr& wr) const noexcept;
  // Posts one send-queue work request (wr's sg_list, opcode and remote fields filled) for op.
  ssize_t post_send(ibv_send_wr& wr, const TxOp& op) noexcept;
  void write_cm_error(int err, const void* data, size_t len) noexcept;
  void write_cm_event(uint32_t event, const void* data, size_t len) noexcept;

  RcDomain* rdom_;
  rdma_cm_id* id_ = nullptr;
  bool passive_ = false;
  // A request's RDMA READ / atomic limits (what the client will issue and accept), which the
  // accept may not exceed.
  uint8_t peer_initiator_depth_ = 0, peer_responder_resources_ = 0;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  std::vector<TxOp> tx_;
  std::vector<RxOp> rx_;
  uint64_t tx_posted_ = 0, tx_done_ = 0;  // counts (never wrap); in flight = posted - done
  uint64_t rx_posted_ = 0, rx_done_ = 0;
  uint32_t inline_max_ = 0;
  uint64_t max_msg_ = 0;
  bool rx_cq_data_ = false;  // the application took FI_RX_CQ_DATA (rx_attr->mode)
  bool attached_ = false;
  std::atomic<State> state_{State::Idle};
  std::atomic<bool> local_shutdown_{false};
  std::atomic<bool> broken_{false};   // a fatal completion error disconnected the QP
  alignas(64) uint64_t scratch_[8] = {};  // where fi_atomic's unwanted original values land
  ibv_mr* scratch_mr_ = nullptr;
  uint8_t conn_data_[kCmPrivateBytes] = {};  // framed CM data rdma_connect sends
  uint8_t conn_len_ = 0;
};

}  // namespace pollfab::providers::verbs
