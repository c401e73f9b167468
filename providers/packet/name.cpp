#include "providers/packet/name.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstring>

#include "lib/core/tostr.hpp"
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
  util::store_be16(h.bytes + 6, kind == NameKind::Verbs ? 0 : udp_port);
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
  std::string ip = fmt::format("{}.{}.{}.{}:{}/{}", ipv4 >> 24, (ipv4 >> 16) & 0xff,
                               (ipv4 >> 8) & 0xff, ipv4 & 0xff, udp_port, ep_id);
  if (kind == NameKind::Udp) return "fi_udp://" + ip;
  if (kind == NameKind::Verbs)
    return qpn() ? fmt::format("fi_verbs://q{}/{}", qpn(), ip) : "fi_verbs://" + ip;
  if (!mac_known()) return "fi_dpdk://" + ip;
  return fmt::format("fi_dpdk://{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}/{}", mac[0], mac[1],
                     mac[2], mac[3], mac[4], mac[5], ip);
}

bool Name::mac_known() const noexcept {
  for (uint8_t b : mac)
    if (b) return true;
  return false;
}

namespace {

bool parse_uint(std::string_view s, uint32_t max, uint32_t& out) noexcept {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > max) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

bool parse_ipv4(std::string_view s, uint32_t& out) noexcept {
  char buf[INET_ADDRSTRLEN];
  if (s.size() >= sizeof buf) return false;
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = 0;
  in_addr a{};
  if (inet_pton(AF_INET, buf, &a) != 1) return false;
  out = ntohl(a.s_addr);
  return true;
}

bool parse_mac(std::string_view s, uint8_t* mac) noexcept {
  if (s.size() != 17) return false;
  for (int i = 0; i < 6; ++i) {
    if (i && s[static_cast<size_t>(i) * 3 - 1] != ':') return false;
    unsigned v = 0;
    for (int k = 0; k < 2; ++k) {
      char c = s[static_cast<size_t>(i) * 3 + static_cast<size_t>(k)];
      unsigned d = c >= '0' && c <= '9' ? unsigned(c - '0')
                   : c >= 'a' && c <= 'f' ? unsigned(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? unsigned(c - 'A' + 10)
                                          : 16u;
      if (d > 15) return false;
      v = v * 16 + d;
    }
    mac[i] = static_cast<uint8_t>(v);
  }
  return true;
}

}  // namespace

bool Name::parse(std::string_view text, NameKind kind, Name& out) noexcept {
  const std::string_view scheme = kind == NameKind::Dpdk  ? "fi_dpdk://"
                                  : kind == NameKind::Udp ? "fi_udp://"
                                                          : "fi_verbs://";
  if (text.substr(0, scheme.size()) != scheme) return false;
  text.remove_prefix(scheme.size());
  Name n;
  n.kind = kind;
  // [MAC/]IPv4:PORT[/EP]; a MAC has colons before any slash, an address has none.
  size_t slash = text.find('/');
  if (kind == NameKind::Verbs && slash != std::string_view::npos && text[0] == 'q') {
    uint32_t q = 0;
    if (!parse_uint(text.substr(1, slash - 1), 0xffffff, q)) return false;
    n.set_qpn(q);
    text.remove_prefix(slash + 1);
  } else if (slash != std::string_view::npos && text.substr(0, slash).find(':') != std::string_view::npos &&
      text.substr(0, slash).find('.') == std::string_view::npos) {
    if (kind == NameKind::Verbs || !parse_mac(text.substr(0, slash), n.mac)) return false;
    // The udp kind has no link address: an all-zero MAC (older text) is accepted, no other.
    if (kind == NameKind::Udp && n.mac_known()) return false;
    text.remove_prefix(slash + 1);
  }
  slash = text.find('/');
  std::string_view hostport = text.substr(0, slash);
  size_t colon = hostport.rfind(':');
  uint32_t port = 0, ep = kServiceEpId;
  if (colon == std::string_view::npos || !parse_ipv4(hostport.substr(0, colon), n.ipv4) ||
      !parse_uint(hostport.substr(colon + 1), 65535, port))
    return false;
  if (slash != std::string_view::npos && !parse_uint(text.substr(slash + 1), 65535, ep))
    return false;
  n.udp_port = static_cast<uint16_t>(port);
  n.ep_id = static_cast<uint16_t>(ep);
  out = n;
  return true;
}

bool Name::from_sockaddr(const void* sa, size_t len, NameKind kind, Name& out) noexcept {
  if (!sa || len < sizeof(sockaddr_in)) return false;
  sockaddr_in in;
  std::memcpy(&in, sa, sizeof in);
  if (in.sin_family != AF_INET) return false;
  Name n;
  n.kind = kind;
  n.ipv4 = ntohl(in.sin_addr.s_addr);
  n.udp_port = ntohs(in.sin_port);
  n.ep_id = kServiceEpId;
  out = n;
  return true;
}

sockaddr_in Name::to_sockaddr() const noexcept {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(ipv4);
  in.sin_port = htons(udp_port);
  return in;
}

bool resolve_node(const char* node, uint32_t& ipv4) {
  if (!node || !*node) return false;
  if (parse_ipv4(node, ipv4)) return true;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(node, nullptr, &hints, &res) != 0 || !res) return false;
  ipv4 = ntohl(reinterpret_cast<const sockaddr_in*>(res->ai_addr)->sin_addr.s_addr);
  freeaddrinfo(res);
  return true;
}

bool parse_service(const char* service, uint16_t& port) noexcept {
  uint32_t v = 0;
  if (!service || !parse_uint(service, 65535, v) || v == 0) return false;
  port = static_cast<uint16_t>(v);
  return true;
}

std::string NameFormat::identity(const uint8_t* name) const {
  std::string id(reinterpret_cast<const char*>(name), kNameBytes);
  Name n;
  if (kind_ == NameKind::Verbs && Name::decode(name, kNameBytes, kind_, n) && n.qpn())
    id[10] = id[11] = 0;  // the service (name.hpp's layout)
  return id;
}

size_t print_name(const void* addr, char* buf, size_t cap) noexcept {
  if (!cap) return 0;
  const auto* b = static_cast<const uint8_t*>(addr);
  Name n;
  if (!Name::decode(b, kNameBytes, NameKind::Dpdk, n) && !Name::decode(b, kNameBytes, NameKind::Udp, n) &&
      !Name::decode(b, kNameBytes, NameKind::Verbs, n)) {
    buf[0] = 0;
    return 0;
  }
  size_t len = 0;
  try {
    std::string s = n.str();
    len = std::min(s.size(), cap - 1);
    std::memcpy(buf, s.data(), len);
  } catch (...) {
  }
  buf[len] = 0;
  return len;
}

void install_name_printer() noexcept { core::set_unspec_addr_printer(&print_name); }

bool NameFormat::supported(uint32_t app) noexcept {
  return app == FI_FORMAT_UNSPEC || app == FI_SOCKADDR_IN || app == FI_ADDR_STR;
}

bool NameFormat::decode_app(const void* addr, size_t len, Name& out) const noexcept {
  if (!addr) return false;
  switch (app_) {
    case FI_SOCKADDR_IN:
      return Name::from_sockaddr(addr, len, kind_, out);
    case FI_ADDR_STR: {
      const char* s = static_cast<const char*>(addr);
      return Name::parse(std::string_view(s, strnlen(s, len ? len : kMaxTextBytes)), kind_, out);
    }
    default:
      return Name::decode(static_cast<const uint8_t*>(addr), len, kind_, out);
  }
}

bool NameFormat::valid(const void* addr, size_t len) const noexcept {
  Name n;
  return decode_app(addr, len, n);
}

bool NameFormat::decode_app(const void* addr, Name& out) const noexcept {
  const size_t len = app_ == FI_SOCKADDR_IN ? sizeof(sockaddr_in)
                     : app_ == FI_ADDR_STR  ? kMaxTextBytes
                                            : kNameBytes;
  return decode_app(addr, len, out);
}

std::string NameFormat::str(const void* addr, size_t) const {
  Name n;
  if (!decode_app(addr, n)) return "fi_addr_invalid://";
  return n.str();
}

int NameFormat::import(const void* addrs, size_t i, uint8_t* out) const noexcept {
  Name n;
  bool ok;
  switch (app_) {
    case FI_SOCKADDR_IN:
      ok = Name::from_sockaddr(static_cast<const sockaddr_in*>(addrs) + i, sizeof(sockaddr_in),
                               kind_, n);
      break;
    case FI_ADDR_STR: {
      const char* s = static_cast<const char* const*>(addrs)[i];
      ok = s && Name::parse(s, kind_, n);
      break;
    }
    default:
      ok = Name::decode(static_cast<const uint8_t*>(addrs) + i * kNameBytes, kNameBytes, kind_, n);
  }
  if (!ok || n.ep_id == 0) return -FI_EINVAL;
  if (int r = complete(n)) return r;
  n.encode(out);
  return 0;
}

int NameFormat::export_to(const uint8_t* name, void* buf, size_t* buflen) const noexcept {
  Name n;
  if (!Name::decode(name, kNameBytes, kind_, n)) return -FI_EINVAL;
  if (app_ == FI_FORMAT_UNSPEC) {
    const bool fits = buf && *buflen >= kNameBytes;
    if (fits) n.encode(static_cast<uint8_t*>(buf));
    *buflen = kNameBytes;
    return fits ? 0 : -FI_ETOOSMALL;
  }
  if (app_ == FI_SOCKADDR_IN) {
    const bool fits = buf && *buflen >= sizeof(sockaddr_in);
    if (fits) {
      sockaddr_in in = n.to_sockaddr();
      std::memcpy(buf, &in, sizeof in);
    }
    *buflen = sizeof(sockaddr_in);
    return fits ? 0 : -FI_ETOOSMALL;
  }
  std::string s;
  try {
    s = n.str();
  } catch (...) {
    return -FI_ENOMEM;
  }
  const bool fits = buf && *buflen >= s.size() + 1;
  if (fits) std::memcpy(buf, s.c_str(), s.size() + 1);
  *buflen = s.size() + 1;
  return fits ? 0 : -FI_ETOOSMALL;
}

int NameFormat::from_service(const char* node, const char* service, uint8_t* out) const noexcept {
  Name n;
  if (node && !service && std::strncmp(node, "fi_", 3) == 0) {
    if (!Name::parse(node, kind_, n)) return -FI_EINVAL;
  } else {
    uint16_t port = 0;
    if (!node || !parse_service(service, port)) return -FI_EINVAL;
    n.kind = kind_;
    n.udp_port = port;
    n.ep_id = kServiceEpId;
    try {
      if (!resolve_node(node, n.ipv4)) return -FI_ENODATA;
    } catch (...) {
      return -FI_ENOMEM;
    }
  }
  if (int r = complete(n)) return r;
  n.encode(out);
  return 0;
}

}  // namespace pollfab::providers::packet
