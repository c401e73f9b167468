// `pollfab testbed`: a NIC-less topology of N hosts (2..8) inside network namespaces this
// command creates (TESTBED.md rules: addresses from 198.18.0.0/15, no route out, nothing in the
// root namespace, everything removed by `down`). Topology and addresses: testbed_topology.hpp.
//
//   pollfab-<h>: ctl0 198.18.0.<h+1>/24 (kernel, for out-of-band bootstrap and the udp
//                provider), veth to bridge brctl in pollfab-sw
//   pollfab-sw:  bridge br0 with persistent multi-queue TAPs pf<h>[<slot>] (DPDK data path,
//                tap link, kTapSlots per host)
//   memif:       a unix socket under the state directory, a = server, b = client (two hosts,
//                one slot)
//
// Each host slot gets a config (STATE/a.toml, STATE/a1.toml, ...): the tap link enters
// pollfab-sw only while EAL creates the port (eal.netns), so the application itself runs in its
// host namespace; [udp] binds the host's bootstrap address.
#include "apps/testbed.hpp"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "apps/common/proc.hpp"
#include "apps/testbed_topology.hpp"

namespace pollfab::apps {

namespace testbed {

namespace fs = std::filesystem;

namespace {
std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}
}  // namespace

bool read_state(State& s) {
  s.link = read_file(fs::path(kStateDir) / "link");
  try {
    s.hosts = std::stoi(read_file(fs::path(kStateDir) / "hosts"));
    s.slots = std::stoi(read_file(fs::path(kStateDir) / "slots"));
  } catch (...) {
    return false;
  }
  return !s.link.empty() && s.hosts >= 2 && s.slots >= 1;
}

}  // namespace testbed

namespace {

using namespace testbed;
namespace fs = std::filesystem;

bool ns_exists(const std::string& ns) { return fs::exists("/var/run/netns/" + ns); }

int ip(std::vector<std::string> args, bool quiet = false) {
  args.insert(args.begin(), "ip");
  return run_cmd(args, quiet);
}

// Keeps the TAPs' carrier on between DPDK processes. A tun device drops its carrier when its
// last queue closes; when the next process attaches, the kernel's link watcher may take up to
// a second to tell the bridge, which drops every frame until then (a second of loss at every
// start). A disabled queue (TUNSETQUEUE IFF_DETACH_QUEUE) keeps the carrier on and is never
// given frames. The holder is a child process recorded in STATE/holder.pid and ended by `down`.
int start_tap_holder(int hosts, int slots) {
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid > 0) {
    std::ofstream(fs::path(kStateDir) / "holder.pid") << pid << "\n";
    return 0;
  }
  setsid();
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
  }
  int ns = open((std::string("/var/run/netns/") + kNsSw).c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) _exit(1);
  for (int h = 0; h < hosts; ++h) {
    for (int sl = 0; sl < slots; ++sl) {
      int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
      ifreq ifr{};
      strncpy(ifr.ifr_name, tap_name(h, sl).c_str(), IFNAMSIZ - 1);
      ifr.ifr_flags = IFF_TAP | IFF_MULTI_QUEUE;  // net_tap's flags (packet info on)
      if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) != 0) _exit(1);
      ifreq q{};
      q.ifr_flags = IFF_DETACH_QUEUE;
      if (ioctl(fd, TUNSETQUEUE, &q) != 0) _exit(1);
    }
  }
  alarm(7 * 24 * 3600);  // bounded: a forgotten testbed's holder ends after a week
  for (;;) pause();
}

void stop_tap_holder() {
  std::ifstream f(fs::path(kStateDir) / "holder.pid");
  long pid = 0;
  if (f >> pid && pid > 1) kill(static_cast<pid_t>(pid), SIGTERM);
}

void write_config(int h, int sl, const std::string& link) {
  std::ofstream f(config_path(h, sl));
  f << "# pollfab testbed host " << host_name(h) << " slot " << sl << " (" << link
    << " link); written by `pollfab testbed up`\n";
  if (link == "tap") {
    f << "[eal]\nnetns = \"" << kNsSw << "\"\n\n";
    f << "[dpdk]\nvdevs = [\"net_tap0,iface=" << tap_name(h, sl) << "\"]\n";
  } else {
    std::string role = h == 0 ? "server" : "client";
    f << "[dpdk]\nvdevs = [\"net_memif0,role=" << role << ",id=0,socket-abstract=no,socket="
      << kStateDir << "/memif.sock\"]\n";
  }
  f << "ipv4 = \"" << data_ip(h) << "\"\nmac = \"" << mac(h, sl) << "\"\nudp_port = " << udp_port(sl)
    << "\narp_answer = " << (sl == 0 ? "true" : "false") << "\n\n";
  f << "[udp]\niface_ip = \"" << ctl_ip(h) << "\"\n";
}

void delete_namespaces() {
  for (int h = 0; h < kMaxHosts; ++h)
    if (ns_exists(host_ns(h))) ip({"netns", "del", host_ns(h)}, true);
  if (ns_exists(kNsSw)) ip({"netns", "del", kNsSw}, true);
}

int up(const std::string& link, int hosts) {
  if (link != "tap" && link != "memif") {
    fprintf(stderr, "pollfab testbed: unknown link '%s' (tap or memif)\n", link.c_str());
    return 2;
  }
  if (hosts < 2 || hosts > kMaxHosts) {
    fprintf(stderr, "pollfab testbed: --hosts %d: 2..%d hosts\n", hosts, kMaxHosts);
    return 2;
  }
  if (link == "memif" && hosts != 2) {
    fprintf(stderr, "pollfab testbed: the memif link joins exactly two hosts (use --link tap)\n");
    return 2;
  }
  bool any = ns_exists(kNsSw);
  for (int h = 0; h < kMaxHosts; ++h) any |= ns_exists(host_ns(h));
  if (any) {
    fprintf(stderr, "pollfab testbed: already up (run `pollfab testbed down` first)\n");
    return 1;
  }
  const int slots = link == "tap" ? kTapSlots : 1;
  fs::create_directories(kStateDir);
  int rc = 0;
  auto step = [&](std::vector<std::string> args) {
    if (rc == 0 && ip(std::move(args)) != 0) rc = 1;
  };
  step({"netns", "add", kNsSw});
  step({"-n", kNsSw, "link", "set", "lo", "up"});
  // Kernel path for the applications' out-of-band bootstrap (and the udp provider): every host's
  // ctl0 is a veth whose other end is on bridge brctl in pollfab-sw (never the root namespace).
  step({"-n", kNsSw, "link", "add", "brctl", "type", "bridge"});
  step({"-n", kNsSw, "link", "set", "brctl", "up"});
  for (int h = 0; h < hosts; ++h) {
    const std::string ns = host_ns(h), peer = "ctl-" + host_name(h);
    step({"netns", "add", ns});
    step({"-n", ns, "link", "set", "lo", "up"});
    step({"-n", kNsSw, "link", "add", peer, "type", "veth", "peer", "name", "ctl0", "netns", ns});
    step({"-n", kNsSw, "link", "set", peer, "master", "brctl"});
    step({"-n", kNsSw, "link", "set", peer, "up"});
    step({"-n", ns, "addr", "add", ctl_ip(h) + "/24", "dev", "ctl0"});
    step({"-n", ns, "link", "set", "ctl0", "up"});
  }
  if (link == "tap") {
    step({"-n", kNsSw, "link", "add", "br0", "type", "bridge"});
    step({"-n", kNsSw, "link", "set", "br0", "up"});
    for (int h = 0; h < hosts; ++h) {
      for (int sl = 0; sl < slots; ++sl) {
        const std::string tap = tap_name(h, sl);
        step({"-n", kNsSw, "tuntap", "add", "dev", tap, "mode", "tap", "multi_queue"});
        step({"-n", kNsSw, "link", "set", tap, "master", "br0"});
        step({"-n", kNsSw, "link", "set", tap, "up"});
      }
    }
  }
  if (rc == 0 && link == "tap" && start_tap_holder(hosts, slots) != 0) rc = 1;
  if (rc != 0) {
    fprintf(stderr, "pollfab testbed: setup failed; cleaning up\n");
    stop_tap_holder();
    delete_namespaces();
    return rc;
  }
  for (int h = 0; h < hosts; ++h)
    for (int sl = 0; sl < slots; ++sl) write_config(h, sl, link);
  std::ofstream(fs::path(kStateDir) / "link") << link << "\n";
  std::ofstream(fs::path(kStateDir) / "hosts") << hosts << "\n";
  std::ofstream(fs::path(kStateDir) / "slots") << slots << "\n";
  printf("testbed up (%s link, %d hosts, %d data-path port%s each):", link.c_str(), hosts, slots,
         slots > 1 ? "s" : "");
  for (int h = 0; h < hosts; ++h) printf(" %s = %s", host_name(h).c_str(), ctl_ip(h).c_str());
  printf("\n");
  return 0;
}

int down() {
  stop_tap_holder();
  delete_namespaces();
  std::error_code ec;
  fs::remove_all(kStateDir, ec);
  printf("testbed down\n");
  return 0;
}

int status() {
  State st;
  if (!ns_exists(kNsSw) || !read_state(st)) {
    printf("testbed down\n");
    return 1;
  }
  printf("link: %s, %d hosts, %d data-path port(s) per host\n", st.link.c_str(), st.hosts, st.slots);
  for (int h = 0; h < st.hosts; ++h)
    printf("host %s (%s %s): bootstrap %s, data %s %s, config %s\n", host_name(h).c_str(),
           host_ns(h).c_str(), ns_exists(host_ns(h)) ? "present" : "ABSENT", ctl_ip(h).c_str(),
           data_ip(h).c_str(), mac(h, 0).c_str(), config_path(h, 0).c_str());
  ip({"-n", kNsSw, "-br", "link", "show"});
  return 0;
}

}  // namespace

int testbed_main(const TestbedArgs& a) {
  if (geteuid() != 0 && a.action != "addr") {
    fprintf(stderr, "pollfab testbed: needs root (network namespaces)\n");
    return 1;
  }
  if (a.action == "up") return up(a.link, a.hosts);
  if (a.action == "down") return down();
  if (a.action == "status") return status();
  if (a.action == "mpirun") return mpirun_main(a);
  if (a.action == "rank") return rank_main(a);
  const int h = host_index(a.host);
  if (h < 0) {
    fprintf(stderr, "pollfab testbed: unknown host '%s' (a, b, ...)\n", a.host.c_str());
    return 2;
  }
  if (a.action == "addr") {
    printf("%s\n", ctl_ip(h).c_str());
    return 0;
  }
  if (a.action == "exec") {
    if (!ns_exists(host_ns(h))) {
      fprintf(stderr, "pollfab testbed: host %s is not up (run `pollfab testbed up`)\n",
              a.host.c_str());
      return 1;
    }
    if (a.cmd.empty()) {
      fprintf(stderr, "pollfab testbed exec: no command\n");
      return 2;
    }
    setenv("POLLFAB_CONFIG", config_path(h, 0).c_str(), 1);
    setenv("POLLFAB_TESTBED_HOST", host_name(h).c_str(), 1);
    prepend_ld_library_path(dropin_libdir());
    std::vector<std::string> argv{"ip", "netns", "exec", host_ns(h)};
    argv.insert(argv.end(), a.cmd.begin(), a.cmd.end());
    return exec_cmd(argv);
  }
  fprintf(stderr, "pollfab testbed: unknown action '%s'\n", a.action.c_str());
  return 2;
}

}  // namespace pollfab::apps
