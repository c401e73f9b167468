// `pollfab testbed`: a NIC-less two-host topology inside network namespaces this command
// creates (TESTBED.md rules: addresses from 198.18.0.0/15, no route out, nothing in the root
// namespace, everything removed by `down`).
//
//   pollfab-a  --ctl0 198.18.0.1/24 ==veth== ctl0 198.18.0.2/24--  pollfab-b   (kernel, for
//                                                                    out-of-band bootstrap)
//   pollfab-sw: bridge br0 with persistent multi-queue TAPs pfa and pfb (DPDK data path, tap)
//   memif: a unix socket under the state directory, a = server, b = client (DPDK data path)
//
// Each host gets a config (STATE/a.toml, b.toml): the tap link enters pollfab-sw only while
// EAL creates the port (eal.netns), so the application itself runs in its host namespace.
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

namespace pollfab::apps {
namespace {

namespace fs = std::filesystem;

const char* kStateDir = "/run/pollfab/testbed";
const char* kNsA = "pollfab-a";
const char* kNsB = "pollfab-b";
const char* kNsSw = "pollfab-sw";

struct HostInfo {
  const char* name;
  const char* ns;
  const char* ctl_ip;   // kernel address for bootstrap
  const char* data_ip;  // pollfab frames' IPv4 (no kernel involvement)
  const char* mac;
  const char* tap;
};
const HostInfo kHosts[] = {
    {"a", kNsA, "198.18.0.1", "198.18.1.1", "02:50:46:00:00:0a", "pfa"},
    {"b", kNsB, "198.18.0.2", "198.18.1.2", "02:50:46:00:00:0b", "pfb"},
};

const HostInfo* host(const std::string& h) {
  for (const auto& x : kHosts)
    if (h == x.name) return &x;
  return nullptr;
}

bool ns_exists(const char* ns) { return fs::exists(std::string("/var/run/netns/") + ns); }

int ip(std::vector<std::string> args, bool quiet = false) {
  args.insert(args.begin(), "ip");
  return run_cmd(args, quiet);
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Keeps the TAPs' carrier on between DPDK processes. A tun device drops its carrier when its
// last queue closes; when the next process attaches, the kernel's link watcher may take up to
// a second to tell the bridge, which drops every frame until then (a second of loss at every
// start). A disabled queue (TUNSETQUEUE IFF_DETACH_QUEUE) keeps the carrier on and is never
// given frames. The holder is a child process recorded in STATE/holder.pid and ended by `down`.
int start_tap_holder() {
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
  for (const auto& h : kHosts) {
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    ifreq ifr{};
    strncpy(ifr.ifr_name, h.tap, IFNAMSIZ - 1);
    ifr.ifr_flags = IFF_TAP | IFF_MULTI_QUEUE;  // net_tap's flags (packet info on)
    if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) != 0) _exit(1);
    ifreq q{};
    q.ifr_flags = IFF_DETACH_QUEUE;
    if (ioctl(fd, TUNSETQUEUE, &q) != 0) _exit(1);
  }
  alarm(7 * 24 * 3600);  // bounded: a forgotten testbed's holder ends after a week
  for (;;) pause();
}

void stop_tap_holder() {
  std::ifstream f(fs::path(kStateDir) / "holder.pid");
  long pid = 0;
  if (f >> pid && pid > 1) kill(static_cast<pid_t>(pid), SIGTERM);
}

void write_config(const HostInfo& h, const std::string& link) {
  fs::path p = fs::path(kStateDir) / (std::string(h.name) + ".toml");
  std::ofstream f(p);
  f << "# pollfab testbed host " << h.name << " (" << link << " link); written by `pollfab testbed up`\n";
  if (link == "tap") {
    f << "[eal]\nnetns = \"" << kNsSw << "\"\n\n";
    f << "[dpdk]\nvdevs = [\"net_tap0,iface=" << h.tap << "\"]\n";
  } else {
    std::string role = std::string(h.name) == "a" ? "server" : "client";
    f << "[dpdk]\nvdevs = [\"net_memif0,role=" << role << ",id=0,socket-abstract=no,socket="
      << kStateDir << "/memif.sock\"]\n";
  }
  f << "ipv4 = \"" << h.data_ip << "\"\nmac = \"" << h.mac << "\"\n";
}

int up(const std::string& link) {
  if (link != "tap" && link != "memif") {
    fprintf(stderr, "pollfab testbed: unknown link '%s' (tap or memif)\n", link.c_str());
    return 2;
  }
  if (ns_exists(kNsA) || ns_exists(kNsB) || ns_exists(kNsSw)) {
    fprintf(stderr, "pollfab testbed: already up (run `pollfab testbed down` first)\n");
    return 1;
  }
  fs::create_directories(kStateDir);
  int rc = 0;
  auto step = [&](std::vector<std::string> args) {
    if (rc == 0 && ip(std::move(args)) != 0) rc = 1;
  };
  step({"netns", "add", kNsA});
  step({"netns", "add", kNsB});
  step({"netns", "add", kNsSw});
  for (const char* ns : {kNsA, kNsB, kNsSw}) step({"-n", ns, "link", "set", "lo", "up"});
  // Kernel path for the applications' out-of-band bootstrap: a veth pair created directly
  // between the two host namespaces (never in the root namespace).
  step({"-n", kNsA, "link", "add", "ctl0", "type", "veth", "peer", "name", "ctl0", "netns", kNsB});
  for (const auto& h : kHosts) {
    step({"-n", h.ns, "addr", "add", std::string(h.ctl_ip) + "/24", "dev", "ctl0"});
    step({"-n", h.ns, "link", "set", "ctl0", "up"});
  }
  if (link == "tap") {
    step({"-n", kNsSw, "link", "add", "br0", "type", "bridge"});
    step({"-n", kNsSw, "link", "set", "br0", "up"});
    for (const auto& h : kHosts) {
      step({"-n", kNsSw, "tuntap", "add", "dev", h.tap, "mode", "tap", "multi_queue"});
      step({"-n", kNsSw, "link", "set", h.tap, "master", "br0"});
      step({"-n", kNsSw, "link", "set", h.tap, "up"});
    }
  }
  if (rc == 0 && link == "tap" && start_tap_holder() != 0) rc = 1;
  if (rc != 0) {
    fprintf(stderr, "pollfab testbed: setup failed; cleaning up\n");
    stop_tap_holder();
    for (const char* ns : {kNsA, kNsB, kNsSw}) ip({"netns", "del", ns}, true);
    return rc;
  }
  for (const auto& h : kHosts) write_config(h, link);
  std::ofstream(fs::path(kStateDir) / "link") << link << "\n";
  printf("testbed up (%s link): a = %s, b = %s\n", link.c_str(), kHosts[0].ctl_ip, kHosts[1].ctl_ip);
  return 0;
}

int down() {
  stop_tap_holder();
  for (const char* ns : {kNsA, kNsB, kNsSw})
    if (ns_exists(ns)) ip({"netns", "del", ns}, true);
  std::error_code ec;
  fs::remove_all(kStateDir, ec);
  printf("testbed down\n");
  return 0;
}

int status() {
  bool any = false;
  for (const char* ns : {kNsA, kNsB, kNsSw}) {
    bool e = ns_exists(ns);
    any |= e;
    printf("%-11s %s\n", ns, e ? "present" : "absent");
  }
  if (!any) {
    printf("testbed down\n");
    return 1;
  }
  printf("link: %s\n", read_file(fs::path(kStateDir) / "link").c_str());
  for (const auto& h : kHosts)
    printf("host %s: bootstrap %s, data %s %s, config %s/%s.toml\n", h.name, h.ctl_ip, h.data_ip,
           h.mac, kStateDir, h.name);
  if (ns_exists(kNsSw)) ip({"-n", kNsSw, "-br", "link", "show"});
  return 0;
}

}  // namespace

int testbed_main(const TestbedArgs& a) {
  if (geteuid() != 0 && a.action != "addr") {
    fprintf(stderr, "pollfab testbed: needs root (network namespaces)\n");
    return 1;
  }
  if (a.action == "up") return up(a.link);
  if (a.action == "down") return down();
  if (a.action == "status") return status();
  const HostInfo* h = host(a.host);
  if (!h) {
    fprintf(stderr, "pollfab testbed: unknown host '%s' (a or b)\n", a.host.c_str());
    return 2;
  }
  if (a.action == "addr") {
    printf("%s\n", h->ctl_ip);
    return 0;
  }
  if (a.action == "exec") {
    if (!ns_exists(h->ns)) {
      fprintf(stderr, "pollfab testbed: not up (run `pollfab testbed up`)\n");
      return 1;
    }
    if (a.cmd.empty()) {
      fprintf(stderr, "pollfab testbed exec: no command\n");
      return 2;
    }
    std::string cfg = std::string(kStateDir) + "/" + h->name + ".toml";
    setenv("POLLFAB_CONFIG", cfg.c_str(), 1);
    prepend_ld_library_path(dropin_libdir());
    std::vector<std::string> argv{"ip", "netns", "exec", h->ns};
    argv.insert(argv.end(), a.cmd.begin(), a.cmd.end());
    return exec_cmd(argv);
  }
  fprintf(stderr, "pollfab testbed: unknown action '%s'\n", a.action.c_str());
  return 2;
}

}  // namespace pollfab::apps
