#include "providers/registry.hpp"

#include "pollfab_build_config.h"
#include "providers/udp/provider.hpp"
#if POLLFAB_HAVE_DPDK
#include "providers/dpdk/provider.hpp"
#endif
#if POLLFAB_HAVE_VERBS
#include "providers/verbs/provider.hpp"
#endif

namespace pollfab::providers {

std::vector<core::Provider*> all() {
  std::vector<core::Provider*> v;
#if POLLFAB_HAVE_VERBS
  v.push_back(verbs::provider());  // RDMA hardware first
#endif
#if POLLFAB_HAVE_DPDK
  v.push_back(dpdk::provider());
#endif
  v.push_back(udp::provider());  // kernel sockets: after the bypass provider
  return v;
}

}  // namespace pollfab::providers
