// RDMA devices and ports as the verbs provider sees them (rdma-core's libibverbs): which ports
// are active, their link attributes, and the GID each uses. One verbs domain = one device port.
//
// GID selection (RoCE v2, the only link the RDM endpoint runs over today): the config's
// verbs.gid_index, or "auto" = the first GID of the port whose type is RoCE v2 and whose
// address is IPv4-mapped (::ffff:a.b.c.d). Endpoint names carry that IPv4 address
// (providers/packet/name.hpp); InfiniBand and IPv6-only GIDs are refused with a reason.
// Thread-safety: the functions are reentrant; a Port is immutable once listed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lib/config/config.hpp"
#include "lib/core/nic.hpp"

namespace pollfab::providers::verbs {

// One active port of a device (values from ibv_query_device / ibv_query_port / the GID table).
struct PortInfo {
  std::string device;         // e.g. "rxe0"
  uint8_t port = 1;           // port number
  uint32_t mtu_bytes = 0;     // active path MTU, bytes (256..4096)
  uint32_t speed_mbps = 0;    // active width x speed, Mbit/s (0: unknown)
  bool ethernet = false;      // link layer Ethernet (RoCE) rather than InfiniBand
  int gid_index = -1;         // chosen GID (see the header); -1 = none usable
  uint8_t gid[16] = {};       // its value
  uint32_t ipv4 = 0;          // host order; the IPv4 address of an IPv4-mapped GID
  uint32_t max_qp_wr = 0;     // device limits used for the queue depths
  bool atomics = false;        // the device does RDMA atomics (atomic_cap != IBV_ATOMIC_NONE)
  uint32_t max_inline = 0;    // bytes; 0 if the device did not say (probed at QP creation)
  uint32_t vendor_id = 0, vendor_part_id = 0, hw_ver = 0;  // ibv_device_attr
  std::string fw_ver;                                      // firmware version text
  std::string why_unusable;   // when gid_index < 0: the reason
};

// The active ports of the devices the config selects (verbs.device "" = all, else that one;
// verbs.port). Devices that fail to open are skipped with a reason in `skipped` (one line each).
// Never throws beyond std::bad_alloc.
std::vector<PortInfo> list_ports(const config::VerbsConfig& cfg, std::vector<std::string>& skipped);

// The fi_info nic of a port (fi_nic(3)): device name, ids (vendor_part_id as device_id,
// hw_ver as device_version, vendor_id), firmware; bus unknown; link: the GID as address, the
// active MTU, speed in bit/s, FI_LINK_UP (only active ports are listed), "Ethernet" (RoCE) or
// "InfiniBand".
core::NicDesc nic_desc(const PortInfo& p);

// IBV_MTU_* enum value -> bytes (0 for an unknown value).
uint32_t mtu_bytes(int ibv_mtu) noexcept;

}  // namespace pollfab::providers::verbs
