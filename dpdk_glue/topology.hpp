// Topology (hwloc): NUMA nodes and the CPUs near a port, for memory placement (mempools on the
// port's node) and for pinning progress threads. vdevs have no NUMA node of their own
// (SOCKET_ID_ANY): they are placed on the node of the CPU the calling thread runs on.
// Thread-safety: MT-safe after construction (read-only).
#pragma once
#include <string>

namespace pollfab::dpdk_glue {

struct Placement {
  int numa_node = 0;       // NUMA node for the port's memory
  std::string cpus;        // CPUs of that node, list form ("0-1")
  int numa_nodes = 1;      // nodes in the machine
};

// device_socket: rte_eth_dev_socket_id() of the port (-1 for vdevs).
Placement place(int device_socket);

}  // namespace pollfab::dpdk_glue
