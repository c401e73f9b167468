#include "providers/dpdk/domain.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "dpdk_glue/eal.hpp"
#include "lib/core/errors.hpp"
#include "lib/util/log.hpp"

namespace pollfab::providers::dpdk {

std::string device_name(const std::string& dev) { return dev.substr(0, dev.find(',')); }

DpdkFabric::DpdkFabric(core::Provider* prov, const fi_fabric_attr* attr, void* context,
                       const config::Config& cfg)
    : core::Fabric(prov, attr, context), cfg_(cfg) {}

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
    : TransportDomain(fabric, info, context, NameKind::Dpdk, cfg), port_(std::move(port)) {
  const rte_ether_addr& mac = port_->mac();
  base_.kind = NameKind::Dpdk;
  std::memcpy(base_.mac, mac.addr_bytes, 6);
  base_.udp_port = cfg.dpdk.udp_port;
  in_addr a{};
  if (!cfg.dpdk.ipv4.empty() && inet_pton(AF_INET, cfg.dpdk.ipv4.c_str(), &a) == 1)
    base_.ipv4 = ntohl(a.s_addr);
  else  // 198.19.<mac[4]>.<mac[5]>: unique per port on one segment, inside 198.18.0.0/15
    base_.ipv4 = (198u << 24) | (19u << 16) | (uint32_t(mac.addr_bytes[4]) << 8) | mac.addr_bytes[5];
  transport::testing::FaultConfig f{cfg.fault.drop, cfg.fault.dup, cfg.fault.reorder,
                                    cfg.fault.corrupt, cfg.fault.seed};
  // eal.pin_threads: threads calling in are pinned near the port (eal.lcores if set, else the
  // CPUs of the port's NUMA node from hwloc).
  std::string pin;
  if (cfg.eal.pin_threads) pin = !cfg.eal.lcores.empty() ? cfg.eal.lcores : port_->placement().cpus;
  io_ = std::make_unique<DpdkIo>(*port_, base_.ipv4, base_.udp_port, f, pin,
                                 cfg.dpdk.zero_copy_min_bytes);
  if (f.any())
    PF_LOG("dpdk", Warn, Domain, "fault injection on {}: drop {} dup {} reorder {} seed {}",
           port_->name(), f.drop, f.dup, f.reorder, f.seed);
  start_assist();
}

DpdkDomain::~DpdkDomain() {
  stop_assist();
  const IoStats& s = io_->stats();
  PF_LOG("dpdk", Info, Domain,
         "{}: rx {} tx {} frames; dropped rx: not_ipv4 {} not_for_us {} bad_ip {} not_udp {} "
         "bad_udp {} fragment {} multiseg {}; unknown ep {}; faults: dropped {} dup {} delayed {}; assist runs {}",
         port_->name(), s.rx_frames, s.tx_frames, s.rx_not_ipv4, s.rx_not_for_us, s.rx_bad_ip,
         s.rx_not_udp, s.rx_bad_udp, s.rx_fragment, s.rx_multiseg, dropped_unknown_ep(),
         s.fault_dropped, s.fault_duplicated, s.fault_delayed, assist_runs());
  io_.reset();
}

size_t DpdkDomain::io_counters(stats::Counter* out, size_t max) const noexcept {
  const IoStats& s = io_->stats();
  const stats::Counter c[] = {
      {"rx_frames", s.rx_frames},         {"tx_frames", s.tx_frames},
      {"rx_not_ipv4", s.rx_not_ipv4},     {"rx_not_for_us", s.rx_not_for_us},
      {"rx_bad_ip", s.rx_bad_ip},         {"rx_not_udp", s.rx_not_udp},
      {"rx_bad_udp", s.rx_bad_udp},       {"rx_fragment", s.rx_fragment},
      {"rx_multiseg", s.rx_multiseg},     {"fault_dropped", s.fault_dropped},
      {"fault_duplicated", s.fault_duplicated}, {"fault_delayed", s.fault_delayed},
  };
  size_t n = std::min(max, std::size(c));
  std::copy(c, c + n, out);
  return n;
}

Name DpdkDomain::local_name(uint16_t ep_id) const noexcept {
  Name n = base_;
  n.ep_id = ep_id;
  return n;
}

}  // namespace pollfab::providers::dpdk
