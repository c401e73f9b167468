#include "providers/dpdk/domain.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "dpdk_glue/eal.hpp"
#include "lib/core/errors.hpp"
#include "lib/core/ops_fabric.hpp"
#include "lib/util/log.hpp"

namespace pollfab::providers::dpdk {

std::string device_name(const std::string& dev) { return dev.substr(0, dev.find(',')); }

DpdkFabric::DpdkFabric(core::Provider* prov, const fi_fabric_attr* attr, void* context,
                       const config::Config& cfg)
    : core::Fabric(prov, attr, context), cfg_(cfg) {
  core::install_fabric_ops<DpdkFabric>(box_.fid);
}

DpdkFabric::~DpdkFabric() { dpdk_glue::eal_release(); }

int DpdkFabric::open_domain(fi_info* info, fid_domain** dom, uint64_t flags, void* context) {
  if (!info->domain_attr || !info->domain_attr->name) return -FI_EINVAL;
  if (info->fabric_attr && info->fabric_attr->prov_name &&
      strcmp(info->fabric_attr->prov_name, "dpdk") != 0)
    return -FI_EINVAL;
  if (info->domain_attr->data_progress == FI_PROGRESS_AUTO) return -FI_ENOSYS;
  std::string want = info->domain_attr->name;
  bool known = false;
  for (const auto& v : cfg_.dpdk.vdevs) known |= device_name(v) == want;
  for (const auto& p : cfg_.eal.pci_allow) known |= device_name(p) == want;
  if (!known) return -FI_ENODEV;
  util::Status st = util::Status::Ok;
  std::string err;
  auto port = dpdk_glue::Port::open(want, cfg_, st, err);
  if (!port) {
    PF_LOG("dpdk", Warn, Domain, "fi_domain({}): {}", want, err);
    return -core::fi_errno_of(st);
  }
  auto* d = new DpdkDomain(this, info, context, cfg_, std::move(port));
  *dom = d->fid();
  return 0;
}

DpdkDomain::DpdkDomain(DpdkFabric* fabric, const fi_info* info, void* context,
                       const config::Config& cfg, std::shared_ptr<dpdk_glue::Port> port)
    : packet::TransportDomain(fabric, info, context, packet::NameKind::Dpdk, cfg) {
  const rte_ether_addr& mac = port->mac();
  base_.kind = packet::NameKind::Dpdk;
  std::memcpy(base_.mac, mac.addr_bytes, 6);
  base_.udp_port = cfg.dpdk.udp_port;
  in_addr a{};
  if (!cfg.dpdk.ipv4.empty() && inet_pton(AF_INET, cfg.dpdk.ipv4.c_str(), &a) == 1)
    base_.ipv4 = ntohl(a.s_addr);
  else  // 198.19.<mac[4]>.<mac[5]>: unique per port on one segment, inside 198.18.0.0/15
    base_.ipv4 = (198u << 24) | (19u << 16) | (uint32_t(mac.addr_bytes[4]) << 8) | mac.addr_bytes[5];
  // eal.pin_threads: threads calling in are pinned near the port (eal.lcores if set, else the
  // CPUs of the port's NUMA node from hwloc).
  std::string pin;
  if (cfg.eal.pin_threads) pin = !cfg.eal.lcores.empty() ? cfg.eal.lcores : port->placement().cpus;
  attach_io(std::make_unique<DpdkIo>(std::move(port), base_.ipv4, base_.udp_port, pin,
                                     cfg.dpdk.zero_copy_min_bytes));
}

packet::Name DpdkDomain::local_name(uint16_t ep_id) const noexcept {
  packet::Name n = base_;
  n.ep_id = ep_id;
  return n;
}

}  // namespace pollfab::providers::dpdk
