#include "providers/packet/name.hpp"

#include <fmt/format.h>

#include <cstring>

#include "lib/util/bits.hpp"

namespace pollfab::providers::packet {

void Name::encode(uint8_t* out) const noexcept {
  std::memset(out, 0, kNameBytes);
  out[0] = kNameMagic;
  out[1] = kNameVersion;
  out[2] = static_cast<uint8_t>(kind);
  std::memcpy(out + 4, mac, 6);
  util::store_be16(out + 10, udp_port);
  util::store_be32(out + 12, ipv4);
  util::store_be16(out + 16, ep_id);
}

bool Name::decode(const uint8_t* in, size_t len, NameKind kind, Name& out) noexcept {
  if (!in || len < kNameBytes) return false;
  if (in[0] != kNameMagic || in[1] != kNameVersion || in[2] != static_cast<uint8_t>(kind))
    return false;
  out.kind = kind;
  std::memcpy(out.mac, in + 4, 6);
  out.udp_port = util::load_be16(in + 10);
  out.ipv4 = util::load_be32(in + 12);
  out.ep_id = util::load_be16(in + 16);
  return true;
}

transport::HostAddr Name::host() const noexcept {
  transport::HostAddr h;
  std::memcpy(h.bytes, mac, 6);
  util::store_be16(h.bytes + 6, udp_port);
  util::store_be32(h.bytes + 8, ipv4);
  return h;
}

Name Name::from_host(NameKind kind, const transport::HostAddr& h, uint16_t ep_id) noexcept {
  Name n;
  n.kind = kind;
  std::memcpy(n.mac, h.bytes, 6);
  n.udp_port = util::load_be16(h.bytes + 6);
  n.ipv4 = util::load_be32(h.bytes + 8);
  n.ep_id = ep_id;
  return n;
}

std::string Name::str() const {
  const char* k = kind == NameKind::Dpdk ? "dpdk" : "udp";
  return fmt::format("fi_{}://{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}/{}.{}.{}.{}:{}/{}", k,
                     mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], ipv4 >> 24,
                     (ipv4 >> 16) & 0xff, (ipv4 >> 8) & 0xff, ipv4 & 0xff, udp_port, ep_id);
}

bool NameFormat::valid(const void* addr, size_t len) const noexcept {
  Name n;
  return Name::decode(static_cast<const uint8_t*>(addr), len, kind_, n);
}

std::string NameFormat::str(const void* addr, size_t len) const {
  Name n;
  if (!Name::decode(static_cast<const uint8_t*>(addr), len, kind_, n)) return "fi_addr_invalid://";
  return n.str();
}

}  // namespace pollfab::providers::packet
