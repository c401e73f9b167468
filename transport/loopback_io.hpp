// LoopbackIo: packets addressed to this host never reach the wire (FI_LOCAL_COMM, fi_getinfo(3):
// an endpoint sending to itself or to another endpoint of the same domain). It wraps the
// domain's PacketIo (above the fault layer: local traffic sees no injected faults); a route
// resolved for the local host is marked Route::loopback, and tx_burst moves such packets to a
// ring that rx_burst drains before the wrapped layer's queue, with src = the local host. A
// zero-copy packet gets bytes of its own first (the receiver may hold it past the sender's
// completion). DPDK needs this (a port does not hear its own frames); on kernel UDP it saves two
// syscalls per packet.
// Limits: kRingPackets in the ring; tx_burst stops at a local packet when the ring is full
// (back-pressure, as a full device queue). Thread-safety: none (the domain serialises).
// Hot path: no allocation; one branch per transmitted packet.
#pragma once
#include <cstdint>

#include "transport/packet_io_filter.hpp"

namespace pollfab::transport {

class LoopbackIo final : public PacketIoFilter {
 public:
  static constexpr uint32_t kRingPackets = 1024;  // power of two

  // inner must outlive this object; local is the host address of this domain's names.
  LoopbackIo(PacketIo& inner, const HostAddr& local) noexcept : PacketIoFilter(inner), local_(local) {}
  // Frees the packets still in the ring through the wrapped layer.
  ~LoopbackIo() override;

  uint16_t tx_burst(PacketBuf* pkts, uint16_t n) noexcept override;
  void resolve(const HostAddr& host, Route& route) noexcept override {
    inner_.resolve(host, route);
    route.loopback = host == local_;
  }
  uint16_t rx_burst(PacketBuf* out, uint16_t n) noexcept override;
  size_t counters(util::Counter* out, size_t max) const noexcept override;
  // Local packets in the ring never show on the wrapped layer's descriptor.
  bool prepare_wait() noexcept override { return queued() == 0 && inner_.prepare_wait(); }

  uint32_t queued() const noexcept { return tail_ - head_; }
  uint64_t looped_packets() const noexcept { return looped_; }

 private:
  // Moves local packet pkt into the ring. False: ring full or no buffer for a copy.
  bool loop(PacketBuf& pkt) noexcept;

  HostAddr local_;
  PacketBuf ring_[kRingPackets];
  uint32_t head_ = 0, tail_ = 0;  // free-running; ring_[i & (kRingPackets - 1)]
  uint64_t looped_ = 0, ring_full_ = 0;
};

}  // namespace pollfab::transport
