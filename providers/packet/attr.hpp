// Capabilities and attributes of the transport-based providers (dpdk, udp): one fi_info
// candidate per (domain, endpoint type), built from the provider's limits.
#pragma once
#include <rdma/fabric.h>

#include <optional>
#include <vector>

#include "lib/config/config.hpp"
#include "lib/util/log.hpp"

#include "lib/core/info_template.hpp"
#include "providers/packet/name.hpp"

namespace pollfab::providers::packet {

// Caps the transport endpoints implement (RDM and DGRAM alike).
constexpr uint64_t kTransportCaps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV |
                                    FI_MULTI_RECV | FI_SOURCE | FI_SOURCE_ERR | FI_LOCAL_COMM |
                                    FI_REMOTE_COMM;
// RDM and MSG endpoints add RMA and atomics (fi_rma(3), fi_atomic(3)) with target-side counters.
constexpr uint64_t kTransportRdmCaps = FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ |
                                       FI_REMOTE_WRITE | FI_RMA_EVENT;
// Endpoints one shared receive context serves (domain_attr->max_ep_srx_ctx of FI_EP_MSG).
constexpr size_t kMaxSrxEndpoints = 65535;
// Memory registration modes the providers can work with (none is required).
constexpr int kTransportMrModes = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;

// A candidate (malloc'd, free with core::freeinfo): core::make_info of t with the transport's
// caps, MR modes and iov limit; nullptr on allocation failure.
fi_info* make_info(core::InfoTemplate t);

// Appends to out, after the candidates out[first..] (FI_PROGRESS_MANUAL, the default an
// application without a progress hint gets first), a copy of each with data_progress
// FI_PROGRESS_AUTO (a progress thread per port, docs/progress.md). Returns 0 or -FI_ENOMEM.
int add_auto_progress_candidates(std::vector<fi_info*>& out, size_t first);

// fi_getinfo(3) addressing for one provider: the names every candidate of one fi_getinfo call
// carries, in the application's form `app` (the hinted addr_format, else FI_FORMAT_UNSPEC).
struct InfoNames {
  Name src, dest;
  bool has_dest = false;
  uint32_t app = FI_FORMAT_UNSPEC;
};
// `local` is the address the provider's config gives its domain (kind, IPv4 and UDP port; MAC
// when configured; endpoint id 0 = any). From node, service, flags and the hints' addresses (in
// hints->addr_format) it computes the candidates' src_addr (always) and dest_addr (when a
// destination is named):
//   node with FI_SOURCE    node:service is the source; node must be the local address;
//   node without FI_SOURCE node:service is the destination (service: the local UDP port when
//                          absent); node may also be an FI_ADDR_STR text (service null);
//   service alone          the source's UDP port;
//   hints->src_addr/dest_addr  taken as given (src must be the local address).
// A destination names endpoint kServiceEpId unless its text says otherwise; its MAC is resolved
// later (fi_av_insert, fi_connect). Returns 0, or -FI_ENODATA (a node that does not resolve or is
// not local, an unusable service or hint address, an address format this provider lacks),
// logged at FI_LOG_LEVEL=info under `prov`.
int info_names(const char* prov, const Name& local, const char* node, const char* service,
               uint64_t flags, const fi_info* hints, InfoNames& out);
// Stores addr_format (app), src_addr and dest_addr (when dest is not null) in the candidate,
// malloc'd in that form. False on allocation failure.
bool set_info_names(fi_info* info, uint32_t app, const Name& src, const Name* dest) noexcept;
inline bool set_info_names(fi_info* info, const InfoNames& n) noexcept {
  return set_info_names(info, n.app, n.src, n.has_dest ? &n.dest : nullptr);
}
// Appends make_info(t) carrying the names to out. Returns 0 or -FI_ENOMEM (nothing appended).
int add_candidate(const core::InfoTemplate& t, const InfoNames& names, std::vector<fi_info*>& out);
// The provider's configuration (config::load), or nullopt after logging why it was refused
// (a warning under `prov` in subsystem `sub`; the caller returns -FI_EINVAL).
std::optional<config::Config> load_config(const char* prov, util::LogSubsys sub);
// The name in info->src_addr (in info->addr_format); false if there is none or it is malformed.
bool info_src_name(const fi_info* info, NameKind kind, Name& out) noexcept;

}  // namespace pollfab::providers::packet
