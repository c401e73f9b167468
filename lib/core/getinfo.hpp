// fi_getinfo(3) for the registered providers: version check, FI_PROV_ATTR_ONLY, the
// FI_PROVIDER filter (comma list, leading '^' excludes), provider candidates, and hint
// matching with libfabric 1.17's util rules (prov/util/src/util_attr.c):
//   - primary caps are returned only if hinted, secondary caps are added unasked but for the
//     opt-in (kOptInCaps) and, when the hints name caps, the costly ones (kCostlyCaps);
//   - a provider needing a mode bit the hints lack is skipped;
//   - ep_type, protocol, addr_format, fabric/domain/provider names must match when hinted;
//   - hinted threading, progress (when supported), av_type and resource_mgmt override the
//     provider's defaults in the result;
//   - mr_mode (api >= 1.5): the provider's required bits must be hinted, the result is
//     hints & supported; api < 1.5 uses FI_MR_BASIC/SCALABLE;
//   - numeric limits (sizes, iov limits, cq_data_size, key sizes, context counts) hinted above
//     the provider's are a mismatch; msg/comp order and op_flags must be supported.
// Results are ordered best first: providers in registry order (dpdk, udp, ...), each
// provider's candidates in its own order (RDM before DGRAM). fabric_attr->api_version is the
// requested version. Returns 0, -FI_ENODATA (nothing matched), -FI_ENOSYS (version newer than
// 1.17), -FI_EINVAL (bad arguments) or a provider's error (e.g. a bad config file).
#pragma once
#include <rdma/fabric.h>

#include <string>

namespace pollfab::core {

constexpr uint64_t kPrimaryTxCaps = FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST |
                                    FI_NAMED_RX_CTX | FI_HMEM | FI_COLLECTIVE | FI_READ |
                                    FI_WRITE | FI_SEND;
constexpr uint64_t kPrimaryRxCaps = FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_REMOTE_READ |
                                    FI_REMOTE_WRITE | FI_RECV | FI_DIRECTED_RECV |
                                    FI_VARIABLE_MSG | FI_HMEM | FI_COLLECTIVE;
constexpr uint64_t kSecondaryTxCaps = FI_TRIGGER | FI_FENCE | FI_RMA_PMEM;
constexpr uint64_t kSecondaryRxCaps = FI_MULTI_RECV | FI_SOURCE | FI_RMA_EVENT | FI_SOURCE_ERR |
                                      FI_RMA_PMEM;
constexpr uint64_t kDomainCaps = FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV;
constexpr uint64_t kPrimaryCaps = kPrimaryTxCaps | kPrimaryRxCaps;
// Secondary caps reported only when the hints ask for them: they change what the application
// sees (FI_SOURCE_ERR turns a completion from a sender the AV does not know into an error
// entry), so an application that did not ask must not get them. fi_getinfo(3) lets a provider
// leave unrequested secondary caps out.
constexpr uint64_t kOptInCaps = FI_SOURCE_ERR;
// Secondary caps that cost on the data path, left out when the hints name caps without them
// (hints with no caps get them, as every other secondary cap). fi_getinfo(3): "A provider may
// optionally report non-selected secondary capabilities if doing so would not compromise
// performance or security." FI_SOURCE is a reverse lookup of the sender for every receive
// completion (docs/performance.md item 57).
constexpr uint64_t kCostlyCaps = FI_SOURCE;
constexpr uint64_t kSecondaryCaps = kSecondaryTxCaps | kSecondaryRxCaps | kDomainCaps;

int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
            const fi_info* hints, fi_info** info) noexcept;

// Matches one provider candidate against hints; on success rewrites `cand` into the result
// the application sees and returns true. `why` (optional) gets the first mismatch (for
// FI_LOG_LEVEL=info and tests).
bool match_info(fi_info* cand, const fi_info* hints, uint32_t version, std::string* why);

// FI_PROVIDER filter: true if a provider named `name` passes `filter` (nullptr = all).
bool provider_allowed(const char* filter, const char* name) noexcept;

}  // namespace pollfab::core
