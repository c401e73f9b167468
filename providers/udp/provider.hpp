// The udp provider: pollfab's transport over kernel UDP sockets (FI_EP_RDM and FI_EP_DGRAM).
// Runs on any Linux machine without hugepages or privileges: the yardstick for what bypass buys.
#pragma once
#include "lib/core/provider.hpp"

namespace pollfab::providers::udp {
core::Provider* provider();
}
