#include "dpdk_glue/eal.hpp"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <atomic>
#include <mutex>
#include <pthread.h>
#include <sstream>

#include "dpdk_glue/memif.hpp"
#include "dpdk_glue/netns.hpp"
#include "lib/util/log.hpp"

namespace pollfab::dpdk_glue {
namespace {

std::mutex g_mu;
int g_refs = 0;
bool g_initialized = false;
EalResult g_failure;  // set once if rte_eal_init failed
std::string g_runtime_dir;
std::vector<std::string> g_argv_storage;
std::vector<char*> g_argv;

std::string allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "0";
  std::string out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) ++e;
    if (!out.empty()) out += ',';
    out += e > c ? std::to_string(c) + "-" + std::to_string(e) : std::to_string(c);
    c = e;
  }
  return out.empty() ? "0" : out;
}

// At exit only the runtime directory is removed. rte_eal_cleanup() is deliberately not called:
// in DPDK 22.11 it frees interrupt handles while the EAL interrupt thread may still be polling
// them (a memif peer disconnecting at the same moment crashed the process in rte_intr_fd_get),
// and it buys nothing at exit: hugepage files are unlinked when mapped (--huge-unlink) and the
// kernel reclaims the memory.
void cleanup_at_exit() {
  std::lock_guard<std::mutex> g(g_mu);
  if (!g_initialized) return;
  g_initialized = false;
  if (!g_runtime_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(g_runtime_dir, ec);
  }
}

util::Status status_of_errno(int e) {
  switch (e) {
    case EACCES: case EPERM: return util::Status::Permission;
    case ENOMEM: return util::Status::NoMemory;
    case ENODEV: case ENOENT: return util::Status::NoDevice;
    case EINVAL: return util::Status::Invalid;
    default: return util::Status::IoError;
  }
}

}  // namespace

bool hugepages_available(uint32_t mb) noexcept {
  std::ifstream mounts("/proc/mounts");
  std::string line;
  bool mounted = false;
  while (std::getline(mounts, line))
    if (line.find(" hugetlbfs ") != std::string::npos) mounted = true;
  if (!mounted) return false;
  std::ifstream mi("/proc/meminfo");
  uint64_t free_pages = 0, page_kb = 0;
  while (std::getline(mi, line)) {
    if (line.rfind("HugePages_Free:", 0) == 0) free_pages = std::strtoull(line.c_str() + 15, nullptr, 10);
    if (line.rfind("Hugepagesize:", 0) == 0) page_kb = std::strtoull(line.c_str() + 13, nullptr, 10);
  }
  return page_kb && free_pages * page_kb >= uint64_t(mb) * 1024;
}

std::vector<std::string> eal_args(const config::Config& cfg, std::string* warning) {
  std::vector<std::string> a{"pollfab"};
  const auto& e = cfg.eal;
  a.push_back(e.lcores.empty() ? "--lcores=0@(" + allowed_cpus() + ")" : "--lcores=" + e.lcores);
  if (e.pci_allow.empty()) {
    a.push_back("--no-pci");
  } else {
    for (const auto& bdf : e.pci_allow) {
      a.push_back("-a");
      a.push_back(bdf);
    }
  }
  a.push_back("--file-prefix=" + (e.file_prefix.empty() ? "pollfab-" + std::to_string(getpid())
                                                        : e.file_prefix));
  for (const auto& v : cfg.dpdk.vdevs) {
    std::string dev = v;
    if (!cfg.dpdk.mac.empty() && dev.find("mac=") == std::string::npos) dev += ",mac=" + cfg.dpdk.mac;
    a.push_back("--vdev=" + dev);
  }
  bool huge = e.huge == "on" || (e.huge == "auto" && hugepages_available(e.memory_mb / 2));
  if (huge) {
    a.push_back("--huge-unlink");
  } else {
    a.push_back("--no-huge");
    a.push_back("-m");
    a.push_back(std::to_string(e.memory_mb));
    if (warning && e.huge == "auto")
      *warning = "no free hugepages (hugetlbfs mounted with at least " +
                 std::to_string(e.memory_mb / 2) +
                 " MiB free): running EAL with --no-huge; for speed run scripts/setup-hugepages.sh "
                 "(or mount hugetlbfs and set vm.nr_hugepages)";
  }
  a.push_back("--log-level=" + e.log_level);
  for (const auto& x : e.args) a.push_back(x);
  return a;
}

EalResult eal_acquire(const config::Config& cfg) {
  std::lock_guard<std::mutex> g(g_mu);
  if (g_failure.status != util::Status::Ok) return g_failure;
  if (g_initialized) {
    ++g_refs;
    return {};
  }
  std::string warning;
  g_argv_storage = eal_args(cfg, &warning);
  if (!warning.empty()) PF_LOG("dpdk", Warn, Fabric, "{}", warning);
  g_argv.clear();
  for (auto& s : g_argv_storage) g_argv.push_back(s.data());
  g_argv.push_back(nullptr);
  std::string cmd;
  for (auto& s : g_argv_storage) cmd += s + " ";
  PF_LOG("dpdk", Info, Fabric, "rte_eal_init: {}", cmd);

  int ret;
  {
    NetnsGuard ns(cfg.eal.netns);
    if (ns.status()) {
      g_failure = {status_of_errno(ns.status()),
                   "cannot enter network namespace '" + cfg.eal.netns + "' (eal.netns): " +
                       ns.error() + "; is the testbed up (pollfab testbed up)?"};
      return g_failure;
    }
    remove_stale_memif_sockets(cfg.dpdk.vdevs);  // a killed server's socket file blocks the probe
    ret = rte_eal_init(static_cast<int>(g_argv.size() - 1), g_argv.data());
  }
  if (ret < 0) {
    int e = rte_errno;
    std::string hint;
    if (geteuid() != 0)
      hint = "; the dpdk provider needs root (or CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_IPC_LOCK)";
    else if (e == ENOMEM)
      hint = "; not enough memory: free hugepages (scripts/setup-hugepages.sh) or set eal.huge = \"off\"";
    else
      hint = "; check dpdk.vdevs and eal.args in the config (pollfab info shows them), and that "
             "/dev/net/tun exists for net_tap";
    // Without root, whatever EAL reports (often ENOMEM for hugepage/lock limits) is a
    // privilege problem: say so with -FI_EACCES.
    util::Status st = geteuid() != 0 ? util::Status::Permission : status_of_errno(e == 0 ? EIO : e);
    g_failure = {st, std::string("rte_eal_init failed: ") + rte_strerror(e) + hint};
    PF_LOG("dpdk", Warn, Fabric, "{}", g_failure.message);
    return g_failure;
  }
  g_runtime_dir = rte_eal_get_runtime_dir();
  g_initialized = true;
  g_refs = 1;
  static bool registered = false;
  if (!registered) {
    std::atexit(cleanup_at_exit);
    registered = true;
  }
  return {};
}

void eal_release() noexcept {
  std::lock_guard<std::mutex> g(g_mu);
  if (g_refs > 0) --g_refs;
  // EAL stays initialised until exit: DPDK cannot initialise it twice in one process.
}

bool eal_running() noexcept {
  std::lock_guard<std::mutex> g(g_mu);
  return g_initialized;
}

std::vector<int> parse_cpu_list(const std::string& list) {
  std::vector<int> cpus;
  size_t pos = 0;
  while (pos < list.size()) {
    size_t comma = list.find(',', pos);
    std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t dash = item.find('-');
    char* end = nullptr;
    long a = strtol(item.c_str(), &end, 10);
    long b = dash == std::string::npos ? a : strtol(item.c_str() + dash + 1, &end, 10);
    if (item.empty() || a < 0 || b < a || b >= CPU_SETSIZE) return {};
    for (long c = a; c <= b; ++c) cpus.push_back(static_cast<int>(c));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return cpus;
}

void ensure_thread_registered(const char* pin_cpus) noexcept {
  thread_local bool done = false;
  if (done) return;
  done = true;
  if (rte_lcore_id() == LCORE_ID_ANY) (void)rte_thread_register();
  if (!pin_cpus || !*pin_cpus) return;
  static std::atomic<unsigned> next{0};
  std::vector<int> cpus = parse_cpu_list(pin_cpus);
  if (cpus.empty()) return;
  int cpu = cpus[next.fetch_add(1) % cpus.size()];
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0)
    PF_LOG("dpdk", Info, Domain, "thread pinned to CPU {} (eal.pin_threads)", cpu);
}

}  // namespace pollfab::dpdk_glue
