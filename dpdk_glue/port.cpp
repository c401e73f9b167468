#include "dpdk_glue/port.hpp"

#include <net/if.h>
#include <net/if_arp.h>
#include <rte_errno.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include <cstdlib>
#include <map>
#include <mutex>

#include "dpdk_glue/intr_thread.hpp"
#include "dpdk_glue/memif.hpp"
#include "dpdk_glue/memif_link_watch.hpp"
#include "dpdk_glue/netns.hpp"
#include "dpdk_glue/sigio.hpp"
#include "lib/util/log.hpp"

namespace pollfab::dpdk_glue {
namespace {

struct PortState {
  bool configured = false;
  bool started = false;
  int refs = 0;
  uint16_t id = 0;
  rte_mempool* pool = nullptr;
  rte_mempool* ext_pool = nullptr;  // zero copy: data-less mbufs for external buffers
  bool multi_seg = false;
  bool vdev = false;
  bool zc_wanted = false;  // dpdk.zero_copy: "on", or "auto" on a device other than net_memif
  bool memif = false;      // the driver is net_memif
  bool mapped_at_start = false;  // memif: its link was up at start, its regions mapped in then
  bool memif_server = false;     // memif with role=server (its client may come again)
  rte_ether_addr mac{};
  uint32_t mtu = 1500;
  Placement placement;
  bool rx_intr = false;  // configured with Rx interrupts (intr_conf.rxq)
  int rx_fd = -1;        // queue 0's Rx interrupt descriptor, once started
};

std::mutex g_mu;
// Never destroyed: the exit hook below runs after static destructors would have.
std::map<std::string, PortState>& ports() {
  static auto* m = new std::map<std::string, PortState>();
  return *m;
}

// net_tap gives the kernel side of its TAP the port's own MAC. A Linux bridge then takes frames
// for that MAC as its own (a local FDB entry) instead of forwarding them to the port, so the
// kernel side gets a different MAC (last byte flipped); the bridge learns the port's MAC from
// the frames the port sends.
void separate_tap_kernel_mac(uint16_t port, const rte_ether_addr& mac) {
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(port, &info) != 0 || !info.driver_name ||
      strcmp(info.driver_name, "net_tap") != 0 || info.if_index == 0)
    return;
  char ifname[IF_NAMESIZE] = {};
  if (!if_indextoname(info.if_index, ifname)) return;
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, ifname, strnlen(ifname, IF_NAMESIZE - 1));  // ifr is zeroed: terminated
  ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
  std::memcpy(ifr.ifr_hwaddr.sa_data, mac.addr_bytes, 6);
  ifr.ifr_hwaddr.sa_data[5] = static_cast<char>(ifr.ifr_hwaddr.sa_data[5] ^ 0x80);
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  if (ioctl(fd, SIOCSIFHWADDR, &ifr) != 0)
    PF_LOG("dpdk", Warn, Domain, "{}: cannot give the TAP's kernel side its own MAC: {}", ifname,
           strerror(errno));
  close(fd);
}

// Stop and close run on the EAL interrupt thread, where the PMD handles its own control
// events (a memif peer's disconnect): dpdk_glue/intr_thread.hpp.
void close_all_at_exit() {
  std::lock_guard<std::mutex> g(g_mu);
  for (auto& [name, s] : ports()) {
    const uint16_t id = s.id;
    const bool started = s.started, configured = s.configured;
    if (s.memif) unwatch_memif_link(id);
    run_on_intr_thread([id, started, configured] {
      if (started) rte_eth_dev_stop(id);
      if (configured) rte_eth_dev_close(id);
    });
    s.started = s.configured = false;
    s.mapped_at_start = false;
  }
}

bool configure(const std::string& name, PortState& s, const config::Config& cfg, std::string& err) {
  if (rte_eth_dev_get_port_by_name(name.c_str(), &s.id) != 0) {
    err = "no DPDK port named '" + name + "' (dpdk.vdevs creates vdevs at EAL start; allow-list "
          "PCI devices with eal.pci_allow)";
    return false;
  }
  s.placement = place(rte_eth_dev_socket_id(s.id));
  const auto& d = cfg.dpdk;
  uint32_t room = std::max<uint32_t>(2048, d.mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN) +
                  RTE_PKTMBUF_HEADROOM;
  std::string pool_name = "pf_mp_" + std::to_string(s.id);
  s.pool = rte_pktmbuf_pool_create(pool_name.c_str(), d.mempool_size, d.mempool_cache, 0,
                                   static_cast<uint16_t>(room), s.placement.numa_node);
  if (!s.pool) s.pool = rte_pktmbuf_pool_create(pool_name.c_str(), d.mempool_size, d.mempool_cache,
                                                0, static_cast<uint16_t>(room), SOCKET_ID_ANY);
  if (!s.pool) {
    err = std::string("mempool of ") + std::to_string(d.mempool_size) +
          " mbufs could not be created: " + rte_strerror(rte_errno) +
          " (lower dpdk.mempool_size or give EAL more memory: eal.memory_mb / hugepages)";
    return false;
  }
  rte_eth_conf conf{};
  // Zero copy sends a frame as a header mbuf chained to an mbuf over application memory: the
  // device must take multi-segment frames; a vdev (no DMA) reads that memory by its address.
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(s.id, &info) == 0 && (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)) {
    conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    s.multi_seg = true;
  }
  s.vdev = !vdev_for(cfg.dpdk.vdevs, name).empty();
  // dpdk.zero_copy = "auto" leaves it off on net_memif: memif copies every frame into its shared
  // ring anyway, so the chained mbuf and its release cost more than the copy they save (a 4 KiB
  // ping-pong 4% slower, 1 MiB the same; docs/performance.md item 36).
  s.memif = info.driver_name && std::string(info.driver_name) == "net_memif";
  s.zc_wanted = d.zero_copy == "on" || (d.zero_copy == "auto" && !s.memif);
  if (s.multi_seg && s.vdev && d.zero_copy_min_bytes && s.zc_wanted) {
    std::string ext_name = "pf_ext_" + std::to_string(s.id);
    s.ext_pool = rte_pktmbuf_pool_create(ext_name.c_str(), d.mempool_size, d.mempool_cache, 0, 0,
                                         s.placement.numa_node);
    if (!s.ext_pool)
      s.ext_pool = rte_pktmbuf_pool_create(ext_name.c_str(), d.mempool_size, d.mempool_cache, 0,
                                           0, SOCKET_ID_ANY);
    if (!s.ext_pool)
      PF_LOG("dpdk", Info, Domain, "{}: no mempool for zero-copy mbufs ({}); sends copy", name,
             rte_strerror(rte_errno));
  }
  // Rx interrupts, a sleeping reader's wait source: net_tap's are its queue descriptors,
  // readable while frames wait (no event counter to drain). net_memif in DPDK 22.11 has none;
  // PCI devices' are eventfds whose counter the reader must drain (not used yet).
  s.rx_intr = info.driver_name && std::string(info.driver_name) == "net_tap";
  if (s.rx_intr) conf.intr_conf.rxq = 1;
  int r = rte_eth_dev_configure(s.id, 1, 1, &conf);
  if (r < 0) {
    err = "rte_eth_dev_configure(" + name + "): " + rte_strerror(-r);
    return false;
  }
  uint16_t nrx = static_cast<uint16_t>(d.rx_queue_size), ntx = static_cast<uint16_t>(d.tx_queue_size);
  rte_eth_dev_adjust_nb_rx_tx_desc(s.id, &nrx, &ntx);
  int sock = rte_eth_dev_socket_id(s.id);
  if ((r = rte_eth_rx_queue_setup(s.id, 0, nrx, sock, nullptr, s.pool)) < 0 ||
      (r = rte_eth_tx_queue_setup(s.id, 0, ntx, sock, nullptr)) < 0) {
    err = "queue setup on " + name + ": " + rte_strerror(-r);
    return false;
  }
  if (rte_eth_dev_set_mtu(s.id, static_cast<uint16_t>(d.mtu)) != 0)
    PF_LOG("dpdk", Info, Domain, "{}: could not set MTU {}; using the device's", name, d.mtu);
  uint16_t mtu = 0;
  s.mtu = rte_eth_dev_get_mtu(s.id, &mtu) == 0 && mtu ? std::min<uint32_t>(mtu, d.mtu) : d.mtu;
  rte_eth_macaddr_get(s.id, &s.mac);
  s.configured = true;
  return true;
}

}  // namespace

std::shared_ptr<Port> Port::open(const std::string& dev_name, const config::Config& cfg,
                                 util::Status& st, std::string& err) {
  std::lock_guard<std::mutex> g(g_mu);
  static bool hooked = false;
  if (!hooked) {
    std::atexit(close_all_at_exit);  // runs before EAL's own exit cleanup (registered earlier)
    hooked = true;
  }
  PortState& s = ports()[dev_name];
  NetnsGuard ns(cfg.eal.netns);
  if (!s.configured && !configure(dev_name, s, cfg, err)) {
    st = s.pool ? util::Status::IoError : util::Status::NoDevice;
    if (err.find("mempool") != std::string::npos) st = util::Status::NoMemory;
    return nullptr;
  }
  if (!s.started) {
    std::string name, role, sock;
    bool abstract = true;
    const bool memif_vdev =
        parse_memif_vdev(vdev_for(cfg.dpdk.vdevs, dev_name), name, role, sock, abstract);
    s.memif_server = memif_vdev && role == "server";
    const bool memif_client = cfg.dpdk.link_wait_ms && memif_vdev && role == "client";
    int r = memif_client ? start_memif_client(s.id, cfg.dpdk.link_wait_ms, 500)
                         : rte_eth_dev_start(s.id);
    if (r < 0) {
      st = util::Status::IoError;
      err = "rte_eth_dev_start(" + dev_name + "): " + rte_strerror(-r);
      if (memif_client)
        err += " for " + std::to_string(cfg.dpdk.link_wait_ms) +
               " ms (dpdk.link_wait_ms); is the memif server (role=server) running?";
      return nullptr;
    }
    s.started = true;
    // A link already up (a client waits for it) has its regions: mapped in before the
    // application's first packet (memif.hpp). A server's come with its client, later: the
    // link watch maps them in on the interrupt thread when the link comes up
    // (memif_link_watch.hpp). If the watch cannot start (it logs why), they fault in on use.
    s.mapped_at_start = s.memif && dpdk_glue::link_up(s.id);
    if (s.mapped_at_start)
      PF_LOG("dpdk", Info, Domain, "{}: {} KiB of memif regions mapped in at port start", dev_name,
             prefault_memif_regions() / 1024);
    if (s.memif) watch_memif_link(s.id, !s.mapped_at_start);
    if (r == 1)
      PF_LOG("dpdk", Warn, Domain,
             "{}: memif link still down after {} ms (dpdk.link_wait_ms); packets are dropped "
             "until the server accepts", dev_name, cfg.dpdk.link_wait_ms);
    separate_tap_kernel_mac(s.id, s.mac);
    confine_tap_sigio();
    if (s.rx_intr) {
      s.rx_fd = rte_eth_dev_rx_intr_ctl_q_get_fd(s.id, 0);
      const int e = s.rx_fd >= 0 ? rte_eth_dev_rx_intr_enable(s.id, 0) : 0;
      if (e != 0 && e != -ENOTSUP) s.rx_fd = -1;
      PF_LOG("dpdk", Info, Domain, "{}: Rx interrupt descriptor {}", dev_name, s.rx_fd);
    }
  }
  ++s.refs;
  std::shared_ptr<Port> p(new Port());
  p->id_ = s.id;
  p->name_ = dev_name;
  p->pool_ = s.pool;
  p->ext_pool_ = s.ext_pool;
  p->memif_ = s.memif;
  p->mapped_at_start_ = s.mapped_at_start;
  p->memif_server_ = s.memif_server;
  p->mac_ = s.mac;
  p->mtu_ = s.mtu;
  p->placement_ = s.placement;
  p->rx_intr_fd_ = s.rx_fd;
  PF_LOG("dpdk", Info, Domain, "port {} ({}) up: mtu {}, NUMA node {} (CPUs {}), zero copy {}",
         s.id, dev_name, s.mtu, s.placement.numa_node, s.placement.cpus,
         s.ext_pool ? "on (segments >= " + std::to_string(cfg.dpdk.zero_copy_min_bytes) + " bytes)"
         : !cfg.dpdk.zero_copy_min_bytes ? std::string("off (dpdk.zero_copy_min_bytes = 0)")
         : cfg.dpdk.zero_copy == "off" ? std::string("off (dpdk.zero_copy = off)")
         : !s.zc_wanted ? std::string("off (dpdk.zero_copy = auto: net_memif copies every frame "
                                      "into its ring anyway)")
         : !s.vdev ? std::string("off (PCI device: application memory is not DMA-mapped)")
         : !s.multi_seg ? std::string("off (no multi-segment tx)") : std::string("off"));
  return p;
}

bool Port::watch_link() noexcept { return memif_server_ && rewatch_memif_link(id_); }

Port::~Port() {
  std::lock_guard<std::mutex> g(g_mu);
  PortState& s = ports()[name_];
  if (--s.refs == 0 && s.started) {
    const uint16_t id = s.id;
    if (s.memif) unwatch_memif_link(id);
    run_on_intr_thread([id] { rte_eth_dev_stop(id); });
    s.started = false;
  }
}

}  // namespace pollfab::dpdk_glue
