#include "providers/dpdk/domain.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cstring>
#include <iterator>

#include "dpdk_glue/eal.hpp"
#include "providers/packet/attr.hpp"
#include "providers/packet/pep.hpp"
#include "lib/core/errors.hpp"
#include "lib/core/ops_fabric.hpp"
#include "lib/util/log.hpp"

namespace pollfab::providers::dpdk {

std::string device_name(const std::string& dev) { return dev.substr(0, dev.find(',')); }

namespace {

bool parse_mac(const std::string& s, uint8_t* mac) {
  unsigned v[6];
  if (sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
    return false;
  for (int i = 0; i < 6; ++i) mac[i] = static_cast<uint8_t>(v[i]);
  return true;
}

// 198.19.<mac[4]>.<mac[5]>: unique per port on one segment, inside 198.18.0.0/15.
uint32_t ipv4_from_mac(const uint8_t* mac) {
  return (198u << 24) | (19u << 16) | (uint32_t(mac[4]) << 8) | mac[5];
}

}  // namespace

namespace {

// dpdk.ipv4, else derived from the MAC (0 while the MAC is unknown).
uint32_t port_ipv4(const config::Config& cfg, const packet::Name& n) {
  in_addr a{};
  if (!cfg.dpdk.ipv4.empty() && inet_pton(AF_INET, cfg.dpdk.ipv4.c_str(), &a) == 1)
    return ntohl(a.s_addr);
  return n.mac_known() ? ipv4_from_mac(n.mac) : 0;
}

}  // namespace

void config_address(const config::Config& cfg, packet::Name& n) {
  if (!cfg.dpdk.mac.empty()) parse_mac(cfg.dpdk.mac, n.mac);
  n.ipv4 = port_ipv4(cfg, n);
}

DpdkFabric::DpdkFabric(core::Provider* prov, const fi_fabric_attr* attr, void* context,
                       const config::Config& cfg)
    : core::Fabric(prov, attr, context), cfg_(cfg) {
  core::install_fabric_ops<DpdkFabric>(box_.fid);
}

DpdkFabric::~DpdkFabric() { dpdk_glue::eal_release(); }

int DpdkFabric::open_domain(fi_info* info, fid_domain** dom, uint64_t flags, void* context) {
  if (!info->domain_attr || !info->domain_attr->name) return -FI_EINVAL;
  int err = 0;
  std::shared_ptr<packet::Link> link = open_link(info, err);
  if (!link) return err;
  auto* d = new DpdkDomain(this, info, context, cfg_, std::move(link));
  *dom = d->fid();
  return 0;
}

int DpdkFabric::open_passive_ep(fi_info* info, fid_pep** pep, void* context) {
  if (!info->domain_attr || !info->domain_attr->name) return -FI_EINVAL;
  return packet::open_pep(this, info, pep, context, packet::NameKind::Dpdk, cfg_,
                          [this](const fi_info* i, int& e) { return open_link(i, e); });
}

std::shared_ptr<packet::Link> DpdkFabric::open_link(const fi_info* info, int& err) {
  auto fail = [&](int e) {
    err = e;
    return std::shared_ptr<packet::Link>();
  };
  if (!info->domain_attr || !info->domain_attr->name) return fail(-FI_EINVAL);
  if (info->fabric_attr && info->fabric_attr->prov_name &&
      strcmp(info->fabric_attr->prov_name, "dpdk") != 0)
    return fail(-FI_EINVAL);
  if (!packet::NameFormat::supported(info->addr_format)) return fail(-FI_EINVAL);
  std::string want = info->domain_attr->name;
  bool known = false;
  for (const auto& v : cfg_.dpdk.vdevs) known |= device_name(v) == want;
  for (const auto& p : cfg_.eal.pci_allow) known |= device_name(p) == want;
  if (!known) return fail(-FI_ENODEV);
  // One Link per device (a DPDK port is opened once per process): a passive endpoint
  // listening on it, or another domain, shares it. Its UDP port is the first opener's.
  uint16_t udp_port = cfg_.dpdk.udp_port;
  packet::Name src;
  if (packet::info_src_name(info, packet::NameKind::Dpdk, src) && src.udp_port)
    udp_port = src.udp_port;
  const std::string key = "dpdk:" + want;
  std::shared_ptr<packet::Link> link = packet::Link::find(key);
  if (link && link->local_name(0).udp_port != udp_port) {
    PF_LOG("dpdk", Warn, Domain, "fi_domain({}): the port is open with UDP port {}, not {}", want,
           link->local_name(0).udp_port, udp_port);
    return fail(-FI_EBUSY);
  }
  if (link) return link;
  util::Status st = util::Status::Ok;
  std::string why;
  auto port = dpdk_glue::Port::open(want, cfg_, st, why);
  if (!port) {
    PF_LOG("dpdk", Warn, Domain, "fi_domain({}): {}", want, why);
    return fail(-core::fi_errno_of(st));
  }
  packet::Name base;
  base.kind = packet::NameKind::Dpdk;
  std::memcpy(base.mac, port->mac().addr_bytes, 6);
  base.udp_port = udp_port;
  base.ipv4 = port_ipv4(cfg_, base);
  // eal.pin_threads: threads calling in are pinned near the port (eal.lcores if set, else the
  // CPUs of the port's NUMA node from hwloc).
  std::string pin;
  const std::string near = port->placement().cpus;
  if (cfg_.eal.pin_threads) pin = !cfg_.eal.lcores.empty() ? cfg_.eal.lcores : near;
  auto io = std::make_unique<DpdkIo>(std::move(port), base.ipv4, base.udp_port, pin,
                                     cfg_.dpdk.zero_copy_min_bytes, cfg_.dpdk.arp_answer);
  for (const std::string& e : cfg_.dpdk.neighbours) io->add_neighbour(e);  // validated
  link = packet::Link::create(key, std::move(io), cfg_, base, "dpdk", want);
  link->set_near_cpus(near);  // an automatic-progress thread's place (hwloc: the port's node)
  return link;
}

DpdkDomain::DpdkDomain(DpdkFabric* fabric, const fi_info* info, void* context,
                       const config::Config& cfg, std::shared_ptr<packet::Link> link)
    : packet::TransportDomain(fabric, info, context, packet::NameKind::Dpdk, cfg, std::move(link)),
      dpdk_io_(static_cast<DpdkIo*>(&link_->provider_io())) {}

int DpdkDomain::complete(packet::Name& n) noexcept {
  if (n.mac_known()) return 0;
  const packet::Name base = local_name(0);
  if (n.ipv4 == base.ipv4) {  // this port (FI_LOCAL_COMM)
    std::memcpy(n.mac, base.mac, 6);
    return 0;
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(cfg_.dpdk.arp_timeout_ms);
  auto next_request = Clock::now();
  for (;;) {
    {
      util::Guard<util::MaybeLock> g(link_->lock());
      if (dpdk_io_->neighbour(n.ipv4, n.mac)) return 0;
      const auto now = Clock::now();
      if (now >= deadline) break;
      if (now >= next_request) {
        dpdk_io_->arp_request(n.ipv4);
        next_request = now + std::chrono::milliseconds(200);
      }
      link_->progress_locked();  // receives the answer (and keeps the endpoints' traffic moving)
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  PF_LOG("dpdk", Info, Av, "{}: no ARP answer for {}.{}.{}.{} within {} ms", name(), n.ipv4 >> 24,
         (n.ipv4 >> 16) & 0xff, (n.ipv4 >> 8) & 0xff, n.ipv4 & 0xff, cfg_.dpdk.arp_timeout_ms);
  return -FI_EHOSTUNREACH;
}


}  // namespace pollfab::providers::dpdk
