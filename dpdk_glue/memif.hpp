// net_memif helpers: the parts of a memif link's life DPDK leaves to the application.
//
// 1. A memif server (role=server, socket-abstract=no) listens on a unix socket file. A server
//    process that was killed leaves the file behind, and the next server's vdev probe then
//    fails ("failed to initialize net_memif0"). remove_stale_memif_sockets() removes such a file
//    before EAL starts, but only if nobody accepts on it (connect() gives ECONNREFUSED): a live
//    server's socket is never touched.
// 2. A memif client connects once, when its port starts. If the server exists but its port is
//    not started yet, the handshake fails and DPDK's client does not try again: the link stays
//    down for good and every packet is dropped. start_memif_client() polls the link and
//    restarts the port (stop + start, which reconnects) until it is up or the time is spent.
// Thread-safety: call before any rx/tx burst on the port (Port::open holds its lock).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pollfab::dpdk_glue {

// Parses one --vdev string; true if it is a net_memif device. Fills the role ("server" or
// "client"; DPDK's default is client) and the socket path ("" when abstract or the default).
bool parse_memif_vdev(const std::string& vdev, std::string& name, std::string& role,
                      std::string& socket, bool& abstract);

// For each memif server vdev with a filesystem socket: removes the socket file if it exists and
// nothing listens on it. Returns the paths removed (each is logged at info).
std::vector<std::string> remove_stale_memif_sockets(const std::vector<std::string>& vdevs);

// The vdev string that created dev_name (the text before its first ','), or "".
std::string vdev_for(const std::vector<std::string>& vdevs, const std::string& dev_name);

// Starts a memif client port and waits until its link is up, restarting the port every
// retry_ms (ms) to reconnect (also while the server's socket does not exist yet), for at most
// timeout_ms. Returns 0 if the link is up, 1 if the port started but the link is still down,
// or rte_eth_dev_start's negative errno if the port could not be started at all.
int start_memif_client(uint16_t port, uint32_t timeout_ms, uint32_t retry_ms);

// Maps in every page of this process's memif regions (the shared rings and their packet
// buffers: /proc/self/maps entries "/memfd:memif_region_N", shared and writable) and returns
// the bytes mapped in. memif creates the regions unpopulated, so without this each buffer's
// first use takes a page fault: about 725 faults (~1,000 pages of a 4 MiB region) in the first
// milliseconds of traffic, during which a 64-byte ping-pong ran at 3-5 us instead of 1.
// madvise(MADV_POPULATE_WRITE) populates without writing, so rings in use are not disturbed;
// where it fails (kernels before 5.14, a region unmapped meanwhile) the pages stay to fault in
// on use and are not counted. Reads /proc/self/maps: setup and link-up paths only, never per
// packet. Thread-safety: any thread.
size_t prefault_memif_regions();

}  // namespace pollfab::dpdk_glue
