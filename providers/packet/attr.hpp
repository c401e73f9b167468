// Capabilities and attributes of the transport-based providers (dpdk, udp): one fi_info
// candidate per (domain, endpoint type), built from the provider's limits.
#pragma once
#include <rdma/fabric.h>

#include "lib/core/info_template.hpp"
#include "providers/packet/name.hpp"

namespace pollfab::providers::packet {

// Caps the transport endpoints implement (RDM and DGRAM alike).
constexpr uint64_t kTransportCaps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV |
                                    FI_MULTI_RECV | FI_SOURCE | FI_SOURCE_ERR | FI_LOCAL_COMM |
                                    FI_REMOTE_COMM;
// RDM endpoints add RMA and atomics (fi_rma(3), fi_atomic(3)) with target-side counters.
constexpr uint64_t kTransportRdmCaps = FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ |
                                       FI_REMOTE_WRITE | FI_RMA_EVENT;
// Memory registration modes the providers can work with (none is required).
constexpr int kTransportMrModes = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;

// A candidate (malloc'd, free with core::freeinfo): core::make_info of t with the transport's
// caps, MR modes and iov limit; nullptr on allocation failure.
fi_info* make_info(core::InfoTemplate t);

// True if the hints carry no addresses, or only valid binary names of this kind (addr_format
// FI_FORMAT_UNSPEC). A provider offers nothing (-FI_ENODATA) otherwise.
bool hint_names_valid(const fi_info* hints, NameKind kind) noexcept;
// Copies the hints' src/dest names into the candidate (malloc). False on allocation failure.
bool copy_hint_names(const fi_info* hints, fi_info* out) noexcept;

}  // namespace pollfab::providers::packet
