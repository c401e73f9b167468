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
  const config::Config& config() const noexcept { return cfg_; }

 private:
  config::Config cfg_;
};

class DpdkDomain final : public packet::TransportDomain {
 public:
  DpdkDomain(DpdkFabric* fabric, const fi_info* info, void* context, const config::Config& cfg,
             std::shared_ptr<dpdk_glue::Port> port);
  packet::Name local_name(uint16_t ep_id) const noexcept override;

 private:
  packet::Name base_;
};

// Domain (port) name of a vdev / device string: the part before the first ','.
std::string device_name(const std::string& dev);

}  // namespace pollfab::providers::dpdk
