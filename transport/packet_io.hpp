// PacketIo: how the transport sees a link. Implemented by the dpdk provider (mbufs on a port
// queue), the udp provider (kernel sockets) and transport/testing (in-memory link).
//
// The transport writes the pollfab header and payload at PacketBuf::data; the I/O layer owns
// the headroom before it for its own lower headers (Ethernet/IPv4/UDP on DPDK).
// Ownership: alloc() hands buffers to the caller; tx_burst() takes back the ones it sends
// (the first `n_sent`), the caller keeps the rest; buffers from rx are the receiver's until it
// calls free(). Thread-safety: none (the owning domain serialises calls).
#pragma once
#include <cstdint>
#include <cstring>

namespace pollfab::transport {

// Where a peer lives at the I/O layer (MAC + IPv4 + UDP port on DPDK; IPv4 + port on UDP;
// a link index in tests). Opaque to the transport: compared and hashed only.
struct HostAddr {
  uint8_t bytes[16] = {};
  friend bool operator==(const HostAddr& a, const HostAddr& b) noexcept {
    return std::memcmp(a.bytes, b.bytes, sizeof a.bytes) == 0;
  }
};

// A transport-level endpoint address: host + endpoint id (the pollfab header's ep fields).
struct PeerAddr {
  HostAddr host;
  uint16_t ep_id = 0;
  friend bool operator==(const PeerAddr& a, const PeerAddr& b) noexcept {
    return a.ep_id == b.ep_id && a.host == b.host;
  }
};

struct PeerAddrHash {
  size_t operator()(const PeerAddr& a) const noexcept {
    uint64_t x, y;
    std::memcpy(&x, a.host.bytes, 8);
    std::memcpy(&y, a.host.bytes + 8, 8);
    uint64_t h = (x ^ (y * 0x9E3779B97F4A7C15ull) ^ a.ep_id) * 0xff51afd7ed558ccdull;
    return static_cast<size_t>(h ^ (h >> 33));
  }
};

// Precomputed per-peer lower headers / socket address; filled by PacketIo::resolve.
struct Route {
  alignas(8) uint8_t bytes[64] = {};
};

struct PacketBuf {
  uint8_t* data = nullptr;      // pollfab header starts here
  uint32_t len = 0;             // valid bytes from data (tx: set by the transport)
  uint32_t cap = 0;             // writable bytes from data (tx)
  void* handle = nullptr;       // I/O layer's buffer (mbuf, pool slot)
  const Route* route = nullptr; // tx: destination
  HostAddr src;                 // rx: sender's host address
};

class PacketIo {
 public:
  virtual ~PacketIo() = default;
  // Largest pollfab header + payload one packet can carry, bytes (MTU minus lower headers).
  virtual uint32_t max_packet_bytes() const noexcept = 0;
  // Allocates up to n tx buffers (cap >= max_packet_bytes()); returns how many.
  virtual uint16_t alloc(PacketBuf* out, uint16_t n) noexcept = 0;
  // Sends pkts[0..n) in order; returns the count sent (those are consumed; the rest stay owned
  // by the caller). A short count is back-pressure, never an error.
  virtual uint16_t tx_burst(PacketBuf* pkts, uint16_t n) noexcept = 0;
  // Returns buffers (from alloc or rx) to the I/O layer.
  virtual void free(PacketBuf* pkts, uint16_t n) noexcept = 0;
  // Fills the route used to send to `host` (e.g. the Ethernet/IPv4/UDP header template).
  virtual void resolve(const HostAddr& host, Route& route) noexcept = 0;
};

}  // namespace pollfab::transport
