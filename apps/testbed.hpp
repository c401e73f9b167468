// `pollfab testbed`: NIC-less hosts in network namespaces (apps/testbed.cpp: up, down, status,
// addr, exec) and MPI across them (apps/testbed_mpi.cpp: mpirun, rank).
#pragma once
#include <string>
#include <vector>

namespace pollfab::apps {

struct TestbedArgs {
  std::string action;  // up | down | status | addr | exec | mpirun | rank
  std::string link = "tap";
  int hosts = 2;                  // up: hosts a, b, ... (2..8)
  std::string host;               // addr, exec
  std::vector<std::string> cmd;   // exec, mpirun, rank: command and arguments
  // mpirun
  int np = 2;                     // ranks
  int per_host = 1;               // ranks per host (each with its own data-path port)
  std::string provider = "dpdk";  // dpdk | udp
  bool btl = false;               // one-sided path: pml ob1 + btl ofi + osc rdma
  std::vector<std::string> mca;   // "KEY VALUE" words passed to mpirun as --mca KEY VALUE
  std::string reference;          // non-empty: ranks run on the reference libfabric with this
                                  // provider (side-by-side benchmarks), not on pollfab
};
int testbed_main(const TestbedArgs& a);
// Runs Debian's mpirun from host a with ranks spread over the hosts (testbed_mpi.cpp).
int mpirun_main(const TestbedArgs& a);
// Per-rank wrapper mpirun starts: picks the rank's data-path slot config, then execs a.cmd.
int rank_main(const TestbedArgs& a);

}  // namespace pollfab::apps
