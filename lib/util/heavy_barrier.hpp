// The heavy side of an asymmetric memory barrier (Linux membarrier(2),
// MEMBARRIER_CMD_PRIVATE_EXPEDITED): every running thread of this process executes a full memory
// barrier before heavy_barrier() returns. A thread that pairs it with a compiler barrier
// (std::atomic_signal_fence) on its fast path gets the ordering of a full fence on both sides,
// while paying none on the fast side: Dekker-style handshakes where one side is hot and the
// other rare (userspace RCU, folly's asymmetricHeavyBarrier, MaybeLock's remote side).
// Thread-safety: MT-safe. Cost: a system call and an inter-processor interrupt to each CPU
// running one of our threads (microseconds); never on a hot path.
#pragma once

namespace pollfab::util {

// Registers the process for expedited private membarrier (once; again after a fork). False if
// the kernel lacks it (before Linux 4.14, seccomp, or a ThreadSanitizer build, which cannot
// see the ordering it provides): callers then use ordinary locks.
bool heavy_barrier_available() noexcept;

// The barrier. Requires heavy_barrier_available(); false if the kernel refused it (the caller
// must not rely on the ordering then).
bool heavy_barrier() noexcept;

}  // namespace pollfab::util
