// TransportEndpoint: an FI_EP_RDM or FI_EP_DGRAM endpoint on a TransportDomain, running one
// transport::Engine (reliable for RDM, datagram for DGRAM). Implements fi_msg(3) and
// fi_tagged(3) data operations, fi_cancel for posted receives, fi_getname/fi_setname, and turns
// engine completions into CQ entries, CQ error entries and counter updates (fi_cq(3),
// fi_cntr(3)).
//
// Errors returned by data calls: -FI_EAGAIN (no send/receive slot or packet buffer: progress
// and retry), -FI_EMSGSIZE (length above max_msg_size, or above inject_size for inject),
// -FI_EINVAL (unknown fi_addr, too many iovs, FI_CLAIM with no message claimed under the
// context), -FI_EOPBADSTATE (not enabled). Failures after acceptance are CQ error entries:
// FI_ETRUNC (receive buffer too small, olen = bytes lost), FI_ECANCELED, FI_ENOMSG (an
// FI_PEEK found nothing), FI_EIO (peer restarted), FI_ETIMEDOUT (peer declared dead).
// Send completion (fi_cq(3)): FI_TRANSMIT_COMPLETE (the default, and what FI_INJECT_COMPLETE
// gets: the target has the message, possibly buffered); FI_DELIVERY_COMPLETE (placed in a
// receive buffer or discarded at the target); FI_MORE defers the flush. RMA and atomics always
// complete at delivery (the target answered).
// Receive flags (fi_tagged(3), fi_msg(3)): FI_MULTI_RECV (FI_OPT_MIN_MULTI_RECV, default
// kDefaultMinMultiRecv bytes), FI_PEEK, FI_PEEK|FI_CLAIM, FI_CLAIM, FI_DISCARD.
#pragma once
#include <algorithm>
#include <memory>
#include <vector>

#include "lib/core/endpoint.hpp"
#include "lib/core/ops_msg.hpp"
#include "lib/core/ops_rma.hpp"
#include "providers/packet/link.hpp"
#include "transport/connection.hpp"
#include "transport/engine.hpp"

namespace pollfab::providers::packet {

class TransportDomain;
class ConnReq;

class TransportEndpoint final : public core::EndpointBase, public transport::CompletionSink,
                                public Receiver, public transport::CmSink {
 public:
  TransportEndpoint(TransportDomain* dom, const fi_info* info, void* context);
  ~TransportEndpoint() override;

  uint16_t ep_id() const noexcept { return ep_id_; }
  transport::Engine& engine() noexcept { return *engine_; }
  // Null while the endpoint is being built or torn down (the domain skips it then).
  transport::Engine* engine_ptr() noexcept { return engine_.get(); }
  int enable() override;
  void teardown() noexcept override;
  // FI_EP_MSG endpoints may take their receives from a shared receive context (srx.hpp): bound
  // before fi_enable, which makes the engine match against the context's queues; fi_recv on
  // the endpoint itself is then -FI_EOPNOTSUPP. fi_enable: -FI_EOPBADSTATE if a message
  // arrived before it (nothing may be lost by the switch).
  bool accepts_srx() const noexcept override { return cm_ != nullptr; }
  // Receiver (the port's demultiplexer calls these under the lock).
  void on_packet(transport::PacketBuf& pkt, uint64_t rx_ns) noexcept override;
  void progress(uint64_t now_ns) noexcept override;
  void flush_posted() noexcept override {
    if (engine_) engine_->flush_posted();
  }
  TransportEndpoint* endpoint() noexcept override { return this; }
  uint64_t cm_drops() const noexcept override { return cm_ ? cm_->drops() : 0; }
  uint64_t next_deadline_ns() const noexcept override {
    if (!engine_) return UINT64_MAX;
    return std::min(engine_->next_deadline_ns(), cm_ ? cm_->next_deadline_ns() : UINT64_MAX);
  }
  void on_completion(const transport::Completion& c) noexcept override;
  void on_sends_completed(const transport::SendDone* s, uint32_t n) noexcept override;
  void on_recvs_completed(const transport::RecvDone* r, uint32_t n) noexcept override;

  // Data path: the members core's ops tables call (lib/core/ops_msg.hpp, ops_ep.hpp; this
  // class's tables are built from them). flags are FI_* operation flags. inject: an fi_inject*
  // call (never a completion); FI_INJECT in flags only means the buffer is copied at once
  // (fi_sendmsg with FI_INJECT still completes normally).
  ssize_t send(const core::MsgArgs& a, uint64_t flags, bool tagged, bool inject) noexcept;
  // send() for one buffer (fi_send, fi_inject, fi_senddata, fi_tsend and their kin: core's
  // MsgSlots::send1), without the iovec and MsgArgs round trip; same checks and returns.
  // send_one and recv_one are inline in the ops table's slots, which endpoint.cpp (their
  // definition's file, where install_endpoint_ops instantiates the tables) builds: a call, its
  // prologue and nine arguments less a message.
  [[gnu::always_inline]] inline ssize_t send_one(const void* buf, size_t len, fi_addr_t dest,
                                                 void* ctx, uint64_t data, uint64_t tag,
                                                 uint64_t flags, bool tagged, bool inject) noexcept;
  ssize_t recv(const core::MsgArgs& a, uint64_t flags, bool tagged) noexcept;
  // recv() for one buffer (fi_recv, fi_trecv: core's MsgSlots), without the iovec and MsgArgs
  // round trip; same checks and returns.
  [[gnu::always_inline]] inline ssize_t recv_one(void* buf, size_t len, fi_addr_t src, void* ctx,
                                                 uint64_t tag, uint64_t ignore, uint64_t flags,
                                                 bool tagged) noexcept;
  ssize_t cancel(void* context) noexcept;
  int getname(void* addr, size_t* addrlen) noexcept;
  int setname(const void* addr, size_t addrlen) noexcept;
  // fi_getopt / fi_setopt (fi_endpoint(3)): FI_OPT_ENDPOINT / FI_OPT_MIN_MULTI_RECV (size_t,
  // bytes). Errors: -FI_EINVAL (null or short value), -FI_ENOPROTOOPT (any other option),
  // -FI_ETOOSMALL (getopt: *len < sizeof(size_t); *len is set).
  int getopt(int level, int name, void* val, size_t* len) noexcept;
  int setopt(int level, int name, const void* val, size_t len) noexcept;
  static constexpr size_t kDefaultMinMultiRecv = 64;
  size_t inject_size() const noexcept { return inject_size_; }

  // RMA and atomics (endpoint_rma.cpp; lib/core/ops_rma.hpp builds fi_ops_rma and
  // fi_ops_atomic from them). One remote segment (rma_iov_count 1); local and remote lengths
  // (element counts) must agree. Errors at the call: -FI_EINVAL (lengths, counts, iovs,
  // unknown fi_addr), -FI_EOPNOTSUPP (no FI_RMA / FI_ATOMIC cap, op/datatype not valid),
  // -FI_EMSGSIZE (above max_msg_size, inject_size, or the atomic element limit), -FI_EAGAIN,
  // -FI_EOPBADSTATE. Failures at the target complete with an error entry: FI_EINVAL (unknown
  // key), FI_EACCES (range or access), FI_EOPNOTSUPP; FI_ETIMEDOUT / FI_EIO if the peer fails.
  ssize_t rma_read(const fi_msg_rma& m, uint64_t flags) noexcept;
  ssize_t rma_write(const fi_msg_rma& m, uint64_t flags, bool inject) noexcept;
  ssize_t atomic_write(const fi_msg_atomic& m, uint64_t flags, bool inject) noexcept;
  ssize_t atomic_fetch(const fi_msg_atomic& m, fi_ioc* res, void** res_desc, size_t res_count,
                       uint64_t flags) noexcept;
  ssize_t atomic_compare(const fi_msg_atomic& m, const fi_ioc* cmp, void** cmp_desc,
                         size_t cmp_count, fi_ioc* res, void** res_desc, size_t res_count,
                         uint64_t flags) noexcept;
  int atomic_valid(core::AtomicKind kind, fi_datatype dt, fi_op op, size_t* count) noexcept;

  // Connected endpoints (FI_EP_MSG; endpoint_cm.cpp; fi_cm(3), fi_eq(3)): one peer, no AV. The
  // handshake runs in transport::CmEndpoint; its outcomes are EQ events: FI_CONNECTED (with
  // the peer's CM data), FI_SHUTDOWN (the peer shut down, reset or died), error events
  // FI_ECONNREFUSED (err_data: the reject's CM data) and FI_ETIMEDOUT.
  // connect: addr in the domain's address format (resolved like fi_av_insert). accept: on an
  // endpoint opened with an FI_CONNREQ info (its handle). Errors: -FI_EOPNOTSUPP (not
  // FI_EP_MSG), -FI_EOPBADSTATE (not enabled), -FI_EISCONN (a second fi_connect/fi_accept),
  // -FI_EINVAL (bad address, CM data above FI_OPT_CM_DATA_SIZE = 256 bytes, no or a stale
  // handle), -FI_EHOSTUNREACH (no MAC for the address), -FI_ENOTCONN (shutdown or getpeer
  // without a connection). Data calls on an unconnected endpoint: -FI_ENOTCONN.
  int connect(const void* addr, const void* param, size_t paramlen) noexcept;
  int accept(const void* param, size_t paramlen) noexcept;
  int shutdown(uint64_t flags) noexcept;
  int getpeer(void* addr, size_t* addrlen) noexcept;
  void on_cm_event(transport::CmEvent ev, const uint8_t* data, uint16_t len) noexcept override;

 private:
  // A CM packet for this endpoint (FI_EP_MSG): to the handshake; frees it.
  void on_cm_packet(transport::PacketBuf& pkt) noexcept;
  // The error for a data call without a peer: -FI_ENOTCONN (MSG) or -FI_EINVAL (bad fi_addr).
  int no_peer_error() const noexcept { return cm_ ? -FI_ENOTCONN : -FI_EINVAL; }
  // fi_addr -> peer: the cached mapping inline (every data call), the rest out of line.
  transport::PeerId resolve(fi_addr_t addr) noexcept {
    if (!cm_ && av_ && addr < peer_cache_.size() && peer_cache_[addr] != transport::kNoPeer &&
        av_->generation() == av_generation_) [[likely]]
      return peer_cache_[addr];
    return resolve_slow(addr);
  }
  transport::PeerId resolve_slow(fi_addr_t addr) noexcept;
  // Drops cached fi_addr mappings after an AV change; true if it did.
  bool refresh_av_cache() noexcept;
  // Close-time linger (transport.linger_ms): flush ACKs, answer retransmissions until quiet.
  void linger() noexcept;
  // The fi_addr of the sender a completion names (its peer and the provider's tag for it),
  // FI_ADDR_NOTAVAIL if the AV does not hold it.
  fi_addr_t source_of(transport::PeerId peer, uint64_t peer_user) noexcept;
  // The error entry of completion c (err from its status), flags as given.
  static fi_cq_err_entry err_entry(const transport::Completion& c, uint64_t flags) noexcept;
  // on_completion's RMA/atomic half: our operations and peers' accesses to our memory.
  void on_rma_completion(const transport::Completion& c) noexcept;
  // FI_* operation flags -> transport kOp* flags of a send or RMA/atomic post (inject_call: an
  // fi_inject* call, which never asks for a completion). RMA and atomics always complete at
  // delivery, so kOpDeliveryComplete only changes sends.
  uint32_t tx_flags(uint64_t flags, bool inject_call) const noexcept {
    constexpr uint64_t kAny = FI_INJECT | FI_MORE | FI_REMOTE_CQ_DATA | FI_DELIVERY_COMPLETE;
    if (!(flags & kAny) && !inject_call && !tx_selective_) return transport::kOpCompletion;
    return ((flags & FI_INJECT) ? transport::kOpInject : 0) |
           ((flags & FI_MORE) ? transport::kOpMore : 0) |
           ((flags & FI_REMOTE_CQ_DATA) ? transport::kOpCqData : 0) |
           ((flags & FI_DELIVERY_COMPLETE) ? transport::kOpDeliveryComplete : 0) |
           ((!inject_call && (!tx_selective_ || (flags & FI_COMPLETION))) ? transport::kOpCompletion
                                                                          : 0);
  }
  // send() and send_one(): under the lock, fill(op) writes every SendOp field but peer, into
  // the engine's send slot (or a stack op when none is free).
  template <class Fill>
  [[gnu::always_inline]] inline ssize_t post_send_op(fi_addr_t addr, const Fill& fill) noexcept;
  // recv() and recv_one(): under the lock, fill(op) writes every RecvOp field but peer, into a
  // receive entry (or, for FI_PEEK / FI_CLAIM, a stack op).
  template <class Fill>
  [[gnu::always_inline]] inline ssize_t post_recv_op(fi_addr_t addr, bool peek_or_claim,
                                                     const Fill& fill) noexcept;
  ssize_t post_rma(transport::RmaOp& op, fi_addr_t addr) noexcept;
  ssize_t rma_common(const fi_msg_rma& m, uint64_t flags, bool inject_call,
                     transport::RmaKind kind) noexcept;
  ssize_t atomic_common(const fi_msg_atomic& m, const fi_ioc* cmp, size_t cmp_n, fi_ioc* res,
                        size_t res_n, uint64_t flags, bool inject_call,
                        transport::RmaKind kind) noexcept;
  // Close-time log at FI_LOG_LEVEL=info: the endpoint's totals, then one line per peer.
  void log_totals() noexcept;

  TransportDomain* tdom_;
  std::unique_ptr<transport::Engine> engine_;
  uint16_t ep_id_ = 0;
  size_t inject_size_ = 0;
  size_t min_multi_recv_ = kDefaultMinMultiRecv;
  std::vector<transport::PeerId> peer_cache_;  // fi_addr -> peer
  uint64_t av_generation_ = 0;
  // FI_EP_MSG
  std::unique_ptr<transport::CmEndpoint> cm_;
  transport::PeerId conn_peer_ = transport::kNoPeer;  // while connected
  ConnReq* connreq_ = nullptr;                       // the request this endpoint may accept
  bool peer_gone_ = false;                            // FI_SHUTDOWN reported
};

}  // namespace pollfab::providers::packet
