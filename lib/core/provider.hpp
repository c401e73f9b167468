// Provider: what each provider (dpdk, udp, verbs) gives the core, like libfabric's fi_provider.
// The registry is filled once by the ABI shim (abi/providers.cpp) before first use.
#pragma once
#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#include <cstdint>
#include <vector>

namespace pollfab::core {

// FI_VERSION(maj*100+min, rev*10): how libfabric 1.17's own providers report their version
// (fi_info -l prints "117.0").
constexpr uint32_t kProviderVersion = FI_VERSION(117, 0);
constexpr uint32_t kApiVersion = FI_VERSION(1, 17);

class Provider {
 public:
  virtual ~Provider() = default;
  virtual const char* name() const noexcept = 0;
  virtual uint32_t version() const noexcept { return kProviderVersion; }

  // Candidate fi_info entries (malloc'd via core::allocinfo, owned by the caller) for the
  // given request, before generic hint matching (getinfo.cpp). The provider resolves node,
  // service and FI_SOURCE into src_addr/dest_addr and may skip hints it cannot satisfy.
  // Returns 0, -FI_ENODATA (nothing to offer) or another -FI_E* (e.g. a bad config file).
  virtual int candidates(uint32_t api_version, const char* node, const char* service,
                         uint64_t flags, const fi_info* hints, std::vector<fi_info*>& out) = 0;
  // fi_fabric(3) for an attr this provider returned (name and prov_name already checked).
  virtual int fabric(fi_fabric_attr* attr, fid_fabric** fabric, void* context) = 0;
  // Registers the provider's FI_<PROV>_* variables (fi_param_define) so fi_getparams lists them.
  virtual void define_params() {}

  // libfabric's fi_provider struct for this provider (used by fi_log and friends).
  fi_provider* fi_prov() noexcept;

 private:
  fi_provider prov_{};
};

void register_provider(Provider* p);
const std::vector<Provider*>& providers() noexcept;
Provider* find_provider(const char* name) noexcept;

}  // namespace pollfab::core
