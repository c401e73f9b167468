#include "providers/packet/attr.hpp"

#include <cstring>

#include "lib/core/info_template.hpp"
#include "transport/ops.hpp"

namespace pollfab::providers::packet {

fi_info* make_info(const InfoTemplate& t) {
  core::InfoTemplate c;
  c.prov_name = t.prov_name;
  c.fabric_name = t.fabric_name;
  c.domain_name = t.domain_name;
  c.type = t.type;
  c.caps = kTransportCaps;
  c.mr_mode = kTransportMrModes;
  c.max_msg_size = t.max_msg_size;
  c.inject_size = t.inject_size;
  c.tx_size = t.tx_size;
  c.rx_size = t.rx_size;
  c.iov_limit = transport::kMaxIov;
  c.total_buffered_recv = t.total_buffered_recv;
  c.prov_version = t.prov_version;
  return core::make_info(c);
}

bool hint_names_valid(const fi_info* hints, NameKind kind) noexcept {
  if (!hints) return true;
  Name n;
  for (auto [addr, len] : {std::pair{hints->dest_addr, hints->dest_addrlen},
                           std::pair{hints->src_addr, hints->src_addrlen}}) {
    if (!addr) continue;
    if (hints->addr_format != FI_FORMAT_UNSPEC ||
        !Name::decode(static_cast<const uint8_t*>(addr), len, kind, n))
      return false;
  }
  return true;
}

bool copy_hint_names(const fi_info* hints, fi_info* out) noexcept {
  if (!hints) return true;
  auto copy = [](const void* src, void** dst, size_t* len) {
    if (!src) return true;
    *dst = malloc(kNameBytes);
    if (!*dst) return false;
    std::memcpy(*dst, src, kNameBytes);
    *len = kNameBytes;
    return true;
  };
  return copy(hints->dest_addr, &out->dest_addr, &out->dest_addrlen) &&
         copy(hints->src_addr, &out->src_addr, &out->src_addrlen);
}

}  // namespace pollfab::providers::packet
