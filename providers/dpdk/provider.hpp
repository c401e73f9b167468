// The dpdk provider: pollfab's transport on DPDK poll-mode queues. One OFI domain per
// configured port (dpdk.vdevs, or allow-listed PCI devices), FI_EP_RDM and FI_EP_DGRAM.
#pragma once
#include "lib/core/provider.hpp"

namespace pollfab::providers::dpdk {

core::Provider* provider();

}  // namespace pollfab::providers::dpdk
