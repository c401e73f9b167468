// The typed configuration of pollfab: one nested struct per section, one field per key.
//
// Field names equal the key names of the schema (lib/config/schema.hpp, which also gives every
// key's unit, range and help); the initializers below are the built-in defaults and equal the
// schema's default_text (checked by tests/unit/config). Values obtained from load()
// (lib/config/loader.hpp) are validated: ranges, powers of two, enumerations and address
// formats hold, and rto_min_us <= rto_initial_us <= rto_max_us, ack_coalesce_pkts <= window_pkts <=
// reorder_window_pkts.
//
// Thread-safety: a Config is a plain value. It is immutable after load(): keep it const and
// share it freely between threads.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pollfab::config {

// [eal] DPDK Environment Abstraction Layer (dpdk provider).
struct EalConfig {
  std::vector<std::string> args;       // extra EAL arguments, appended verbatim
  std::string lcores;                  // EAL --lcores; "" = allowed CPUs, threads not pinned
  bool pin_threads = false;            // pin each progress thread to one CPU of lcores
  std::string file_prefix;             // EAL --file-prefix; "" = pollfab-<pid>
  std::string huge = "auto";           // "auto" | "on" | "off" (lower case)
  uint32_t memory_mb = 512;            // MiB (-m), 64..1048576
  std::string log_level = "error";     // emergency|alert|critical|error|warning|notice|info|debug
  std::vector<std::string> pci_allow;  // PCI BDFs (with optional ",devargs"); empty => --no-pci
  std::string netns;                   // network namespace for vdevs; "" = the current one

  friend bool operator==(const EalConfig&, const EalConfig&) = default;
};

// [dpdk] ports (dpdk provider).
struct DpdkConfig {
  std::vector<std::string> vdevs{"net_tap0,iface=pftap0"};  // one port = one OFI domain each
  uint32_t mtu = 1500;             // bytes, IP MTU, 576..9000
  uint32_t rx_queue_size = 1024;   // descriptors, power of two, 64..16384
  uint32_t tx_queue_size = 1024;   // descriptors, power of two, 64..16384
  uint32_t mempool_size = 16383;   // mbufs per port, 1024..1048575
  uint32_t mempool_cache = 256;    // mbufs, 0..512
  uint32_t burst = 32;             // packets, 1..256
  std::string ipv4;                // dotted quad; "" = 198.19.<mac[4]>.<mac[5]>
  uint16_t udp_port = 47600;       // 1..65535
  std::string mac;                 // aa:bb:cc:dd:ee:ff (unicast); "" = the device's own MAC
  std::string zero_copy = "auto";  // "auto" (off on net_memif) | "on" | "off" (lower case)
  uint32_t zero_copy_min_bytes = 1024;  // bytes; segments this long go zero copy; 0 = off
  uint32_t link_wait_ms = 5000;    // ms a net_memif client's fi_domain waits for its link
  bool arp_answer = true;          // answer ARP requests for ipv4
  uint32_t arp_timeout_ms = 1000;  // ms, 10..60000: longest MAC resolution by ARP
  std::vector<std::string> neighbours;  // static "IPv4 MAC" entries, used before ARP

  friend bool operator==(const DpdkConfig&, const DpdkConfig&) = default;
};

// [udp] kernel sockets (udp provider).
struct UdpConfig {
  std::string iface_ip = "127.0.0.1";      // dotted quad to bind
  uint16_t port = 0;                       // 0 = ephemeral
  uint32_t rx_burst = 32;                  // datagrams per progress call, 1..256
  uint64_t socket_buffer_bytes = 4194304;  // bytes, SO_RCVBUF/SO_SNDBUF, 4096..1073741824

  friend bool operator==(const UdpConfig&, const UdpConfig&) = default;
};

// [verbs] RDMA devices (verbs provider).
struct VerbsConfig {
  std::string device;              // "" = every device with an active port
  uint16_t port = 1;               // 1..255
  std::string gid_index = "auto";  // "auto" or "0".."255"
  uint32_t tx_depth = 512;         // work requests, 16..32768
  uint32_t rx_depth = 512;         // work requests, 16..32768
  uint32_t inline_bytes = 128;     // bytes, 0..1024
  uint32_t rnr_retry = 7;          // RC receiver-not-ready retries, 0..7 (7: no limit)

  friend bool operator==(const VerbsConfig&, const VerbsConfig&) = default;
};

// [transport] reliability protocol (every provider).
struct TransportConfig {
  uint32_t rto_min_us = 1000;                  // us, 1..10000000
  uint32_t rto_max_us = 100000;                // us, 1..60000000
  uint32_t rto_initial_us = 1000;              // us, 1..60000000
  uint32_t window_pkts = 256;                  // packets in flight per peer, power of two 8..4096
  uint32_t reorder_window_pkts = 1024;         // packets, power of two 8..4096, >= window_pkts
  uint32_t ack_coalesce_pkts = 64;             // packets, 1..4096 and <= window_pkts
  uint32_t ack_coalesce_msgs = 16;             // messages, 1..4096
  uint32_t bundle_max_bytes = 1024;            // bytes, 0..65535 (0 = no bundling)
  uint32_t ack_delay_us = 20;                  // us, 0..1000000
  uint32_t peer_timeout_ms = 10000;            // ms, 100..3600000
  uint32_t assist_interval_us = 1000;          // us, 0..1000000 (0 = no liveness assist)
  uint32_t linger_ms = 1000;                   // ms, 0..60000: longest close-time linger
  uint32_t connect_timeout_ms = 5000;          // ms, 100..600000: FI_EP_MSG handshake answers
  uint64_t max_unexpected_bytes = 67108864;    // bytes per endpoint, 65536..2^34
  std::string congestion_control = "swift";    // "swift" | "none"
  uint32_t cc_target_us = 100;                 // us, 1..1000000
  std::string checksum = "auto";               // "auto" | "on" | "off": CRC-32C on packets sent
  std::string clock = "auto";                  // "auto" | "tsc" | "monotonic"

  friend bool operator==(const TransportConfig&, const TransportConfig&) = default;
};

// [fault] fault injection (every provider; testing). Probabilities are in 0..1.
struct FaultConfig {
  double drop = 0.0;
  double dup = 0.0;
  double reorder = 0.0;
  double corrupt = 0.0;
  uint64_t seed = 1;  // 0..2^63-1
  uint32_t period_ms = 0;  // ms, 0..3600000; 0 = faults all the time

  friend bool operator==(const FaultConfig&, const FaultConfig&) = default;
};

// [stats] observability (every provider).
// [progress] automatic progress (every provider).
struct ProgressConfig {
  std::string cores;      // "" or a CPU list: "1", "2-3,6"
  uint32_t idle_us = 200;  // us, 0..1000000

  friend bool operator==(const ProgressConfig&, const ProgressConfig&) = default;
};

// The CPUs of a list such as "0,2-3" (validated by the loader: Check::CpuList), in order;
// empty for "" or a malformed list.
std::vector<int> parse_cpu_list(const std::string& list);

struct StatsConfig {
  bool socket = true;  // serve counters on /run/pollfab/stats/<pid>.sock (pollfab info --stats)

  friend bool operator==(const StatsConfig&, const StatsConfig&) = default;
};

struct Config {
  EalConfig eal;
  DpdkConfig dpdk;
  UdpConfig udp;
  VerbsConfig verbs;
  TransportConfig transport;
  FaultConfig fault;
  ProgressConfig progress;
  StatsConfig stats;
  std::string source = "defaults";  // path of the file loaded, or "defaults"

  friend bool operator==(const Config&, const Config&) = default;
};

}  // namespace pollfab::config
