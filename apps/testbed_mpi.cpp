// `pollfab testbed mpirun` and `pollfab testbed rank`: Open MPI (Debian's mpirun, unmodified)
// across testbed hosts, every rank on pollfab's drop-in libfabric with a data-path port of its
// own (TESTBED.md "Open MPI across testbed hosts"; CLIENTS.md section 4 for the MCA choices).
//
// mpirun runs in host a's namespace. It starts its daemons (orted) through STATE/rsh-agent.sh,
// an ssh stand-in that runs the daemon's command line as `pollfab testbed exec HOST -- bash -c`;
// the daemons reach mpirun over the hosts' bootstrap addresses (ctl0). Each rank runs as
// `pollfab testbed rank -- PROGRAM ARGS`, which sets POLLFAB_CONFIG to the slot of its host
// given by OMPI_COMM_WORLD_LOCAL_RANK (so K ranks of one host use K ports) and execs PROGRAM.
// Paths: two-sided, pml cm + mtl ofi; with --btl, the one-sided path: pml ob1 with btl ofi
// (RMA and atomics) beside btl tcp for two-sided traffic, osc rdma over btl ofi.
// --reference PROV runs the same job on the reference libfabric (Debian's libfabric1) with
// provider PROV, for side-by-side measurements: the rank wrapper drops the drop-in's directory
// from LD_LIBRARY_PATH (POLLFAB_TESTBED_REFERENCE=1, inherited through the daemons).
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "apps/common/proc.hpp"
#include "apps/testbed.hpp"
#include "apps/testbed_topology.hpp"

namespace pollfab::apps {

using namespace testbed;
namespace fs = std::filesystem;

namespace {

std::string self_exe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string("pollfab");
}

// The ssh stand-in: drops ssh's options, then runs the remaining words in the testbed host.
std::string write_rsh_agent() {
  const std::string path = std::string(kStateDir) + "/rsh-agent.sh";
  std::ofstream f(path);
  f << "#!/bin/bash\n"
       "# ssh stand-in for mpirun (plm_rsh_agent), written by `pollfab testbed mpirun`\n"
       "while [ $# -gt 0 ]; do\n"
       "  case \"$1\" in\n"
       "    -o|-p|-l|-i|-F) shift 2 ;;\n"
       "    -*) shift ;;\n"
       "    *) break ;;\n"
       "  esac\n"
       "done\n"
       "host=$1; shift\n"
       "exec "
    << self_exe() << " testbed exec \"$host\" -- bash -c \"$*\"\n";
  f.close();
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  return path;
}

}  // namespace

int mpirun_main(const TestbedArgs& a) {
  State st;
  if (!read_state(st)) {
    fprintf(stderr, "pollfab testbed mpirun: the testbed is not up (pollfab testbed up)\n");
    return 1;
  }
  if (a.cmd.empty()) {
    fprintf(stderr, "pollfab testbed mpirun: no program (-- PROGRAM [ARGS])\n");
    return 2;
  }
  if (a.np < 1 || a.per_host < 1 || a.per_host > st.slots) {
    fprintf(stderr, "pollfab testbed mpirun: -np %d --per-host %d: need np >= 1 and 1 <= per-host <= %d "
            "(data-path ports per host on the %s link)\n", a.np, a.per_host, st.slots, st.link.c_str());
    return 2;
  }
  const int hosts = (a.np + a.per_host - 1) / a.per_host;
  if (hosts > st.hosts) {
    fprintf(stderr, "pollfab testbed mpirun: %d ranks at %d per host need %d hosts; the testbed has %d "
            "(pollfab testbed up --hosts N)\n", a.np, a.per_host, hosts, st.hosts);
    return 2;
  }
  const std::string prov = a.reference.empty() ? a.provider : a.reference;
  if (!a.reference.empty()) setenv("POLLFAB_TESTBED_REFERENCE", "1", 1);  // ranks inherit it
  if (a.reference.empty() && a.provider != "dpdk" && a.provider != "udp") {
    fprintf(stderr, "pollfab testbed mpirun: --provider %s: dpdk or udp\n", a.provider.c_str());
    return 2;
  }
  for (const auto& kv : a.mca) {
    if (kv.find(' ') == std::string::npos) {
      fprintf(stderr, "pollfab testbed mpirun: --mca takes KEY VALUE\n");
      return 2;
    }
  }
  std::string host_list;
  for (int h = 0; h < hosts; ++h)
    host_list += (h ? "," : "") + host_name(h) + ":" + std::to_string(a.per_host);
  std::vector<std::string> argv{"ip", "netns", "exec", host_ns(0), "mpirun",
                                "--allow-run-as-root", "--oversubscribe",
                                "-np", std::to_string(a.np), "--host", host_list,
                                // Hosts share the machine's cores: binding every host's first
                                // rank to core 0 would stack them on one core.
                                "--bind-to", "none"};
  // The MCA settings of the path, then the user's (a user's KEY replaces ours: mpirun refuses
  // a parameter given twice).
  std::vector<std::pair<std::string, std::string>> params;
  auto mca = [&](const std::string& k, const std::string& v) {
    for (auto& p : params)
      if (p.first == k) {
        p.second = v;
        return;
      }
    params.emplace_back(k, v);
  };
  mca("plm_rsh_agent", write_rsh_agent());
  mca("plm_rsh_no_tree_spawn", "1");
  mca("oob_tcp_if_include", "ctl0");
  // Daemons stay attached to their launcher: one that dies at start is reported by mpirun at
  // once ("ORTE was unable to reliably start one or more daemons") instead of mpirun waiting
  // for its call-back until the test's timeout.
  mca("orte_leave_session_attached", "1");
  // orted's rtc/hwloc shares the topology through a segment mapped at a "hole" it picks in its
  // own address space; with address-space randomisation the pick sometimes lies next to the
  // stack and orted crashes in hwloc_shmem_topology_write (about one start in 30 here, seen as
  // a CI timeout). "none" skips the shared segment: each process reads the topology itself.
  mca("rtc_hwloc_vmhole", "none");
  if (a.btl) {
    mca("pml", "ob1");
    mca("btl", "ofi,tcp,self");
    mca("btl_tcp_if_include", "ctl0");
    mca("btl_ofi_provider_include", prov);
    mca("osc", "rdma");
    mca("osc_rdma_btls", "ofi");
  } else {
    mca("pml", "cm");
    mca("mtl", "ofi");
    mca("mtl_ofi_provider_include", prov);
  }
  // Busy-polling ranks share the machine's cores: let idle ones yield.
  mca("mpi_yield_when_idle", "1");
  // The hosts share /tmp and the hostname: every job's mpirun and orteds would keep their
  // session directories under the same /tmp/ompi.HOST.UID, where a job still cleaning up
  // removed a directory the next one was creating (a daemon's "A call to mkdir was unable to
  // create the desired directory ... No such file or directory", once in a test.sh run).
  // Each run gets a base of its own, removed after it.
  char tmp_base[] = "/tmp/pollfab-ompi.XXXXXX";
  const bool own_tmp = mkdtemp(tmp_base) != nullptr;
  if (own_tmp) mca("orte_tmpdir_base", tmp_base);
  for (const auto& kv : a.mca) {  // "KEY VALUE" (main.cpp joins the two words)
    const size_t sp = kv.find(' ');
    mca(kv.substr(0, sp), kv.substr(sp + 1));
  }
  for (const auto& [k, v] : params) argv.insert(argv.end(), {"--mca", k, v});
  argv.insert(argv.end(), {self_exe(), "testbed", "rank", "--"});
  argv.insert(argv.end(), a.cmd.begin(), a.cmd.end());
  std::string shown;
  for (const auto& w : argv) shown += (shown.empty() ? "" : " ") + w;
  fprintf(stderr, "pollfab testbed mpirun: %s\n", shown.c_str());
  const int rc = run_cmd(argv);
  if (own_tmp) {
    std::error_code ec;
    std::filesystem::remove_all(tmp_base, ec);
  }
  return rc;
}

int rank_main(const TestbedArgs& a) {
  const char* host = std::getenv("POLLFAB_TESTBED_HOST");
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  const int h = host ? host_index(host) : -1;
  const int slot = local ? std::atoi(local) : 0;
  if (h < 0 || a.cmd.empty()) {
    fprintf(stderr, "pollfab testbed rank: run by `pollfab testbed mpirun` (POLLFAB_TESTBED_HOST unset)\n");
    return 2;
  }
  const std::string cfg = config_path(h, slot);
  if (!fs::exists(cfg)) {
    fprintf(stderr, "pollfab testbed rank: host %s has no data-path slot %d (%s)\n", host, slot,
            cfg.c_str());
    return 2;
  }
  setenv("POLLFAB_CONFIG", cfg.c_str(), 1);
  if (const char* ref = std::getenv("POLLFAB_TESTBED_REFERENCE"); ref && *ref == '1') {
    // The reference libfabric: take pollfab's drop-in out of the library path.
    std::string kept, path = std::getenv("LD_LIBRARY_PATH") ? std::getenv("LD_LIBRARY_PATH") : "";
    const std::string dropin = dropin_libdir();
    size_t start = 0;
    while (start <= path.size()) {
      size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      const std::string dir = path.substr(start, end - start);
      if (!dir.empty() && dir != dropin) kept += (kept.empty() ? "" : ":") + dir;
      start = end + 1;
    }
    setenv("LD_LIBRARY_PATH", kept.c_str(), 1);
  }
  return exec_cmd(a.cmd);
}

}  // namespace pollfab::apps
