#include "providers/packet/mr_lookup.hpp"

namespace pollfab::providers::packet {

using util::Status;

Status DomainMrLookup::resolve(uint64_t key, uint64_t addr, uint64_t len, uint32_t access,
                               uint8_t** out, void** region) noexcept {
  core::Mr* mr = mrs_.find_serialised(key);
  if (!mr) return Status::Invalid;  // fi_rma(3): an unknown key is FI_EINVAL at the initiator
  const uint64_t need = ((access & transport::kAccessRemoteRead) ? FI_REMOTE_READ : 0) |
                        ((access & transport::kAccessRemoteWrite) ? FI_REMOTE_WRITE : 0);
  if ((mr->access() & need) != need) return Status::Permission;
  uint8_t* p = mr->resolve(addr, len, virt_addr_);
  if (!p) return Status::Permission;
  *out = p;
  *region = mr;
  return Status::Ok;
}

void DomainMrLookup::accessed(void* region, uint32_t access) noexcept {
  static_cast<core::Mr*>(region)->remote_access(access & transport::kAccessRemoteRead,
                                                access & transport::kAccessRemoteWrite);
}

}  // namespace pollfab::providers::packet
