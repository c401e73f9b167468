// The testbed's topology (apps/testbed.cpp builds it, apps/testbed_mpi.cpp runs MPI on it):
// hosts a, b, ... (network namespaces pollfab-<h>), each with a kernel bootstrap address on a
// bridge in pollfab-sw, and data-path slots: one DPDK port per slot (a TAP on the same bridge,
// or, for the two-host memif link, one memif pair). A process picks its slot's config
// (STATE/<host>.toml for slot 0, STATE/<host><slot>.toml after), so several ranks of one host
// each have their own port, the way MPI places ranks on a node.
// Addresses (198.18.0.0/15 only): each host has one IPv4 address, 198.18.0.<h+1>, on its kernel
// bootstrap interface (ctl0, /24) and on every data-path port, the way a cluster node has one
// address: an application names host a by the same address in its bootstrap and on the data
// path. Slots of a host differ by UDP port (udp_port(s) = 47600 + s) and MAC
// 02:50:46:00:<s>:<0x0a+h>; only slot 0 answers ARP for the address (one address has one MAC on
// a segment), so node:service names reach slot 0 and the other slots are reached by the binary
// names the application exchanges. TAP pf<host> (slot 0) or pf<host><s>.
#pragma once
#include <string>

namespace pollfab::apps::testbed {

inline constexpr const char* kStateDir = "/run/pollfab/testbed";
inline constexpr const char* kNsSw = "pollfab-sw";
inline constexpr int kMaxHosts = 8;
inline constexpr int kTapSlots = 4;  // data-path ports per host on the tap link

inline std::string host_name(int h) { return std::string(1, char('a' + h)); }
// Host index of a name ("a" -> 0), -1 if not a testbed host name.
inline int host_index(const std::string& name) {
  return name.size() == 1 && name[0] >= 'a' && name[0] < 'a' + kMaxHosts ? name[0] - 'a' : -1;
}
inline std::string host_ns(int h) { return "pollfab-" + host_name(h); }
inline std::string ctl_ip(int h) { return "198.18.0." + std::to_string(h + 1); }
inline std::string data_ip(int h) { return ctl_ip(h); }
inline int udp_port(int s) { return 47600 + s; }
inline std::string mac(int h, int s) {
  char b[32];
  snprintf(b, sizeof b, "02:50:46:00:%02x:%02x", s, 0x0a + h);
  return b;
}
inline std::string tap_name(int h, int s) { return "pf" + host_name(h) + (s ? std::to_string(s) : ""); }
inline std::string config_path(int h, int s) {
  return std::string(kStateDir) + "/" + host_name(h) + (s ? std::to_string(s) : "") + ".toml";
}

// What `up` recorded (STATE/link, STATE/hosts); false if the testbed is not up.
struct State {
  std::string link;  // tap | memif
  int hosts = 0;
  int slots = 0;     // data-path ports per host
};
bool read_state(State& s);

}  // namespace pollfab::apps::testbed
