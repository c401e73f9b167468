// DpdkIo: the transport's PacketIo over one port queue pair. Frames are
// Ethernet / IPv4 (no options, DF) / UDP (checksum 0) / pollfab header / payload
// (docs/wire-format.md). The lower 42 bytes of every frame come from a per-peer template built
// by resolve(); tx fills the lengths and the IPv4 checksum (the template's, computed with length
// 0, plus the frame's length: ipv4_len.hpp). rx validates every lower-layer
// field (our MAC or broadcast, IPv4 version/IHL/length/no fragments/UDP/our address, our UDP
// port, UDP length) and drops and counts anything else. Fault injection is not here: the
// domain wraps this layer in transport::FaultIo when the config asks for faults.
// Zero copy (PacketIo::attach): a payload in application memory becomes a data-less mbuf from
// the port's ext_pool attached to that memory (rte_pktmbuf_attach_extbuf), chained after the
// header mbuf; its shared-info free callback drops the pin's reference when the device (or the
// fault injector) frees the last mbuf over it. Pins and shared-info slots are preallocated.
// Thread-safety: none (the domain serialises; mbufs are freed by the thread sending them).
#pragma once
#include <rte_mbuf.h>

#include <cstdint>
#include <memory>
#include <string>

#include "dpdk_glue/port.hpp"
#include "lib/util/critical_path_marks.hpp"
#include "providers/dpdk/arp.hpp"
#include "transport/packet_io.hpp"

namespace pollfab::providers::dpdk {

constexpr uint32_t kL2L4Bytes = 14 + 20 + 8;

struct IoStats {
  uint64_t rx_frames = 0, tx_frames = 0;
  uint64_t rx_not_ipv4 = 0, rx_not_for_us = 0, rx_bad_ip = 0, rx_not_udp = 0, rx_bad_udp = 0;
  uint64_t rx_fragment = 0, rx_multiseg = 0;
};

class DpdkIo final : public transport::PacketIo {
 public:
  // port: kept open while this object lives. pin_cpus: CPUs to pin calling threads to
  // (eal.pin_threads), "" = no pinning. zero_copy_min: segments of at least this many payload
  // bytes are attached, not copied (0 or a port without an ext_pool: never).
  // arp_answer: answer ARP requests for ipv4 (providers/dpdk/arp.hpp).
  DpdkIo(std::shared_ptr<dpdk_glue::Port> port, uint32_t ipv4, uint16_t udp_port,
         std::string pin_cpus = {}, uint32_t zero_copy_min = 0, bool arp_answer = true);
  ~DpdkIo() override;

  uint32_t max_packet_bytes() const noexcept override { return mtu_ - 28; }
  uint16_t alloc(transport::PacketBuf* out, uint16_t n) noexcept override;
  uint16_t tx_burst(transport::PacketBuf* pkts, uint16_t n) noexcept override;
  void free(transport::PacketBuf* pkts, uint16_t n) noexcept override;
  void resolve(const transport::HostAddr& host, transport::Route& route) noexcept override;
  uint32_t zero_copy_min_bytes() const noexcept override { return zc_min_; }
  // memif: shared memory between processes of this host, nothing to corrupt on the way.
  bool end_to_end_checked() const noexcept override { return port_->shared_memory(); }
  transport::PinId pin_open() noexcept override;
  bool attach(transport::PacketBuf& pkt, const uint8_t* data, uint32_t len,
              transport::PinId pin) noexcept override;
  bool pinned(transport::PinId pin) const noexcept override;
  void pin_close(transport::PinId pin) noexcept override;
  // A second reference to the same mbuf chain (fault duplicates).
  bool clone(const transport::PacketBuf& pkt, transport::PacketBuf& out) noexcept override;

  uint16_t rx_burst(transport::PacketBuf* out, uint16_t n) noexcept override;
  // The port's Rx interrupt descriptor (net_tap; -1 elsewhere: sleepers nap or an assist
  // thread watches, lib/core/waiter.hpp). It shows every frame the PMD has not read.
  int wait_fd() const noexcept override { return port_->rx_intr_fd(); }
  bool prepare_wait() noexcept override { return port_->rx_intr_fd() >= 0; }
  // Asks the device for sent mbufs still holding zero-copy memory. memif: every
  // kLinkCheckRounds calls, checks the link, and when a server's has gone down has the port's
  // link watch map the next connection's regions in (dpdk_glue/memif_link_watch.hpp: each
  // connection makes new ones).
  void service() noexcept override;
  static constexpr uint32_t kLinkCheckRounds = 1024;
  size_t counters(util::Counter* out, size_t max) const noexcept override;
  const IoStats& stats() const noexcept { return stats_; }
  // Neighbours (ARP, static entries): the MAC of ip (host order) if known.
  bool neighbour(uint32_t ip, uint8_t* mac) const noexcept { return arp_.lookup(ip, mac); }
  bool add_neighbour(const std::string& entry) { return arp_.add_static(entry); }
  // Broadcasts an ARP request for ip; the answer arrives through rx_burst. False if no mbuf.
  bool arp_request(uint32_t ip) noexcept;

 private:
  std::shared_ptr<dpdk_glue::Port> port_;  // kept open while this object lives
  uint32_t mtu_;
  uint32_t ipv4_;      // host order
  uint16_t udp_port_;  // host order
  rte_ether_addr mac_;
  std::string pin_cpus_;
  IoStats stats_;
  Arp arp_;
  // Sends one frame of len bytes built by fill(data). False if no mbuf or the queue is full.
  template <class F>
  bool send_frame(uint32_t len, F&& fill) noexcept;
  void on_arp(const uint8_t* frame, uint32_t len) noexcept;
  struct ZeroCopy;  // pins and shared-info slots; outlives this object while mbufs reference it
  ZeroCopy* zc_ = nullptr;
  uint32_t zc_min_ = UINT32_MAX;
  const bool memif_;             // port_->shared_memory()
  uint32_t link_check_ = 1;      // service() calls until the next memif link check
  bool link_was_up_;             // at the last check (at construction: up at Port::open)
  void check_memif_link() noexcept;
  util::CriticalPathMarks marks_;  // bench-instructions' critical path: rx burst to tx burst
};

}  // namespace pollfab::providers::dpdk
