// UdIo: the transport's PacketIo over one unreliable-datagram (UD) queue pair of a device port.
// pollfab's own transport (reliability, congestion control, segmentation, matching, RMA and
// atomics; docs/transport.md) runs over it unchanged, as over DPDK and UDP: a UD datagram's
// payload is the pollfab header and payload (docs/wire-format.md), at most the port's active
// MTU. Why UD and not RC for FI_EP_RDM: docs/architecture-notes.md ("verbs RDM").
//
// Buffers: one registered arena (ibv_reg_mr) of slots of 40 + MTU bytes (the 40 bytes take a
// received packet's GRH); rx_depth of them stay posted on the receive queue, refilled at each
// rx_burst. Sends up to the inline size go IBV_SEND_INLINE. Every send is signalled; its slot
// returns to the pool on the send completion (polled at alloc, tx_burst and service).
// Peers: an address handle per destination GID (created at resolve, cached, destroyed at
// close); a Route holds the handle and the peer's QP number.
// Sleeping: the receive CQ's completion channel is wait_fd(); prepare_wait() drains its
// events, re-arms ibv_req_notify_cq and returns false when completions already wait.
// Thread-safety: none (the owning domain serialises), as every PacketIo.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/config/config.hpp"
#include "providers/verbs/device.hpp"
#include "providers/verbs/sidr.hpp"
#include "transport/packet_io.hpp"

struct ibv_context;
struct ibv_pd;
struct ibv_mr;
struct ibv_cq;
struct ibv_qp;
struct ibv_ah;
struct ibv_comp_channel;
struct ibv_wc;

namespace pollfab::providers::verbs {

struct UdIoStats {
  uint64_t rx_packets = 0, tx_packets = 0, tx_inline = 0;
  uint64_t rx_errors = 0;   // receive completions with an error status
  uint64_t tx_errors = 0;   // send completions with an error status, or a failed post
  uint64_t rx_short = 0;    // datagrams too short for a pollfab header, dropped
  uint64_t rx_no_ipv4 = 0;  // datagrams whose sender is not an IPv4 RoCE v2 address, dropped
  uint64_t ah_created = 0, ah_failed = 0;
};

class UdIo final : public transport::PacketIo {
 public:
  static constexpr uint32_t kGrhBytes = 40;
  // The Q_Key of pollfab's UD QPs (rdma_cm's RDMA_UDP_QKEY: service ID resolution hands it out).
  static constexpr uint32_t kQkey = 0x01234567;

  // Opens the device of `port`, a PD, CQs, a completion channel, the UD QP (INIT, RTR, RTS) and
  // the registered buffer arena. nullptr with err set on failure (the verbs call and errno).
  static std::unique_ptr<UdIo> open(const PortInfo& port, const config::VerbsConfig& cfg,
                                    std::string& err);
  ~UdIo() override;

  uint32_t max_packet_bytes() const noexcept override { return mtu_; }
  // The InfiniBand/RoCE ICRC covers every packet end to end; the device drops bad ones.
  bool end_to_end_checked() const noexcept override { return true; }
  uint16_t alloc(transport::PacketBuf* out, uint16_t n) noexcept override;
  uint16_t tx_burst(transport::PacketBuf* pkts, uint16_t n) noexcept override;
  void free(transport::PacketBuf* pkts, uint16_t n) noexcept override;
  void resolve(const transport::HostAddr& host, transport::Route& route) noexcept override;
  uint16_t rx_burst(transport::PacketBuf* out, uint16_t n) noexcept override;
  void service() noexcept override { reap_sends(); }
  size_t counters(util::Counter* out, size_t max) const noexcept override;
  int wait_fd() const noexcept override;
  bool prepare_wait() noexcept override;

  uint32_t qpn() const noexcept { return qpn_; }
  uint32_t ipv4() const noexcept { return port_.ipv4; }
  const PortInfo& port() const noexcept { return port_; }
  ibv_context* context() const noexcept { return ctx_; }
  const UdIoStats& stats() const noexcept { return stats_; }
  // The service ID resolution listener naming this QP (its lifetime becomes the QP's).
  void keep_listener(std::unique_ptr<SidrListener> l) noexcept { sidr_ = std::move(l); }

 private:
  UdIo() = default;
  uint8_t* slot(uint32_t i) const noexcept { return arena_ + size_t(i) * slot_bytes_; }
  uint32_t index_of(const uint8_t* p) const noexcept {
    return static_cast<uint32_t>((p - arena_) / slot_bytes_);
  }
  void refill() noexcept;
  void reap_sends() noexcept;
  // Turns one receive completion into out (true) or drops and recycles it (false).
  bool take(const ibv_wc& wc, transport::PacketBuf& out) noexcept;

  PortInfo port_;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* send_cq_ = nullptr;
  ibv_cq* recv_cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  ibv_mr* mr_ = nullptr;
  uint8_t* arena_ = nullptr;
  size_t arena_bytes_ = 0;
  uint32_t slot_bytes_ = 0;
  uint32_t slots_ = 0;
  uint32_t mtu_ = 0;
  uint32_t qpn_ = 0;
  uint32_t lkey_ = 0;
  uint32_t inline_max_ = 0;
  uint32_t tx_depth_ = 0, rx_depth_ = 0;
  uint32_t tx_outstanding_ = 0;  // sends posted, completion not yet reaped
  uint32_t rx_posted_ = 0;       // receive buffers on the queue
  std::vector<uint32_t> free_;   // free slot indices
  std::vector<ibv_wc> stash_;    // receive completions prepare_wait polled (rx_burst's first)
  size_t stash_head_ = 0;
  std::unordered_map<uint32_t, ibv_ah*> ahs_;  // by destination IPv4
  std::unique_ptr<SidrListener> sidr_;         // stopped before the QP is destroyed
  UdIoStats stats_;
};

}  // namespace pollfab::providers::verbs
