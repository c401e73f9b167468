// The binary endpoint name of the transport-based providers (dpdk, udp): what fi_getname
// returns, fi_av_insert takes and the AV stores. Fixed size: kNameBytes = 24 bytes (<= 64,
// FI_NAME_MAX), address format FI_FORMAT_UNSPEC (provider-specific binary).
//
//   off size field
//    0   1   magic 0x50 ('P')
//    1   1   version (1)
//    2   1   kind: 1 = dpdk, 2 = udp, 3 = verbs
//    3   1   reserved (0)
//    4   6   MAC address (dpdk; zero for udp); verbs: 0, 0, 0 and the UD QP number (24 bits)
//   10   2   UDP port, big-endian (verbs: the rdma_cm service the QP number is resolved by)
//   12   4   IPv4 address, big-endian (verbs: of the RoCE v2 GID ::ffff:a.b.c.d)
//   16   2   endpoint id, big-endian
//   18   6   reserved (0)
//
// The transport's HostAddr is bytes 4..15 of the name (MAC, port, IPv4) plus zero padding; for
// verbs the port is left out (a UD packet shows its sender's GID and QP number, not the service).
//
// Other forms an application may use (fi_getinfo addr_format, docs/addressing.md):
//   FI_ADDR_STR     "fi_dpdk://[MAC/]IPv4:PORT[/EP]", "fi_udp://IPv4:PORT[/EP]",
//                   "fi_verbs://[qQPN/]IPv4:PORT[/EP]" (QPN decimal) (Name::str
//                   writes it, Name::parse reads it; a missing EP is kServiceEpId, a missing MAC
//                   is resolved by the domain: ARP or the static neighbour table for dpdk)
//   FI_SOCKADDR_IN  IPv4 address and UDP port; names the endpoint kServiceEpId of that port
// A name whose MAC is all zero is "not yet resolved" (dpdk: by ARP; verbs: its QP number, by
// rdma_cm service ID resolution); the udp kind never has one.
#pragma once
#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <string_view>

#include <rdma/fabric.h>

#include "lib/core/av.hpp"
#include "transport/packet_io.hpp"

namespace pollfab::providers::packet {

constexpr size_t kNameBytes = 24;
constexpr uint8_t kNameMagic = 0x50;
constexpr uint8_t kNameVersion = 1;
enum class NameKind : uint8_t { Dpdk = 1, Udp = 2, Verbs = 3 };
// The endpoint a name given by node and service reaches (fi_getinfo dest_addr, FI_SOCKADDR_IN,
// fi_av_insertsvc, a string without /EP): the first endpoint opened on the domain (ids start
// at 1).
constexpr uint16_t kServiceEpId = 1;

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
  // FI_ADDR_STR text (see the header comment); the MAC only when known, never for udp.
  std::string str() const;
  // Reads the FI_ADDR_STR text of a name of this kind (the scheme must match). False if
  // malformed (bad scheme, MAC, address, port or endpoint id above 65535). Port 0 is
  // kept (a source that takes an ephemeral port).
  static bool parse(std::string_view text, NameKind kind, Name& out) noexcept;
  // FI_SOCKADDR_IN: address and port (AF_INET, len >= sizeof(sockaddr_in)); endpoint
  // kServiceEpId, MAC unknown. False if not an AF_INET address.
  static bool from_sockaddr(const void* sa, size_t len, NameKind kind, Name& out) noexcept;
  sockaddr_in to_sockaddr() const noexcept;
  bool mac_known() const noexcept;
  // verbs: the UD QP number held in mac[3..5] (0 = not yet resolved).
  uint32_t qpn() const noexcept { return uint32_t(mac[3]) << 16 | uint32_t(mac[4]) << 8 | mac[5]; }
  void set_qpn(uint32_t q) noexcept {
    mac[0] = mac[1] = mac[2] = 0;
    mac[3] = uint8_t(q >> 16), mac[4] = uint8_t(q >> 8), mac[5] = uint8_t(q);
  }
};

// An IPv4 address (host order) for a node: a dotted quad or a host name (getaddrinfo, AF_INET).
// False if it does not resolve.
bool resolve_node(const char* node, uint32_t& ipv4);
// fi_tostr of FI_FORMAT_UNSPEC addresses: a name of either kind as its FI_ADDR_STR text
// (core::UnspecAddrPrinter). install_name_printer registers it (idempotent; providers call it
// when they are created).
size_t print_name(const void* addr, char* buf, size_t cap) noexcept;
void install_name_printer() noexcept;
// A service: a decimal UDP port 1..65535. False otherwise.
bool parse_service(const char* service, uint16_t& port) noexcept;

// Completes a name whose link address is unknown (dpdk: MAC by the static neighbour table or
// ARP over the port). Returns 0 or -FI_EHOSTUNREACH (no answer within the bounded wait).
class NameResolver {
 public:
  virtual ~NameResolver() = default;
  virtual int complete(Name& n) noexcept = 0;
};

// AddressFormat for core::Av and the endpoints' fi_getname/fi_setname: binary names of one
// kind, in the application's form `app` (FI_FORMAT_UNSPEC, FI_SOCKADDR_IN or FI_ADDR_STR).
// Names that arrive without a link address go through the resolver (when set) before the AV
// stores them.
class NameFormat final : public core::AddressFormat {
 public:
  explicit NameFormat(NameKind kind, uint32_t app = FI_FORMAT_UNSPEC) : kind_(kind), app_(app) {}
  // True for the forms this provider takes (FI_FORMAT_UNSPEC, FI_SOCKADDR_IN, FI_ADDR_STR).
  static bool supported(uint32_t app) noexcept;
  void set_resolver(NameResolver* r) noexcept { resolver_ = r; }
  size_t len() const noexcept override { return kNameBytes; }
  bool valid(const void* addr, size_t len) const noexcept override;
  std::string str(const void* addr, size_t len) const override;
  uint32_t app_format() const noexcept override { return app_; }
  int import(const void* addrs, size_t i, uint8_t* out) const noexcept override;
  int export_to(const uint8_t* name, void* buf, size_t* buflen) const noexcept override;
  int from_service(const char* node, const char* service, uint8_t* out) const noexcept override;
  // verbs: a name with its QP number is identified without its service (a received UD packet
  // shows the sender's address and QP number, not the service that named it).
  std::string identity(const uint8_t* name) const override;
  // One address in the application's form (len bytes; FI_ADDR_STR: a NUL-terminated string)
  // -> name, unresolved. False if malformed.
  bool decode_app(const void* addr, size_t len, Name& out) const noexcept;
  // The same for an address whose length the caller does not give (fi_connect, fi_av_straddr):
  // the form's own size (FI_ADDR_STR: up to kMaxTextBytes).
  bool decode_app(const void* addr, Name& out) const noexcept;
  static constexpr size_t kMaxTextBytes = 256;
  // Resolves n's link address if needed (0 or the resolver's error).
  int complete(Name& n) const noexcept { return resolver_ ? resolver_->complete(n) : 0; }

 private:
  NameKind kind_;
  uint32_t app_;
  NameResolver* resolver_ = nullptr;
};

}  // namespace pollfab::providers::packet
