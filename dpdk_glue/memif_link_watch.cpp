#include "dpdk_glue/memif_link_watch.hpp"

#include <rte_alarm.h>
#include <rte_ethdev.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "dpdk_glue/intr_thread.hpp"
#include "dpdk_glue/memif.hpp"
#include "dpdk_glue/port.hpp"
#include "lib/util/clock.hpp"
#include "lib/util/log.hpp"

namespace pollfab::dpdk_glue {
namespace {

// One per port id: the port is its index in g_watch (not a field: nothing for a tick to race).
struct Watch {
  std::atomic<bool> enabled{false};  // between watch_memif_link and unwatch_memif_link
  std::atomic<bool> armed{false};    // an alarm is set, or its callback is reading the link
  // Readings since armed (the back-off): written by the arming caller while nothing is armed,
  // then by the ticks, which stop touching it once they clear `armed` (the handoff).
  uint32_t ticks = 0;
};

Watch g_watch[RTE_MAX_ETHPORTS];
// Serialises watch, rewatch and unwatch (a rewatch's check of `enabled` and its arming against
// an unwatch's cancel). Never taken by a tick: unwatch may hold it while its cancel waits for
// a running tick.
std::mutex g_mu;

uint16_t port_of(const Watch* w) noexcept { return static_cast<uint16_t>(w - g_watch); }

// The port's name for a log line, into buf (callers are noexcept; PF_LOG catches its own).
const char* port_name(uint16_t port, char (&buf)[RTE_ETH_NAME_MAX_LEN]) noexcept {
  if (rte_eth_dev_get_name_by_port(port, buf) != 0) std::snprintf(buf, sizeof buf, "port %u", port);
  return buf;
}

void on_tick(void* arg) noexcept;

// Sets the next tick (the first kMemifLinkWatchFastTicks at the period, then every
// kMemifLinkWatchSlowUs). False if the alarm cannot be set.
bool arm(Watch& w) noexcept {
  const uint32_t us =
      w.ticks < kMemifLinkWatchFastTicks ? kMemifLinkWatchPeriodUs : kMemifLinkWatchSlowUs;
  return rte_eal_alarm_set(us, &on_tick, &w) == 0;
}

// On the interrupt thread: a down link is read again later; an up one is mapped in.
void on_tick(void* arg) noexcept {
  auto* w = static_cast<Watch*>(arg);
  const uint16_t port = port_of(w);
  char name[RTE_ETH_NAME_MAX_LEN];
  if (!w->enabled.load(std::memory_order_acquire)) {
    w->armed.store(false, std::memory_order_release);
    return;
  }
  if (!link_up(port)) {
    ++w->ticks;
    if (!arm(*w)) {
      w->armed.store(false, std::memory_order_release);
      PF_LOG("dpdk", Warn, Domain,
             "{}: cannot keep watching the memif link (rte_eal_alarm_set); its regions will "
             "fault in on use", port_name(port, name));
    }
    return;
  }
  // Disarmed before the mapping (3-4 ms): a rewatch meanwhile (DpdkIo saw the link go down)
  // arms an alarm that runs after this one. A link that drops before any DpdkIo check saw it
  // up is not watched again: its next connection's pages fault in on use.
  w->armed.store(false, std::memory_order_release);
  const uint64_t t0 = util::monotonic_ns();
  const size_t bytes = prefault_memif_regions();
  PF_LOG("dpdk", Info, Domain,
         "{}: link up, {} KiB of memif regions mapped in on the interrupt thread in {} us",
         port_name(port, name), bytes / 1024, (util::monotonic_ns() - t0) / 1000);
}

// Arms w if it is enabled and not armed already (under g_mu). False if it is not enabled or
// the alarm could not be set.
bool arm_if_idle(Watch& w, uint16_t port) noexcept {
  if (!w.enabled.load(std::memory_order_acquire)) return false;
  if (w.armed.exchange(true, std::memory_order_acq_rel)) return true;  // already watching
  w.ticks = 0;  // (no tick runs: it is not armed)
  if (arm(w)) return true;
  w.armed.store(false, std::memory_order_release);
  char name[RTE_ETH_NAME_MAX_LEN];
  PF_LOG("dpdk", Warn, Domain,
         "{}: cannot watch the memif link (rte_eal_alarm_set); its regions will fault in on use",
         port_name(port, name));
  return false;
}

}  // namespace

bool watch_memif_link(uint16_t port, bool arm_now) noexcept {
  if (port >= RTE_MAX_ETHPORTS) return false;
  Watch& w = g_watch[port];
  std::lock_guard<std::mutex> g(g_mu);
  w.enabled.store(true, std::memory_order_release);
  return !arm_now || arm_if_idle(w, port);
}

bool rewatch_memif_link(uint16_t port) noexcept {
  if (port >= RTE_MAX_ETHPORTS) return false;
  std::lock_guard<std::mutex> g(g_mu);
  return arm_if_idle(g_watch[port], port);
}

void unwatch_memif_link(uint16_t port) noexcept {
  if (port >= RTE_MAX_ETHPORTS) return;
  Watch& w = g_watch[port];
  std::lock_guard<std::mutex> g(g_mu);
  w.enabled.store(false, std::memory_order_release);  // a rewatch from now on arms nothing
  // On the interrupt thread, after any tick running now (a prefault's last log included): the
  // cancel removes the pending one. From another thread rte_eal_alarm_cancel spins while a tick runs, and under
  // valgrind's scheduler a spinning thread can starve the tick for minutes (a bench-instructions
  // server spun ~10 minutes at its close); a process on one CPU spins for its time slice.
  run_on_intr_thread([&w] { rte_eal_alarm_cancel(&on_tick, &w); });
  w.armed.store(false, std::memory_order_release);
}

}  // namespace pollfab::dpdk_glue
