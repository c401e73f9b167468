#include "providers/verbs/provider.hpp"

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "lib/config/loader.hpp"
#include "lib/core/config_params.hpp"
#include "lib/core/fabric.hpp"
#include "lib/core/info_alloc.hpp"
#include "lib/core/ops_fabric.hpp"
#include "lib/util/log.hpp"
#include "providers/packet/attr.hpp"
#include "providers/packet/domain.hpp"
#include "providers/packet/pep.hpp"
#include "providers/verbs/device.hpp"
#include "providers/verbs/cm_thread.hpp"
#include "providers/verbs/rc_domain.hpp"
#include "providers/verbs/rc_endpoint.hpp"
#include "providers/verbs/rc_pep.hpp"
#include "providers/verbs/sidr.hpp"
#include "providers/verbs/ud_io.hpp"
#include "transport/wire.hpp"

namespace pollfab::providers::verbs {
namespace {

constexpr const char* kName = "verbs";
constexpr uint32_t kInjectBytes = 1024;

constexpr int kResolveTimeoutMs = 2000;

// FI_EP_MSG over RC queue pairs (rc_domain.hpp) rather than the transport over the UD QP.
bool is_rc(const fi_info* info) {
  return info && info->ep_attr && info->ep_attr->protocol == FI_PROTO_RDMA_CM_IB_RC;
}

// What an RC domain requires of the application's memory registration (fi_domain(3) "MR Mode").
constexpr int kRcMrModes = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;

// True if hints let the RC candidate through (it is offered with manual progress, and with
// automatic progress among the copies add_auto_progress_candidates makes): core getinfo
// cannot mark mr_mode bits required,
// so an application that does not register its buffers (no FI_MR_LOCAL, ...) is not offered it
// (the UD candidate behind it serves such applications).
bool rc_allowed(uint32_t version, const fi_info* hints) {
  if (!hints) return true;
  if (hints->addr_format != FI_FORMAT_UNSPEC && hints->addr_format != FI_SOCKADDR_IN) return false;
  if (hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC && hints->ep_attr->type != FI_EP_MSG)
    return false;
  if (hints->ep_attr && hints->ep_attr->protocol != FI_PROTO_UNSPEC &&
      hints->ep_attr->protocol != FI_PROTO_RDMA_CM_IB_RC)
    return false;
  if (!hints->domain_attr) return true;
  if (!FI_VERSION_GE(version, FI_VERSION(1, 5))) return false;
  return (hints->domain_attr->mr_mode & kRcMrModes) == kRcMrModes;
}

// A name given by node and service (no QP number yet) is completed by service ID resolution
// (sidr.hpp) before the AV stores it.
class VerbsDomain final : public packet::TransportDomain {
 public:
  VerbsDomain(core::Fabric* fabric, const fi_info* info, void* context, const config::Config& cfg,
              std::shared_ptr<packet::Link> link)
      : packet::TransportDomain(fabric, info, context, packet::NameKind::Verbs, cfg,
                                std::move(link)) {}
  int complete(packet::Name& n) noexcept override {
    if (n.qpn()) return 0;
    if (!n.udp_port) return -FI_EINVAL;
    uint32_t qpn = 0;
    std::string why;
    if (int r = sidr_resolve(local_name(0).ipv4, n.ipv4, n.udp_port, kResolveTimeoutMs, qpn, why)) {
      PF_LOG(kName, Warn, Av, "resolving {}: {}", n.str(), why);
      return r;
    }
    n.set_qpn(qpn);
    return 0;
  }
};

// The port behind a domain name ("rxe0"), or nullptr (err set).
const PortInfo* find_port(const std::vector<PortInfo>& ports, const char* name, int& err) {
  for (const PortInfo& p : ports)
    if ((!name || p.device == name) && p.gid_index >= 0) return &p;
  err = -FI_ENODEV;
  return nullptr;
}

class VerbsFabric final : public core::Fabric {
 public:
  VerbsFabric(core::Provider* prov, const fi_fabric_attr* attr, void* context,
              const config::Config& cfg)
      : core::Fabric(prov, attr, context), cfg_(cfg) {
    core::install_fabric_ops<VerbsFabric>(box_.fid);
  }
  int open_domain(fi_info* info, fid_domain** dom, uint64_t flags, void* context) override {
    (void)flags;
    int err = 0;
    if (is_rc(info)) {
      std::vector<std::string> skipped;
      const std::vector<PortInfo> ports = list_ports(cfg_.verbs, skipped);
      const PortInfo* port = find_port(ports, info->domain_attr ? info->domain_attr->name : nullptr, err);
      if (!port) return err;
      std::shared_ptr<CmThread> cm = cm_thread(err);
      if (!cm) return err;
      return RcDomain::open(this, info, context, std::move(cm), *port, cfg_, dom);
    }
    std::shared_ptr<packet::Link> link = open_link(info, err);
    if (!link) return err;
    *dom = (new VerbsDomain(this, info, context, cfg_, std::move(link)))->fid();
    return 0;
  }

  // fi_passive_ep (FI_EP_MSG): listens on the UD QP of the info's source service (the
  // connection handshake of docs/transport.md, "Connected endpoints", runs over it).
  int open_passive_ep(fi_info* info, fid_pep** pep, void* context) {
    if (is_rc(info)) {
      int err = 0;
      std::shared_ptr<CmThread> cm = cm_thread(err);
      return cm ? RcPep::open(this, info, context, std::move(cm), pep) : err;
    }
    return packet::open_pep(this, info, pep, context, packet::NameKind::Verbs, cfg_,
                            [this](const fi_info* i, int& e) { return open_link(i, e); });
  }

  // The UD QP (Link) of the info's domain (device) and source service. A service already open on
  // that port is shared; service 0 always opens a new QP. err: -FI_EINVAL (format), -FI_ENODEV
  // (no such usable port), -FI_EADDRNOTAVAIL (the source is not this port's address), or the
  // device's failure as -FI_EIO.
  std::shared_ptr<packet::Link> open_link(const fi_info* info, int& err) {
    if (!packet::NameFormat::supported(info->addr_format)) {
      err = -FI_EINVAL;
      return nullptr;
    }
    std::vector<std::string> skipped;
    const std::vector<PortInfo> ports = list_ports(cfg_.verbs, skipped);
    const char* dname = info->domain_attr ? info->domain_attr->name : nullptr;
    const PortInfo* port = find_port(ports, dname, err);
    if (!port) {
      for (const std::string& s : skipped) PF_LOG(kName, Warn, Domain, "fi_domain: {}", s);
      return nullptr;
    }
    packet::Name local;
    local.kind = packet::NameKind::Verbs;
    local.ipv4 = port->ipv4;
    packet::Name src;
    if (packet::info_src_name(info, packet::NameKind::Verbs, src)) {
      if (src.ipv4 && src.ipv4 != port->ipv4) {
        err = -FI_EADDRNOTAVAIL;
        return nullptr;
      }
      local.udp_port = src.udp_port;
    }
    const std::string prefix = "verbs:" + port->device + ":" + std::to_string(port->port) + ":";
    const std::string key = prefix + std::to_string(local.udp_port);
    if (local.udp_port)
      if (std::shared_ptr<packet::Link> link = packet::Link::find(key)) return link;
    std::string why;
    std::unique_ptr<UdIo> io = UdIo::open(*port, cfg_.verbs, why);
    if (!io) {
      PF_LOG(kName, Warn, Domain, "fi_domain {}: {}", port->device, why);
      err = -FI_EIO;
      return nullptr;
    }
    local.set_qpn(io->qpn());
    // Name the QP by ipv4:service for peers that know only those (fi_getinfo(node, service)).
    std::unique_ptr<SidrListener> sidr = SidrListener::start(local.ipv4, local.udp_port, io->qpn(), why);
    if (sidr) {
      local.udp_port = sidr->service();
      io->keep_listener(std::move(sidr));
    } else if (local.udp_port) {
      PF_LOG(kName, Warn, Domain, "fi_domain {}: service {}: {}", port->device, local.udp_port, why);
      err = -FI_EADDRINUSE;
      return nullptr;
    } else {
      PF_LOG(kName, Info, Domain, "fi_domain {}: no service ID resolution ({}); peers need this "
             "endpoint's binary name", port->device, why);
    }
    // Registered under its service, so that another domain asking for it shares this QP.
    std::string bound = prefix + std::to_string(local.udp_port);
    if (!local.udp_port) bound += ":q" + std::to_string(io->qpn());
    return packet::Link::create(bound, std::move(io), cfg_, local, kName, port->device);
  }

 private:
  // The fabric's rdma_cm event thread, started by its first RC object.
  std::shared_ptr<CmThread> cm_thread(int& err) {
    std::lock_guard<std::mutex> g(cm_mu_);
    if (!cm_) {
      std::string why;
      cm_ = CmThread::start(why);
      if (!cm_) {
        PF_LOG(kName, Warn, Fabric, "rdma_cm: {}", why);
        err = -FI_EIO;
      }
    }
    return cm_;
  }

  config::Config cfg_;
  std::mutex cm_mu_;
  std::shared_ptr<CmThread> cm_;
};

// The RC FI_EP_MSG candidate of a port (names in FI_SOCKADDR_IN), or 0 without one; -FI_ENOMEM.
int add_rc_candidate(const PortInfo& port, const config::Config& cfg, uint32_t version,
                     const char* node, const char* service, uint64_t flags, const fi_info* hints,
                     uint32_t prov_version, std::vector<fi_info*>& out) {
  if (!rc_allowed(version, hints)) return 0;
  fi_info h{};
  if (hints) h = *hints;
  h.addr_format = FI_SOCKADDR_IN;
  packet::Name local;
  local.kind = packet::NameKind::Verbs;
  local.ipv4 = port.ipv4;
  packet::InfoNames names;
  if (packet::info_names(kName, local, node, service, flags, &h, names)) return 0;
  core::InfoTemplate t;
  t.prov_name = kName;
  t.fabric_name = "verbs";
  t.domain_name = port.device;
  t.type = FI_EP_MSG;
  t.caps = FI_MSG | FI_SEND | FI_RECV | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ |
           FI_REMOTE_WRITE | (port.atomics ? FI_ATOMIC : 0);
  t.domain_caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
  t.mr_mode = kRcMrModes;
  t.max_msg_size = kRcMaxMsg;
  t.inject_size = cfg.verbs.inline_bytes;
  t.tx_size = cfg.verbs.tx_depth;
  t.rx_size = cfg.verbs.rx_depth;
  t.iov_limit = RcEndpoint::kIovLimit;
  t.msg_order = FI_ORDER_SAS;
  t.prov_version = prov_version;
  fi_info* i = core::make_info(t);
  if (!i) return -FI_ENOMEM;
  i->ep_attr->protocol = FI_PROTO_RDMA_CM_IB_RC;
  i->domain_attr->cq_data_size = 4;  // immediate data
  i->domain_attr->mr_iov_limit = 1;
  i->domain_attr->max_ep_srx_ctx = packet::kMaxSrxEndpoints;  // a device SRQ (rc_srx.hpp)
  i->rx_attr->mode |= FI_RX_CQ_DATA;  // fi_writedata consumes a receive (RDMA WRITE with immediate)
  i->nic = core::make_nic(nic_desc(port));
  if (!i->nic || !packet::set_info_names(i, FI_SOCKADDR_IN, names.src, names.has_dest ? &names.dest : nullptr)) {
    core::freeinfo(i);
    return -FI_ENOMEM;
  }
  try {
    out.push_back(i);
  } catch (...) {
    core::freeinfo(i);
    return -FI_ENOMEM;
  }
  return 0;
}

class VerbsProvider final : public core::Provider {
 public:
  const char* name() const noexcept override { return kName; }

  int candidates(uint32_t api_version, const char* node, const char* service, uint64_t flags,
                 const fi_info* hints, std::vector<fi_info*>& out) override {
    std::optional<config::Config> cfg_opt = packet::load_config(kName, util::LogSubsys::Core);
    if (!cfg_opt) return -FI_EINVAL;
    const config::Config& cfg = *cfg_opt;
    std::vector<std::string> skipped;
    const std::vector<PortInfo> ports = list_ports(cfg.verbs, skipped);
    for (const std::string& s : skipped) PF_LOG(kName, Info, Core, "{}", s);
    const size_t first = out.size();
    for (const PortInfo& port : ports) {
      if (port.gid_index < 0) continue;
      // RC first: an application that registers its memory gets RC queue pairs for FI_EP_MSG.
      if (int r = add_rc_candidate(port, cfg, api_version, node, service, flags, hints, version(), out))
        return r;
      packet::Name local;
      local.kind = packet::NameKind::Verbs;
      local.ipv4 = port.ipv4;
      packet::InfoNames names;
      // A node that is not this port's address (FI_SOURCE) leaves this port out.
      if (packet::info_names(kName, local, node, service, flags, hints, names)) continue;
      const size_t max_pkt = port.mtu_bytes;
      const size_t dgram_max = max_pkt - transport::wire::kHeaderBytes;
      for (fi_ep_type type : {FI_EP_RDM, FI_EP_DGRAM, FI_EP_MSG}) {
        core::InfoTemplate t;
        t.prov_name = kName;
        t.fabric_name = "verbs";
        t.domain_name = port.device;
        t.type = type;
        t.max_msg_size = type == FI_EP_DGRAM ? dgram_max : 0xffffffffull;
        t.inject_size = type == FI_EP_DGRAM ? std::min<size_t>(kInjectBytes, dgram_max) : kInjectBytes;
        t.total_buffered_recv = type == FI_EP_DGRAM ? 0 : cfg.transport.max_unexpected_bytes;
        t.prov_version = version();
        if (int r = packet::add_candidate(t, names, out)) return r;
        out.back()->nic = core::make_nic(nic_desc(port));
        if (!out.back()->nic) return -FI_ENOMEM;
      }
    }
    if (out.size() == first) return -FI_ENODATA;
    return packet::add_auto_progress_candidates(out, first);
  }

  int fabric(fi_fabric_attr* attr, fid_fabric** fabric, void* context) override {
    std::optional<config::Config> cfg_opt = packet::load_config(kName, util::LogSubsys::Fabric);
    if (!cfg_opt) return -FI_EINVAL;
    *fabric = (new VerbsFabric(this, attr, context, *cfg_opt))->fid();
    return 0;
  }

  void define_params() override { core::define_config_params(kName); }
};

}  // namespace

core::Provider* provider() {
  static VerbsProvider p;
  packet::install_name_printer();
  return &p;
}

}  // namespace pollfab::providers::verbs
