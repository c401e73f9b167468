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
// How: while a watched port's link is down, an EAL alarm reads it on the interrupt thread
// (rte_eal_alarm_set: alarm callbacks run there), every kMemifLinkWatchPeriodUs for the first
// kMemifLinkWatchFastTicks readings and every kMemifLinkWatchSlowUs after; at link up it calls
// prefault_memif_regions() once and stops. That thread is also where net_memif maps and unmaps
// its regions (its control channel's handler), so a mapping can never meet a region being
// unmapped. A server's link that goes down needs watching again for its next connection:
// DpdkIo's link check (every DpdkIo::kLinkCheckRounds progress rounds) calls
// rewatch_memif_link when it sees the link down (a link that drops and comes back between two
// checks is missed: its pages fault in on use, as every page did before the prefault existed).
// A client is not watched again: DPDK's memif client does not reconnect.
//
// Thread-safety: every function is MT-safe; they serialise on one mutex of this file, which no
// alarm takes. unwatch_memif_link cancels on the interrupt thread (run_on_intr_thread), so it
// waits (without spinning) for an alarm running now: up to one prefault, ~3.4 ms. Never throws.
#pragma once
#include <cstdint>

namespace pollfab::dpdk_glue {

// How often a down link is read while watched (us), for the first kMemifLinkWatchFastTicks
// readings (ten seconds: a server started before its client, whose EAL start can take
// seconds); then every kMemifLinkWatchSlowUs (a client that never comes, or a peer gone for
// good, costs the interrupt thread 100 wake-ups a second, not 1,000).
inline constexpr uint32_t kMemifLinkWatchPeriodUs = 1000;
inline constexpr uint32_t kMemifLinkWatchFastTicks = 10000;
inline constexpr uint32_t kMemifLinkWatchSlowUs = 10000;

// Enables the watch of memif port `port` (an ethdev port id) and, with arm_now, starts
// watching its link now (a server whose client has not connected yet). Watched: until its link
// is up, then its regions are mapped in (prefault_memif_regions) and the watch stops. Already
// watched: nothing more. If the alarm cannot be set (rte_eal_alarm_set fails: EAL not
// initialized, no memory), logs a warning and returns false: the regions then fault in page
// by page on use. Returns true otherwise.
bool watch_memif_link(uint16_t port, bool arm_now) noexcept;

// Watches `port`'s link again (it was seen down: its next connection brings new regions),
// unless the watch is not enabled (never watched, or unwatched: a port stopped or closed) or
// is watching already. True if it watches (now or already); false if not enabled, or if the
// alarm could not be set (as watch_memif_link).
bool rewatch_memif_link(uint16_t port) noexcept;

// Disables the watch of `port` (nothing if not watched); after it returns no watch alarm of the
// port runs and rewatch_memif_link arms none. Call before the port stops.
void unwatch_memif_link(uint16_t port) noexcept;

}  // namespace pollfab::dpdk_glue
