#include "dpdk_glue/memif_link_watch.hpp"

#include <rte_alarm.h>
#include <rte_ethdev.h>

#include <atomic>

#include "dpdk_glue/memif.hpp"
#include "dpdk_glue/port.hpp"
#include "lib/util/clock.hpp"
#include "lib/util/log.hpp"

namespace pollfab::dpdk_glue {
namespace {

struct Watch {
  uint16_t port = 0;
  std::atomic<bool> armed{false};      // an alarm is set, or its callback is running
  std::atomic<uint32_t> mapped{0};     // links seen up and mapped in
};

Watch g_watch[RTE_MAX_ETHPORTS];

std::string port_name(uint16_t port) {
  char name[RTE_ETH_NAME_MAX_LEN] = {};
  if (rte_eth_dev_get_name_by_port(port, name) != 0) return "port " + std::to_string(port);
  return name;
}

// On the interrupt thread: a down link is read again after the period; an up one is mapped in.
void on_tick(void* arg) {
  auto* w = static_cast<Watch*>(arg);
  if (!link_up(w->port)) {
    if (rte_eal_alarm_set(kMemifLinkWatchPeriodUs, &on_tick, w) != 0) {
      w->armed.store(false, std::memory_order_release);
      PF_LOG("dpdk", Warn, Domain,
             "{}: cannot keep watching the memif link (rte_eal_alarm_set); its regions will "
             "fault in on use", port_name(w->port));
    }
    return;
  }
  const uint64_t t0 = util::monotonic_ns();
  const size_t bytes = prefault_memif_regions();
  w->mapped.fetch_add(1, std::memory_order_relaxed);
  w->armed.store(false, std::memory_order_release);
  PF_LOG("dpdk", Info, Domain,
         "{}: link up, {} KiB of memif regions mapped in on the interrupt thread in {} us",
         port_name(w->port), bytes / 1024, (util::monotonic_ns() - t0) / 1000);
}

}  // namespace

bool watch_memif_link(uint16_t port) noexcept {
  if (port >= RTE_MAX_ETHPORTS) return false;
  Watch& w = g_watch[port];
  w.port = port;
  if (w.armed.exchange(true, std::memory_order_acq_rel)) return true;  // already watched
  if (rte_eal_alarm_set(kMemifLinkWatchPeriodUs, &on_tick, &w) == 0) return true;
  w.armed.store(false, std::memory_order_release);
  PF_LOG("dpdk", Warn, Domain,
         "{}: cannot watch the memif link (rte_eal_alarm_set); its regions will fault in on use",
         port_name(port));
  return false;
}

void unwatch_memif_link(uint16_t port) noexcept {
  if (port >= RTE_MAX_ETHPORTS) return;
  Watch& w = g_watch[port];
  // Removes the pending alarm; one whose callback runs now is waited for, and an alarm that
  // callback set meanwhile is removed on the cancel's next pass (rte_alarm.h).
  rte_eal_alarm_cancel(&on_tick, &w);
  w.armed.store(false, std::memory_order_release);
}

uint32_t memif_links_mapped(uint16_t port) noexcept {
  return port < RTE_MAX_ETHPORTS ? g_watch[port].mapped.load(std::memory_order_relaxed) : 0;
}

}  // namespace pollfab::dpdk_glue
