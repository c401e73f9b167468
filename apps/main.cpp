// The pollfab command: info, run, testbed, pingpong.
#include <algorithm>
#include <string>
#include <vector>
#include <CLI/CLI.hpp>

#include "apps/info.hpp"
#include "apps/pingpong.hpp"
#include "apps/run.hpp"
#include "apps/testbed.hpp"

using namespace pollfab::apps;

int main(int argc, char** argv) {
  CLI::App app{"pollfab: OFI (libfabric 1.x) on kernel-bypass fabrics"};
  app.require_subcommand(1);

  InfoArgs info;
  auto* c_info = app.add_subcommand(
      "info", "providers, versions, effective config and parameters; --stats: live counters");
  c_info->add_option("--config", info.config, "TOML config file (default: $POLLFAB_CONFIG)");
  c_info->add_flag("--stats", info.stats,
                   "counters of running pollfab processes (per endpoint and peer), from their "
                   "stats sockets");
  c_info->add_flag("--json", info.json, "with --stats: the raw JSON, one document per line");
  c_info->add_option("pid", info.pids, "with --stats: these processes (default: all)")
      ->check(CLI::PositiveNumber);

  RunArgs run;
  auto* c_run = app.add_subcommand("run", "run an unmodified libfabric application on pollfab");
  c_run->add_option("--config", run.config, "TOML config file");
  c_run->add_option("cmd", run.cmd, "command and arguments (after --)")->required();

  TestbedArgs tb;
  auto* c_tb = app.add_subcommand("testbed", "NIC-less testbed hosts in network namespaces");
  c_tb->require_subcommand(1);
  auto* tb_up = c_tb->add_subcommand("up", "create hosts a, b, ...");
  tb_up->add_option("--link", tb.link, "DPDK data path: tap (default) or memif")
      ->check(CLI::IsMember({"tap", "memif"}));
  tb_up->add_option("--hosts", tb.hosts, "number of hosts, 2..8 (default 2; memif: 2)")
      ->check(CLI::Range(2, 8));
  c_tb->add_subcommand("down", "remove everything the testbed created");
  c_tb->add_subcommand("status", "show the testbed");
  auto* tb_addr = c_tb->add_subcommand("addr", "print the bootstrap address of HOST");
  tb_addr->add_option("host", tb.host, "a or b")->required();
  auto* tb_exec = c_tb->add_subcommand("exec", "run CMD as HOST on pollfab with HOST's config");
  tb_exec->add_option("host", tb.host, "a or b")->required();
  tb_exec->add_option("cmd", tb.cmd, "command and arguments (after --)")->required();
  auto* tb_mpi = c_tb->add_subcommand(
      "mpirun", "run an MPI program across the hosts (Open MPI's mpirun, ranks on pollfab)");
  tb_mpi->add_option("-n,--np", tb.np, "ranks (default 2; mpirun's spelling -np works too)")->check(CLI::PositiveNumber);
  tb_mpi->add_option("--per-host", tb.per_host, "ranks per host, each with its own port (default 1)")
      ->check(CLI::PositiveNumber);
  tb_mpi->add_option("--provider", tb.provider, "pollfab provider: dpdk (default) or udp")
      ->check(CLI::IsMember({"dpdk", "udp"}));
  tb_mpi->add_flag("--btl", tb.btl, "one-sided path: pml ob1, btl ofi (RMA), osc rdma");
  tb_mpi->add_option("--reference", tb.reference,
                     "run the ranks on the reference libfabric with this provider instead "
                     "(e.g. \"tcp;ofi_rxm\"), for side-by-side measurements");
  tb_mpi->add_option("--mca", tb.mca, "KEY VALUE for mpirun (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  tb_mpi->add_option("cmd", tb.cmd, "program and arguments (after --)")->required();
  auto* tb_rank = c_tb->add_subcommand("rank", "(run by mpirun) a rank on its host's data-path slot");
  tb_rank->add_option("cmd", tb.cmd, "program and arguments (after --)")->required();

  PingpongArgs pp;
  auto* c_pp = app.add_subcommand("pingpong", "latency/bandwidth ping-pong (server, or client to ADDR)");
  add_pingpong_options(*c_pp, pp);

  // A command after `--` (run, testbed exec/mpirun/rank) is taken as it is: CLI11 sees one
  // placeholder word instead (options right before `--` could otherwise swallow the separator).
  // mpirun's spellings before it: `-np N` (one dash, two letters: not a CLI11 name) is read as
  // --np, and `--mca KEY VALUE` becomes one "KEY VALUE" value (testbed_mpi.cpp splits it).
  const std::string kCmdPlaceholder = "\x01command";
  std::vector<std::string> args, tail;
  for (int i = 1; i < argc; ++i) {
    std::string w = argv[i];
    if (w == "--") {
      tail.assign(argv + i + 1, argv + argc);
      args.push_back("--");
      args.push_back(kCmdPlaceholder);
      break;
    }
    if (w == "-np") w = "--np";
    if (w == "--mca" && i + 2 < argc && std::string(argv[i + 1]) != "--" &&
        std::string(argv[i + 2]) != "--") {
      args.push_back("--mca=" + std::string(argv[i + 1]) + " " + argv[i + 2]);
      i += 2;
      continue;
    }
    args.push_back(w);
  }
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto* cmd : {&run.cmd, &tb.cmd})
    if (cmd->size() == 1 && (*cmd)[0] == kCmdPlaceholder) *cmd = tail;
  if (c_info->parsed()) return info_main(info);
  if (c_run->parsed()) return run_main(run);
  if (c_tb->parsed()) {
    for (auto* s : c_tb->get_subcommands()) tb.action = s->get_name();
    return testbed_main(tb);
  }
  if (c_pp->parsed()) return pingpong_main(pp);
  return 2;
}
