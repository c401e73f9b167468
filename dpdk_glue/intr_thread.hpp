// run_on_intr_thread: runs a port control call (rte_eth_dev_stop, rte_eth_dev_close) on DPDK's
// EAL interrupt thread, through a one-shot EAL alarm (rte_eal_alarm_set: alarm callbacks run
// on that thread), and waits for it.
// Why: a PMD's own control events run on that thread. net_memif handles its peer's disconnect
// there (memif_intr_handler -> memif_disconnect, which unmaps the shared regions and frees the
// control channel); rte_eth_dev_stop on another thread runs the same memif_disconnect, and the
// two together (both ends of a pair closing at once, as fi_pingpong's do) free twice and crash.
// On one thread they run one after the other.
// Thread-safety: any thread except the interrupt thread itself (which would wait for itself:
// never called from a DPDK callback). Blocks up to timeout_ms for the interrupt thread; if it
// does not get there in time (stuck, or no EAL), fn runs on the caller's thread instead.
// Never throws; fn must not throw.
#pragma once
#include <cstdint>
#include <functional>

namespace pollfab::dpdk_glue {

// Returns true if fn ran on the interrupt thread, false if it ran on the caller's.
bool run_on_intr_thread(const std::function<void()>& fn, uint32_t timeout_ms = 2000) noexcept;

}  // namespace pollfab::dpdk_glue
