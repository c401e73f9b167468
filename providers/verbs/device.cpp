#include "providers/verbs/device.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace pollfab::providers::verbs {
namespace {

// ::ffff:a.b.c.d
bool ipv4_mapped(const uint8_t* g, uint32_t& ipv4) noexcept {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(g, kPrefix, sizeof kPrefix) != 0) return false;
  ipv4 = uint32_t(g[12]) << 24 | uint32_t(g[13]) << 16 | uint32_t(g[14]) << 8 | g[15];
  return ipv4 != 0;
}

// Mbit/s per lane of IBV port active_speed codes (ibv_query_port(3)).
uint32_t lane_mbps(uint8_t speed) noexcept {
  switch (speed) {
    case 1: return 2500;
    case 2: return 5000;
    case 4: case 8: return 10000;
    case 16: return 14062;
    case 32: return 25781;
    case 64: return 53125;
    case 128: return 106250;
    default: return 0;
  }
}

uint32_t width_lanes(uint8_t width) noexcept {
  switch (width) {
    case 1: return 1;
    case 2: return 4;
    case 4: return 8;
    case 8: return 12;
    case 16: return 2;
    default: return 0;
  }
}

// Chooses the port's GID (see the header) into p; false with p.why_unusable set.
bool choose_gid(ibv_context* ctx, const ibv_port_attr& pa, const std::string& want, PortInfo& p) {
  auto try_index = [&](int i, bool strict) -> bool {
    ibv_gid_entry e{};
    if (ibv_query_gid_ex(ctx, p.port, static_cast<uint32_t>(i), &e, 0) != 0) {
      if (strict) p.why_unusable = fmt::format("GID index {} does not exist on port {}", i, p.port);
      return false;
    }
    uint32_t ip = 0;
    if (e.gid_type != IBV_GID_TYPE_ROCE_V2 || !ipv4_mapped(e.gid.raw, ip)) {
      if (strict)
        p.why_unusable = fmt::format("GID index {} is not a RoCE v2 GID with an IPv4 address "
                                     "(verbs.gid_index)", i);
      return false;
    }
    p.gid_index = i;
    std::memcpy(p.gid, e.gid.raw, 16);
    p.ipv4 = ip;
    return true;
  };
  if (!p.ethernet) {
    p.why_unusable = "InfiniBand link layer: the RDM endpoint needs RoCE v2 (an IPv4 GID)";
    return false;
  }
  if (want != "auto") return try_index(std::atoi(want.c_str()), true);
  for (int i = 0; i < pa.gid_tbl_len; ++i)
    if (try_index(i, false)) return true;
  p.why_unusable = "no RoCE v2 GID with an IPv4 address (is the netdev's address set?)";
  return false;
}

}  // namespace

uint32_t mtu_bytes(int m) noexcept {
  switch (m) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
    default: return 0;
  }
}

std::vector<PortInfo> list_ports(const config::VerbsConfig& cfg, std::vector<std::string>& skipped) {
  std::vector<PortInfo> out;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) {
    skipped.push_back(fmt::format("ibv_get_device_list: {}", strerror(errno)));
    return out;
  }
  bool named_seen = false;
  for (int d = 0; d < n; ++d) {
    const char* name = ibv_get_device_name(list[d]);
    if (!cfg.device.empty() && cfg.device != name) continue;
    named_seen = true;
    ibv_context* ctx = ibv_open_device(list[d]);
    if (!ctx) {
      skipped.push_back(fmt::format("{}: ibv_open_device: {}", name, strerror(errno)));
      continue;
    }
    ibv_device_attr da{};
    ibv_port_attr pa{};
    if (ibv_query_device(ctx, &da) != 0) {
      skipped.push_back(fmt::format("{}: ibv_query_device failed", name));
    } else if (cfg.port > da.phys_port_cnt) {
      skipped.push_back(fmt::format("{}: has {} port(s), verbs.port is {}", name,
                                    da.phys_port_cnt, cfg.port));
    } else if (ibv_query_port(ctx, cfg.port, &pa) != 0) {
      skipped.push_back(fmt::format("{}: ibv_query_port {} failed", name, cfg.port));
    } else if (pa.state != IBV_PORT_ACTIVE) {
      skipped.push_back(fmt::format("{} port {}: not active (state {})", name, cfg.port,
                                    ibv_port_state_str(pa.state)));
    } else {
      PortInfo p;
      p.device = name;
      p.port = cfg.port;
      p.mtu_bytes = mtu_bytes(pa.active_mtu);
      p.speed_mbps = lane_mbps(pa.active_speed) * width_lanes(pa.active_width);
      p.ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
      p.max_qp_wr = static_cast<uint32_t>(da.max_qp_wr);
      p.atomics = da.atomic_cap != IBV_ATOMIC_NONE;
      p.vendor_id = da.vendor_id;
      p.vendor_part_id = da.vendor_part_id;
      p.hw_ver = da.hw_ver;
      p.fw_ver = da.fw_ver;
      if (!choose_gid(ctx, pa, cfg.gid_index, p))
        skipped.push_back(fmt::format("{} port {}: {}", name, cfg.port, p.why_unusable));
      out.push_back(std::move(p));
    }
    ibv_close_device(ctx);
  }
  if (!cfg.device.empty() && !named_seen)
    skipped.push_back(fmt::format("no RDMA device named '{}' (verbs.device)", cfg.device));
  ibv_free_device_list(list);
  return out;
}

core::NicDesc nic_desc(const PortInfo& p) {
  core::NicDesc d;
  d.name = p.device;
  d.device_id = fmt::format("0x{:04x}", p.vendor_part_id);
  d.device_version = fmt::format("{}", p.hw_ver);
  d.vendor_id = fmt::format("0x{:x}", p.vendor_id);
  d.firmware = p.fw_ver;
  char gid[INET6_ADDRSTRLEN] = {};
  if (p.gid_index >= 0 && inet_ntop(AF_INET6, p.gid, gid, sizeof gid)) d.address = gid;
  d.mtu = p.mtu_bytes;
  d.speed = size_t(p.speed_mbps) * 1000000;
  d.state = FI_LINK_UP;
  d.network_type = p.ethernet ? "Ethernet" : "InfiniBand";
  return d;
}

}  // namespace pollfab::providers::verbs
