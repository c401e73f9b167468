// EAL lifetime: initialised once per process on the first acquire(), reference counted by the
// open fabrics; at process exit its runtime directory is removed (DPDK cannot re-initialise EAL
// in one process, so the last release keeps it running; see eal.cpp on rte_eal_cleanup). Arguments come from the config (lib/config):
//   --lcores=0@(<allowed CPUs>)  the main lcore floats over the CPUs the process may use, so the
//                                application thread is not pinned (unless eal.lcores says so)
//   --no-pci                     unless eal.pci_allow lists devices (-a BDF each)
//   --file-prefix=pollfab-<pid>  unique per process (two DPDK processes may share a machine)
//   --vdev=...                   each dpdk.vdevs entry (mac= appended when dpdk.mac is set)
//   hugepages when hugetlbfs is mounted with free pages (eal.huge=auto|on), else --no-huge -m N
//   with a logged warning; --log-level from eal.log_level; eal.args appended verbatim.
// vdevs are created inside eal.netns when set (testbed).
// Thread-safety: acquire/release are MT-safe.
#pragma once
#include <string>
#include <vector>

#include "lib/config/config.hpp"
#include "lib/util/status.hpp"

namespace pollfab::dpdk_glue {

struct EalResult {
  util::Status status = util::Status::Ok;  // Permission, NoDevice, NoMemory, IoError, Invalid
  std::string message;                     // what failed and what to do
};

// Initialises EAL if needed and takes a reference. A failed initialisation is remembered:
// later calls return the same error (EAL cannot be retried in one process).
EalResult eal_acquire(const config::Config& cfg);
void eal_release() noexcept;
bool eal_running() noexcept;
// The EAL argument vector acquire() would use (for `pollfab info` and tests).
std::vector<std::string> eal_args(const config::Config& cfg, std::string* warning);
// True if hugetlbfs is mounted and has at least `mb` MiB of free 2 MiB pages.
bool hugepages_available(uint32_t mb) noexcept;
// Registers the calling thread with EAL (rte_thread_register) once; cheap afterwards. If
// pin_cpus is non-empty (eal.pin_threads; a CPU list such as "0-3,8"), the thread is also
// pinned to one CPU of that list, threads taking the CPUs in turn.
void ensure_thread_registered(const char* pin_cpus = nullptr) noexcept;
// Parses a CPU list ("0-3,8") into CPU numbers; empty on a syntax error.
std::vector<int> parse_cpu_list(const std::string& list);

}  // namespace pollfab::dpdk_glue
