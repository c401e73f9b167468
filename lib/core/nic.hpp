// The fid_nic of an fi_info (fi_getinfo(3) "nic", fi_nic(3)): a provider's description of the
// network hardware behind a domain: device attributes (name, ids, driver, firmware), bus
// attributes and link attributes (address, MTU, speed, state, network type).
//
// make_nic() allocates one. It is an OFI object of class FI_CLASS_NIC whose fi_ops do what
// libfabric's core expects of a nic:
//   close   - frees it (fi_freeinfo closes info->nic);
//   control - FI_DUP: *(fid_nic**)arg = a deep copy (fi_dupinfo duplicates info->nic this way);
//             other commands: -FI_ENOSYS;
//   tostr   - appends its YAML to the string in buf (fi_tostr(FI_TYPE_INFO) prints info->nic
//             through it), in libfabric 1.17's layout ("    nic:" then fi_device_attr,
//             fi_bus_attr, fi_link_attr); len is the space left after that string.
// The attribute structs and their strings belong to the nic; empty strings are null pointers
// (printed "(null)"). Thread-safety: immutable after make_nic; copies are independent.
#pragma once
#include <rdma/fabric.h>

#include <cstdint>
#include <string>

namespace pollfab::core {

struct NicDesc {
  // fi_device_attr
  std::string name, device_id, device_version, vendor_id, driver, firmware;
  // fi_bus_attr: FI_BUS_UNKNOWN, or FI_BUS_PCI with its address
  fi_bus_type bus_type = FI_BUS_UNKNOWN;
  fi_pci_attr pci{};
  // fi_link_attr
  std::string address;  // link-level address, text
  size_t mtu = 0;       // bytes
  size_t speed = 0;     // bits per second
  fi_link_state state = FI_LINK_UNKNOWN;
  std::string network_type;  // e.g. "Ethernet", "InfiniBand"
};

// A new nic describing d; nullptr if memory runs out.
fid_nic* make_nic(const NicDesc& d) noexcept;

}  // namespace pollfab::core
