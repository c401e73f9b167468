#include "providers/packet/attr.hpp"

#include <cstring>

#include "transport/ops.hpp"

namespace pollfab::providers::packet {

fi_info* make_info(core::InfoTemplate t) {
  t.caps = kTransportCaps | (t.type == FI_EP_RDM ? kTransportRdmCaps : 0);
  t.domain_caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
  t.mr_mode = kTransportMrModes;
  t.iov_limit = transport::kMaxIov;
  return core::make_info(t);
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
