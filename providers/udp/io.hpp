// UdpIo: the transport's PacketIo over one non-blocking kernel UDP socket. The kernel adds
// IPv4/UDP; a datagram's payload is the pollfab header and payload (docs/wire-format.md).
// tx uses sendmmsg, rx recvmmsg (one system call per burst). Buffers come from a fixed pool.
// Fault injection is not here: the domain wraps this layer in transport::FaultIo when the
// config asks for faults. Thread-safety: none (the domain serialises).
#pragma once
#include <netinet/in.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/packet_io.hpp"

namespace pollfab::providers::udp {

struct UdpIoStats {
  uint64_t rx_datagrams = 0, tx_datagrams = 0, tx_errors = 0;
};

class UdpIo final : public transport::PacketIo {
 public:
  static constexpr uint32_t kMaxPacketBytes = 8972;  // 9000-byte IP MTU minus IPv4 and UDP
  static constexpr uint32_t kPoolBuffers = 8192;

  // Binds ip:port (host order; port 0 = ephemeral). Returns nullptr and sets err on failure.
  static std::unique_ptr<UdpIo> open(uint32_t ip, uint16_t port, uint64_t sockbuf_bytes,
                                     std::string& err);
  ~UdpIo() override;

  uint32_t max_packet_bytes() const noexcept override { return kMaxPacketBytes; }
  uint16_t alloc(transport::PacketBuf* out, uint16_t n) noexcept override;
  uint16_t tx_burst(transport::PacketBuf* pkts, uint16_t n) noexcept override;
  void free(transport::PacketBuf* pkts, uint16_t n) noexcept override;
  void resolve(const transport::HostAddr& host, transport::Route& route) noexcept override;

  uint16_t rx_burst(transport::PacketBuf* out, uint16_t n) noexcept override;
  size_t counters(util::Counter* out, size_t max) const noexcept override;
  // The socket polls readable while datagrams wait (level-triggered: nothing to arm).
  int wait_fd() const noexcept override { return fd_; }
  bool prepare_wait() noexcept override { return true; }
  uint32_t ip() const noexcept { return ip_; }
  uint16_t port() const noexcept { return port_; }
  const UdpIoStats& stats() const noexcept { return stats_; }

 private:
  UdpIo() = default;
  uint16_t send(uint8_t** data, uint32_t* len, const sockaddr_in** to, uint16_t n) noexcept;
  uint8_t* get() noexcept;
  void put(uint8_t* b) noexcept { free_.push_back(b); }

  int fd_ = -1;
  uint32_t ip_ = 0;
  uint16_t port_ = 0;
  std::unique_ptr<uint8_t[]> arena_;
  std::vector<uint8_t*> free_;
  UdpIoStats stats_;
};

}  // namespace pollfab::providers::udp
