// RcMr: a memory region registered with the device (ibv_reg_mr; fi_mr(3)) for RC endpoints,
// through the domain's registration cache (rc_mr_cache.hpp: the same memory registered twice
// shares one device registration and its keys).
// fi_mr_key is the rkey (FI_MR_PROV_KEY), fi_mr_desc the RcMr, whose lkey local work
// requests use (FI_MR_LOCAL); remote addresses are virtual addresses (FI_MR_VIRT_ADDR).
// Its use of the cached registration is released in teardown (fi_close).
// Thread-safety: immutable after construction.
#pragma once
#include <cstdint>

#include "lib/core/mr.hpp"
#include "providers/verbs/rc_mr_cache.hpp"

namespace pollfab::providers::verbs {

class RcMr final : public core::Mr {
 public:
  // Holds one use of entry (from cache, for iov); released at close.
  RcMr(core::Domain* dom, const iovec& iov, uint64_t access, RcMrCache& cache,
       RcMrCache::Entry* entry, void* context);
  uint32_t lkey() const noexcept { return lkey_; }
  // The lkey of an fi_mr_desc an application passed (nullptr: none).
  static uint32_t lkey_of(const void* desc) noexcept {
    return desc ? static_cast<const RcMr*>(static_cast<const core::Mr*>(desc))->lkey_ : 0;
  }

 protected:
  void teardown() noexcept override;

 private:
  RcMrCache& cache_;
  RcMrCache::Entry* entry_;
  uint32_t lkey_;
};

// fi_mr access bits -> ibv_access_flags: local write for FI_RECV, FI_READ (the device writes
// into the region) and remote writes, or when access is 0; remote access as asked (remote
// write brings remote atomics).
int ibv_access_of(uint64_t fi_access) noexcept;

}  // namespace pollfab::providers::verbs
