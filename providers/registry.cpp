#include "providers/registry.hpp"

#include "pollfab_build_config.h"
#if POLLFAB_HAVE_DPDK
#include "providers/dpdk/provider.hpp"
#endif

namespace pollfab::providers {

std::vector<core::Provider*> all() {
  std::vector<core::Provider*> v;
#if POLLFAB_HAVE_DPDK
  v.push_back(dpdk::provider());
#endif
  return v;
}

}  // namespace pollfab::providers
