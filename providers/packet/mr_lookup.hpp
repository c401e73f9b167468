// DomainMrLookup: the transport's MrLookup (transport/mr_lookup.hpp) over a domain's memory
// regions (core::MrMap, core::Mr): key -> region without a lock of its own (the engine calls it
// under the domain lock, which every change of the map also holds), access bits
// (FI_REMOTE_READ / FI_REMOTE_WRITE), range (virtual addresses under FI_MR_VIRT_ADDR, region
// offsets otherwise), and FI_RMA_EVENT counters bound to the region (fi_mr_bind).
#pragma once
#include "lib/core/mr.hpp"
#include "transport/mr_lookup.hpp"

namespace pollfab::providers::packet {

class DomainMrLookup final : public transport::MrLookup {
 public:
  DomainMrLookup(core::MrMap& mrs, bool virt_addr) noexcept : mrs_(mrs), virt_addr_(virt_addr) {}
  util::Status resolve(uint64_t key, uint64_t addr, uint64_t len, uint32_t access, uint8_t** out,
                       void** region) noexcept override;
  void accessed(void* region, uint32_t access) noexcept override;

 private:
  core::MrMap& mrs_;
  bool virt_addr_;
};

}  // namespace pollfab::providers::packet
