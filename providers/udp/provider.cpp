#include "providers/udp/provider.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "lib/config/loader.hpp"
#include "lib/core/fabric.hpp"
#include "lib/core/info_alloc.hpp"
#include "lib/core/ops_fabric.hpp"
#include "lib/util/log.hpp"
#include "lib/core/config_params.hpp"
#include "providers/packet/attr.hpp"
#include "providers/packet/domain.hpp"
#include "providers/packet/pep.hpp"
#include "providers/udp/io.hpp"
#include "transport/wire.hpp"

namespace pollfab::providers::udp {
namespace {

constexpr const char* kName = "udp";
constexpr uint32_t kInjectBytes = 1024;

class UdpDomain final : public packet::TransportDomain {
 public:
  UdpDomain(core::Fabric* fabric, const fi_info* info, void* context, const config::Config& cfg,
            std::shared_ptr<packet::Link> link)
      : packet::TransportDomain(fabric, info, context, packet::NameKind::Udp, cfg,
                                std::move(link)) {}
};

class UdpFabric final : public core::Fabric {
 public:
  UdpFabric(core::Provider* prov, const fi_fabric_attr* attr, void* context, const config::Config& cfg)
      : core::Fabric(prov, attr, context), cfg_(cfg) {
    core::install_fabric_ops<UdpFabric>(box_.fid);
  }
  int open_domain(fi_info* info, fid_domain** dom, uint64_t flags, void* context) override {
    int err = 0;
    std::shared_ptr<packet::Link> link = open_link(info, err);
    if (!link) return err;
    auto* d = new UdpDomain(this, info, context, cfg_, std::move(link));
    *dom = d->fid();
    return 0;
  }

  // fi_passive_ep (FI_EP_MSG): listens on the socket of the info's source.
  int open_passive_ep(fi_info* info, fid_pep** pep, void* context) {
    return packet::open_pep(this, info, pep, context, packet::NameKind::Udp, cfg_,
                            [this](const fi_info* i, int& e) { return open_link(i, e); });
  }

  // The socket (Link) of the info's source: the address and port its src_addr names (fi_getinfo
  // with a service, FI_SOURCE), else the configured ones. One already open on that address and
  // port (a passive endpoint listening there, another domain) is shared; port 0 (ephemeral)
  // always opens a new one. err: -FI_EINVAL (bad config or format), -FI_EADDRNOTAVAIL.
  std::shared_ptr<packet::Link> open_link(const fi_info* info, int& err) {
    in_addr a{};
    if (inet_pton(AF_INET, cfg_.udp.iface_ip.c_str(), &a) != 1 ||
        !packet::NameFormat::supported(info->addr_format)) {
      err = -FI_EINVAL;
      return nullptr;
    }
    uint16_t port = cfg_.udp.port;
    packet::Name src;
    if (packet::info_src_name(info, packet::NameKind::Udp, src)) {
      if (src.ipv4 && src.ipv4 != ntohl(a.s_addr)) {
        err = -FI_EADDRNOTAVAIL;
        return nullptr;
      }
      if (src.udp_port) port = src.udp_port;
    }
    const std::string key = "udp:" + cfg_.udp.iface_ip + ":" + std::to_string(port);
    if (port)
      if (std::shared_ptr<packet::Link> link = packet::Link::find(key)) return link;
    std::string why;
    auto io = UdpIo::open(ntohl(a.s_addr), port, cfg_.udp.socket_buffer_bytes, why);
    if (!io) {
      PF_LOG(kName, Warn, Domain, "fi_domain: {}", why);
      err = -FI_EADDRNOTAVAIL;
      return nullptr;
    }
    packet::Name local;
    local.kind = packet::NameKind::Udp;
    local.ipv4 = io->ip();
    local.udp_port = io->port();
    const std::string bound = "udp:" + cfg_.udp.iface_ip + ":" + std::to_string(io->port());
    return packet::Link::create(bound, std::move(io), cfg_, local, kName,
                                info->domain_attr && info->domain_attr->name
                                    ? info->domain_attr->name : "udp");
  }

 private:
  config::Config cfg_;
};

class UdpProvider final : public core::Provider {
 public:
  const char* name() const noexcept override { return kName; }

  int candidates(uint32_t, const char* node, const char* service, uint64_t flags, const fi_info* hints,
                 std::vector<fi_info*>& out) override {
    std::optional<config::Config> cfg_opt = packet::load_config(kName, util::LogSubsys::Core);
    if (!cfg_opt) return -FI_EINVAL;
    in_addr a{};
    if (inet_pton(AF_INET, cfg_opt->udp.iface_ip.c_str(), &a) != 1) return -FI_ENODATA;
    packet::Name local;
    local.kind = packet::NameKind::Udp;
    local.ipv4 = ntohl(a.s_addr);
    local.udp_port = cfg_opt->udp.port;
    packet::InfoNames names;
    if (int r = packet::info_names(kName, local, node, service, flags, hints, names)) return r;
    const size_t dgram_max = UdpIo::kMaxPacketBytes - transport::wire::kHeaderBytes;
    const size_t first = out.size();
    for (fi_ep_type type : {FI_EP_RDM, FI_EP_DGRAM, FI_EP_MSG}) {
      core::InfoTemplate t;
      t.prov_name = kName;
      t.fabric_name = "udp";
      t.domain_name = "udp-" + cfg_opt->udp.iface_ip;
      t.type = type;
      t.max_msg_size = type == FI_EP_DGRAM ? dgram_max : 0xffffffffull;
      t.inject_size = kInjectBytes;
      t.total_buffered_recv = type == FI_EP_DGRAM ? 0 : cfg_opt->transport.max_unexpected_bytes;
      t.prov_version = version();
      if (int r = packet::add_candidate(t, names, out)) return r;
    }
    return packet::add_auto_progress_candidates(out, first);
  }

  int fabric(fi_fabric_attr* attr, fid_fabric** fabric, void* context) override {
    std::optional<config::Config> cfg_opt = packet::load_config(kName, util::LogSubsys::Fabric);
    if (!cfg_opt) return -FI_EINVAL;
    *fabric = (new UdpFabric(this, attr, context, *cfg_opt))->fid();
    return 0;
  }

  void define_params() override { core::define_config_params(kName); }
};

}  // namespace

core::Provider* provider() {
  static UdpProvider p;
  packet::install_name_printer();  // fi_tostr prints our FI_FORMAT_UNSPEC names
  return &p;
}

}  // namespace pollfab::providers::udp
