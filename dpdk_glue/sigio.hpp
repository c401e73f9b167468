// net_tap learns of received frames through SIGIO (fcntl O_ASYNC on its TUN fds, owner = the
// process). A process-directed signal lands on any application thread and interrupts its
// blocking system calls with EINTR (e.g. a libfabric application's out-of-band socket read).
// pollfab keeps that inside the library: a dedicated thread that only waits for signals, the
// TUN fds' SIGIO retargeted to that thread (F_SETOWN_EX, F_OWNER_TID), and SA_RESTART added to
// the PMD's SIGIO handler as a fallback. Call after every port start (net_tap opens its queue
// fds then). Thread-safety: MT-safe.
#pragma once

namespace pollfab::dpdk_glue {

// Returns the number of TUN fds retargeted.
int confine_tap_sigio() noexcept;

}  // namespace pollfab::dpdk_glue
