// The memif link watch: maps a net_memif port's shared regions in on DPDK's EAL interrupt
// thread as soon as its link comes up, instead of on the application's data path.
//
// Why: memif creates a connection's regions (its rings and packet buffers, ~4 MiB) unpopulated,
// and prefault_memif_regions() (memif.hpp) maps them in, which takes ~3.4 ms on this machine
// (MADV_POPULATE_WRITE of 4,132 KiB). A client's link is up when its port starts, so Port::open
// maps them in then. A server's link comes up later, when its client connects. Until
// 2026-11-27 the server's I/O mapped them in at its first link check after that, inside a
// progress call: Debian's fi_pingpong, which times its first message, paid the 3.4 ms in its
// first round trip (a 1-iteration run: 2,310 us a transfer), which is 0.115 us of every
// transfer's mean over its 20,000 64-byte iterations (0.44 against 0.33 for the same pair
// warmed up). The client connects when its domain opens, milliseconds before the application
// can send, so the mapping now happens during that time.
//
// How: while a watched port's link is down, an EAL alarm reads it every kPeriodUs on the
// interrupt thread (rte_eal_alarm_set: alarm callbacks run there); at link up the alarm calls
// prefault_memif_regions() once and stops. That thread is also where net_memif maps and unmaps
// its regions (its control channel's handler), so a mapping can never meet a region being
// unmapped. A link that goes down needs watching again for its next connection: DpdkIo's link
// check (every DpdkIo::kLinkCheckRounds progress rounds) calls watch_memif_link when it sees
// the link down (a link that drops and comes back between two checks is missed: its pages fault
// in on use, as every page did before the prefault existed).
//
// Thread-safety: both functions are MT-safe and never block on the data path's locks;
// unwatch_memif_link waits for an alarm running now (up to one prefault, ~3.4 ms). Never throws.
#pragma once
#include <cstdint>

namespace pollfab::dpdk_glue {

// How often a down link is read while watched (us). The interrupt thread wakes this often only
// while a watched link is down (a server waiting for its client).
inline constexpr uint32_t kMemifLinkWatchPeriodUs = 1000;

// Starts watching memif port `port` (an ethdev port id) until its link is up, then maps its
// regions in (prefault_memif_regions) and stops. Already watched: nothing. If the alarm cannot
// be set (rte_eal_alarm_set fails: EAL not initialized, no memory), logs a warning and returns
// false: the regions then fault in page by page on use. Returns true when watched.
bool watch_memif_link(uint16_t port) noexcept;

// Stops watching `port` (nothing if not watched); after it returns no watch alarm of the port
// runs. Call before the port stops.
void unwatch_memif_link(uint16_t port) noexcept;

// The links of `port` the watch has seen come up and mapped in (tests and logs).
uint32_t memif_links_mapped(uint16_t port) noexcept;

}  // namespace pollfab::dpdk_glue
