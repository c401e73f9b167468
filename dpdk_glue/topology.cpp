#include "dpdk_glue/topology.hpp"

#include <hwloc.h>
#include <sched.h>

#include <cstdlib>

namespace pollfab::dpdk_glue {

Placement place(int device_socket) {
  Placement p;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return p;
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    return p;
  }
  int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  p.numa_nodes = n > 0 ? n : 1;
  int node = device_socket;
  if (node < 0) {
    int cpu = sched_getcpu();
    hwloc_obj_t pu = cpu >= 0 ? hwloc_get_pu_obj_by_os_index(topo, static_cast<unsigned>(cpu)) : nullptr;
    node = 0;
    if (pu) {
      for (int i = 0; i < n; ++i) {
        hwloc_obj_t nn = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, i);
        if (nn && hwloc_bitmap_isset(nn->cpuset, pu->os_index)) node = static_cast<int>(nn->os_index);
      }
    }
  }
  p.numa_node = node;
  hwloc_obj_t nn = hwloc_get_numanode_obj_by_os_index(topo, static_cast<unsigned>(node));
  hwloc_const_cpuset_t set = nn ? nn->cpuset : hwloc_topology_get_topology_cpuset(topo);
  char* s = nullptr;
  if (hwloc_bitmap_list_asprintf(&s, set) >= 0 && s) {
    p.cpus = s;
    std::free(s);
  }
  hwloc_topology_destroy(topo);
  return p;
}

}  // namespace pollfab::dpdk_glue
