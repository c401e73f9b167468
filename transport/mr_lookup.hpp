// MrLookup: how the transport checks and translates a remote access at the target (fi_mr(3)):
// an interface transport/ defines and the OFI layer implements over its memory regions
// (lib/core's MrMap), so the transport never sees a libfabric struct.
// resolve() runs on the data path under the engine owner's serialisation (the domain lock)
// and takes no lock of its own; the implementation must keep the regions it returns valid
// while that serialisation is held (registration and close change the map under it).
#pragma once
#include <cstdint>

#include "lib/util/status.hpp"

namespace pollfab::transport {

constexpr uint32_t kAccessRemoteRead = 1u << 0;   // FI_REMOTE_READ
constexpr uint32_t kAccessRemoteWrite = 1u << 1;  // FI_REMOTE_WRITE

class MrLookup {
 public:
  virtual ~MrLookup() = default;
  // The local address of bytes [addr, addr + len) of the region with key, if every access bit
  // asked for is allowed. addr is a virtual address (FI_MR_VIRT_ADDR) or an offset into the
  // region, as the domain's MR mode says. Returns
  //   Ok          *out = the local address (len 0: the region's address of addr);
  //               *region = an opaque handle for accessed()
  //   Invalid     no region has this key              (the initiator sees FI_EINVAL)
  //   Permission  outside the region, or access denied  (the initiator sees FI_EACCES)
  virtual util::Status resolve(uint64_t key, uint64_t addr, uint64_t len, uint32_t access,
                               uint8_t** out, void** region) noexcept = 0;
  // A remote access to region completed (FI_RMA_EVENT: the region's bound counters).
  virtual void accessed(void* region, uint32_t access) noexcept = 0;
};

}  // namespace pollfab::transport
