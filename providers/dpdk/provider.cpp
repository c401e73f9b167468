// The dpdk provider's registration: candidates for fi_getinfo, fi_fabric, FI_DPDK_* params.
#include "providers/dpdk/provider.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "dpdk_glue/eal.hpp"
#include "lib/config/loader.hpp"
#include "lib/core/errors.hpp"
#include "lib/core/info_alloc.hpp"
#include "lib/util/log.hpp"
#include "lib/core/config_params.hpp"
#include "providers/packet/attr.hpp"
#include "providers/packet/name.hpp"
#include "providers/dpdk/domain.hpp"
#include "providers/dpdk/io.hpp"
#include "transport/wire.hpp"

namespace pollfab::providers::dpdk {
namespace {

constexpr const char* kName = "dpdk";
constexpr uint32_t kInjectBytes = 1024;

class DpdkProvider final : public core::Provider {
 public:
  const char* name() const noexcept override { return kName; }

  int candidates(uint32_t version, const char* node, const char* service, uint64_t flags,
                 const fi_info* hints, std::vector<fi_info*>& out) override {
    std::optional<config::Config> cfg_opt = packet::load_config(kName, util::LogSubsys::Core);
    if (!cfg_opt) return -FI_EINVAL;
    const config::Config& cfg = *cfg_opt;
    // Addresses (docs/addressing.md): the port's IPv4 address and UDP port come from the
    // config, so fi_getinfo needs no port up; a destination's MAC is resolved later.
    packet::Name local;
    local.kind = packet::NameKind::Dpdk;
    local.udp_port = cfg.dpdk.udp_port;
    config_address(cfg, local);
    packet::InfoNames names;
    if (int r = packet::info_names(kName, local, node, service, flags, hints, names)) return r;
    const uint32_t max_pkt = cfg.dpdk.mtu - 28;
    const size_t dgram_max = max_pkt - transport::wire::kHeaderBytes;
    std::vector<std::string> devs;
    for (const auto& v : cfg.dpdk.vdevs) devs.push_back(device_name(v));
    for (const auto& p : cfg.eal.pci_allow) devs.push_back(device_name(p));
    const size_t first = out.size();
    for (const std::string& dev : devs) {
      for (fi_ep_type type : {FI_EP_RDM, FI_EP_DGRAM, FI_EP_MSG}) {
        core::InfoTemplate t;
        t.prov_name = kName;
        t.fabric_name = "dpdk";
        t.domain_name = dev;
        t.type = type;
        t.max_msg_size = type != FI_EP_DGRAM ? 0xffffffffull : dgram_max;
        t.inject_size = type != FI_EP_DGRAM ? kInjectBytes : std::min<size_t>(kInjectBytes, dgram_max);
        t.total_buffered_recv = type != FI_EP_DGRAM ? cfg.transport.max_unexpected_bytes : 0;
        t.prov_version = Provider::version();
        if (int r = packet::add_candidate(t, names, out)) return r;
      }
    }
    if (out.empty()) return -FI_ENODATA;
    return packet::add_auto_progress_candidates(out, first);
  }

  int fabric(fi_fabric_attr* attr, fid_fabric** fabric, void* context) override {
    std::optional<config::Config> cfg_opt = packet::load_config(kName, util::LogSubsys::Fabric);
    if (!cfg_opt) return -FI_EINVAL;
    dpdk_glue::EalResult r = dpdk_glue::eal_acquire(*cfg_opt);
    if (r.status != util::Status::Ok) {
      PF_LOG(kName, Warn, Fabric, "fi_fabric: {}", r.message);
      return -core::fi_errno_of(r.status);
    }
    auto* f = new DpdkFabric(this, attr, context, *cfg_opt);
    *fabric = f->fid();
    return 0;
  }

  void define_params() override { core::define_config_params(kName); }
};

}  // namespace

core::Provider* provider() {
  static DpdkProvider p;
  packet::install_name_printer();  // fi_tostr prints our FI_FORMAT_UNSPEC names
  return &p;
}

}  // namespace pollfab::providers::dpdk
