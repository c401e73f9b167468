#include "dpdk_glue/memif.hpp"

#include <errno.h>
#include <rte_ethdev.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "dpdk_glue/intr_thread.hpp"
#include "dpdk_glue/port.hpp"
#include "lib/util/clock.hpp"
#include "lib/util/log.hpp"

namespace pollfab::dpdk_glue {
namespace {

uint64_t mono_ms() { return util::monotonic_ns() / 1'000'000; }

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

// How a memif region shows in /proc/self/maps (DPDK 22.11 names its memfds "memif_region_N").
constexpr char kRegionPrefix[] = "/memfd:memif_region_";

// True if `path` is a unix socket nobody accepts on.
bool stale_socket(const std::string& path) {
  struct stat st{};
  if (lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_un sa{};
  if (path.size() >= sizeof sa.sun_path) return false;
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int r = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  int e = errno;
  close(fd);
  return r != 0 && e == ECONNREFUSED;
}

}  // namespace

bool parse_memif_vdev(const std::string& vdev, std::string& name, std::string& role,
                      std::string& socket, bool& abstract) {
  name = vdev.substr(0, vdev.find(','));
  if (name.rfind("net_memif", 0) != 0) return false;
  role = "client";
  socket.clear();
  abstract = true;  // DPDK's default (socket-abstract=yes)
  size_t pos = name.size();
  while (pos < vdev.size()) {
    size_t next = vdev.find(',', pos + 1);
    std::string kv = vdev.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) {
      std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "role") role = v;
      else if (k == "socket") socket = v;
      else if (k == "socket-abstract") abstract = v != "no";
    }
    pos = next == std::string::npos ? vdev.size() : next;
  }
  return true;
}

std::vector<std::string> remove_stale_memif_sockets(const std::vector<std::string>& vdevs) {
  std::vector<std::string> removed;
  for (const auto& v : vdevs) {
    std::string name, role, socket;
    bool abstract = true;
    if (!parse_memif_vdev(v, name, role, socket, abstract)) continue;
    if (role != "server" || abstract || socket.empty()) continue;
    if (!stale_socket(socket)) continue;
    if (unlink(socket.c_str()) == 0) {
      PF_LOG("dpdk", Info, Fabric, "{}: removed stale memif socket {} (nothing listened on it)",
             name, socket);
      removed.push_back(socket);
    }
  }
  return removed;
}

std::string vdev_for(const std::vector<std::string>& vdevs, const std::string& dev_name) {
  for (const auto& v : vdevs)
    if (v.substr(0, v.find(',')) == dev_name) return v;
  return {};
}

int start_memif_client(uint16_t port, uint32_t timeout_ms, uint32_t retry_ms) {
  const uint64_t start = mono_ms();
  uint64_t last_start = start;
  int r = rte_eth_dev_start(port);  // fails (EPERM) while the server's socket does not exist
  for (;;) {
    if (r == 0 && link_up(port)) return 0;
    uint64_t now = mono_ms();
    if (now - start >= timeout_ms) return r == 0 ? 1 : r;
    if (now - last_start >= retry_ms) {
      PF_LOG("dpdk", Info, Domain, "port {}: memif {} after {} ms; reconnecting", port,
             r == 0 ? "link still down" : "server not found", now - start);
      if (r == 0) run_on_intr_thread([port] { rte_eth_dev_stop(port); });  // see intr_thread.hpp
      r = rte_eth_dev_start(port);
      last_start = mono_ms();
    }
    usleep(1000);
  }
}

size_t prefault_memif_regions() {
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (!f) return 0;
  size_t bytes = 0;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    // "lo-hi perms offset dev inode   path": only memif's own memfds, mapped shared and writable.
    uintptr_t lo = 0, hi = 0;
    char perms[8] = {};
    int path = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %*s %n", &lo, &hi, perms,
                    &path) != 3 || !path || hi <= lo || perms[1] != 'w' || perms[3] != 's' ||
        std::strncmp(line + path, kRegionPrefix, sizeof kRegionPrefix - 1) != 0)
      continue;
    // Populates the page tables as writes would, without writing: the rings' contents stay.
    // Any failure leaves the pages to fault in on first use, as before: kernels before 5.14
    // (EINVAL), a region the interrupt thread unmapped meanwhile (ENOMEM: the peer left), a
    // memory limit reached (nothing is touched that could fault fatally).
    if (madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_WRITE) == 0) bytes += hi - lo;
  }
  std::fclose(f);
  return bytes;
}

}  // namespace pollfab::dpdk_glue
