// Port: one DPDK ethdev port (a vdev or an allow-listed PCI device) with one rx and one tx
// queue and its mempool on the port's NUMA node (hwloc placement). Ports are opened by name,
// configured once per process and reference counted by the domains using them: the last close
// stops the port (it stays configured for a later domain); process exit closes it before EAL
// cleanup. rx_burst/tx_burst are inline wrappers of rte_eth_rx_burst/rte_eth_tx_burst.
// Thread-safety: open/close are MT-safe; bursts are single-threaded per queue.
#pragma once
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <memory>
#include <string>

#include "dpdk_glue/topology.hpp"
#include "lib/config/config.hpp"
#include "lib/util/status.hpp"

namespace pollfab::dpdk_glue {

// True if ethdev port `port`'s link is up now (rte_eth_link_get_nowait: no waiting).
inline bool link_up(uint16_t port) noexcept {
  rte_eth_link link{};
  return rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

class Port {
 public:
  // dev_name: the device name (the vdev string before its first ','), e.g. "net_tap0".
  // On failure returns nullptr and sets st/err (NoDevice: no such port; IoError: setup failed).
  static std::shared_ptr<Port> open(const std::string& dev_name, const config::Config& cfg,
                                    util::Status& st, std::string& err);
  ~Port();
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  uint16_t id() const noexcept { return id_; }
  const std::string& name() const noexcept { return name_; }
  rte_mempool* pool() const noexcept { return pool_; }
  // Data-less mbufs for zero-copy payloads (rte_pktmbuf_attach_extbuf); null when zero copy is
  // off for this port (dpdk.zero_copy = off, or auto on net_memif; dpdk.zero_copy_min_bytes =
  // 0; a PCI device; no multi-segment tx).
  rte_mempool* ext_pool() const noexcept { return ext_pool_; }
  const rte_ether_addr& mac() const noexcept { return mac_; }
  uint32_t mtu() const noexcept { return mtu_; }
  const Placement& placement() const noexcept { return placement_; }
  // Queue 0's Rx interrupt descriptor (level-triggered: readable while frames wait; poll(2)
  // or epoll it, never read it), or -1 if the PMD has none we use (only net_tap's today).
  int rx_intr_fd() const noexcept { return rx_intr_fd_; }
  // A shared-memory link between processes of this host (the net_memif driver): frames never
  // leave its memory.
  bool shared_memory() const noexcept { return memif_; }
  bool link_up() const noexcept { return dpdk_glue::link_up(id_); }
  // memif: the link was up when the port started and its regions were mapped in then (a
  // server's link comes up later, with its client: the link watch maps them in then).
  bool mapped_at_start() const noexcept { return mapped_at_start_; }
  // A memif server's link was seen down: watches it until its next client connects, and maps
  // that connection's regions in on the interrupt thread (memif_link_watch.hpp). Nothing for
  // other ports (a memif client does not reconnect) or once the port stopped. True if it
  // watches (or did already). MT-safe, no wait.
  bool watch_link() noexcept;

  uint16_t rx_burst(rte_mbuf** m, uint16_t n) noexcept { return rte_eth_rx_burst(id_, 0, m, n); }
  uint16_t tx_burst(rte_mbuf** m, uint16_t n) noexcept { return rte_eth_tx_burst(id_, 0, m, n); }

 private:
  Port() = default;
  uint16_t id_ = 0;
  std::string name_;
  rte_mempool* pool_ = nullptr;
  rte_mempool* ext_pool_ = nullptr;
  rte_ether_addr mac_{};
  uint32_t mtu_ = 1500;
  Placement placement_;
  int rx_intr_fd_ = -1;
  bool memif_ = false;
  bool mapped_at_start_ = false;
  bool memif_server_ = false;
};

}  // namespace pollfab::dpdk_glue
