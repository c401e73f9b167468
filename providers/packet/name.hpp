// The binary endpoint name of the transport-based providers (dpdk, udp): what fi_getname
// returns, fi_av_insert takes and the AV stores. Fixed size: kNameBytes = 24 bytes (<= 64,
// FI_NAME_MAX), address format FI_FORMAT_UNSPEC (provider-specific binary).
//
//   off size field
//    0   1   magic 0x50 ('P')
//    1   1   version (1)
//    2   1   kind: 1 = dpdk, 2 = udp
//    3   1   reserved (0)
//    4   6   MAC address (dpdk; zero for udp)
//   10   2   UDP port, big-endian
//   12   4   IPv4 address, big-endian
//   16   2   endpoint id, big-endian
//   18   6   reserved (0)
//
// The transport's HostAddr is bytes 4..15 of the name (MAC, port, IPv4) plus zero padding.
#pragma once
#include <cstdint>
#include <string>

#include "lib/core/av.hpp"
#include "transport/packet_io.hpp"

namespace pollfab::providers::packet {

constexpr size_t kNameBytes = 24;
constexpr uint8_t kNameMagic = 0x50;
constexpr uint8_t kNameVersion = 1;
enum class NameKind : uint8_t { Dpdk = 1, Udp = 2 };

struct Name {
  NameKind kind = NameKind::Dpdk;
  uint8_t mac[6] = {};
  uint16_t udp_port = 0;  // host order
  uint32_t ipv4 = 0;      // host order
  uint16_t ep_id = 0;

  void encode(uint8_t* out) const noexcept;
  // Returns false if the bytes are not a valid name of this kind.
  static bool decode(const uint8_t* in, size_t len, NameKind kind, Name& out) noexcept;
  transport::HostAddr host() const noexcept;
  transport::PeerAddr peer() const noexcept { return {host(), ep_id}; }
  static Name from_host(NameKind kind, const transport::HostAddr& h, uint16_t ep_id) noexcept;
  std::string str() const;
};

// AddressFormat for core::Av: validates and prints names of one kind.
class NameFormat final : public core::AddressFormat {
 public:
  explicit NameFormat(NameKind kind) : kind_(kind) {}
  size_t len() const noexcept override { return kNameBytes; }
  bool valid(const void* addr, size_t len) const noexcept override;
  std::string str(const void* addr, size_t len) const override;

 private:
  NameKind kind_;
};

}  // namespace pollfab::providers::packet
