// DpdkFabric owns a reference on EAL (fi_fabric fails with -FI_EACCES / -FI_ENOMEM / -FI_EIO
// and a log line saying what to do when EAL cannot start). DpdkDomain opens its port, derives
// its address (MAC, IPv4, UDP port) and runs the shared transport domain over DpdkIo.
#pragma once
#include <memory>

#include "dpdk_glue/port.hpp"
#include "lib/config/config.hpp"
#include "lib/core/fabric.hpp"
#include "providers/packet/domain.hpp"
#include "providers/dpdk/io.hpp"

namespace pollfab::providers::dpdk {

class DpdkFabric final : public core::Fabric {
 public:
  DpdkFabric(core::Provider* prov, const fi_fabric_attr* attr, void* context,
             const config::Config& cfg);
  ~DpdkFabric() override;
  int open_domain(fi_info* info, fid_domain** dom, uint64_t flags, void* context) override;
  // fi_passive_ep (FI_EP_MSG): listens on the port the info names (packet::TransportPep).
  int open_passive_ep(fi_info* info, fid_pep** pep, void* context);
  // The Link of the port the info names (its domain name; UDP port from its src_addr, else the
  // config): the open one, or the port opened now. err: -FI_EINVAL, -FI_ENODEV (not in the
  // config), -FI_EBUSY (open with another UDP port), or the port's error.
  std::shared_ptr<packet::Link> open_link(const fi_info* info, int& err);
  const config::Config& config() const noexcept { return cfg_; }

 private:
  config::Config cfg_;
};

class DpdkDomain final : public packet::TransportDomain {
 public:
  // link: the port's open Link (its provider layer is a DpdkIo).
  DpdkDomain(DpdkFabric* fabric, const fi_info* info, void* context, const config::Config& cfg,
             std::shared_ptr<packet::Link> link);
  // A name without a MAC: this port's own, the static neighbour table, or ARP over the port
  // (a request every 200 ms, progressing the domain meanwhile, for at most
  // dpdk.arp_timeout_ms). Returns 0 or -FI_EHOSTUNREACH. Takes the domain lock.
  int complete(packet::Name& n) noexcept override;

 private:
  DpdkIo* dpdk_io_ = nullptr;  // the link's provider layer (under the fault and loopback layers)
};

// Domain (port) name of a vdev / device string: the part before the first ','.
std::string device_name(const std::string& dev);
// The port address the config gives without opening the port: dpdk.mac (when set) and the IPv4
// address (dpdk.ipv4, else derived from dpdk.mac; 0 when neither is set).
void config_address(const config::Config& cfg, packet::Name& n);

}  // namespace pollfab::providers::dpdk
