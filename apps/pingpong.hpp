#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace pollfab::apps {

struct PingpongArgs {
  std::string server;           // empty: server mode; "HOST" or "HOST:SERVICE" (client)
  std::string service;          // fabric service (UDP port): server -P, client HOST:SERVICE
  std::string provider;
  std::string domain;
  std::string ep_type = "rdm";
  std::string sizes;            // "" = powers of two 8 B .. 1 MiB; "all"; or a list
  uint64_t iterations = 1000;
  bool check = false;
  bool bw = false;
  bool bw_only = false;         // the streaming run alone (no ping-pong phase); implies bw
  uint32_t window = 64;
  uint16_t port = 47593;        // fi_pingpong uses 47592
  int timeout_ms = 10000;
  bool json = false;
  bool cpu = false;             // client also prints both sides' CPU seconds per 10k round trips
  bool lat = false;             // client also prints the median and 99th percentile half round trip
  std::string lat_log;          // client, with lat: every half round trip (us) to this file
  uint32_t period_ms = 0;       // client, with bw_only: goodput per period of this many ms
  uint32_t period_guard_ms = 20;  // ... counting windows that start this long into a period
  std::string progress = "manual";  // fi_getinfo hint data_progress: manual | auto
  std::string wait = "none";        // CQ wait_obj: none (poll) | fd (fi_trywait + poll(2) on
                                    // FI_GETWAIT) | unspec | yield (fi_cq_sread)
  size_t max_size = 1u << 20;   // internal: largest size asked for
};

void add_pingpong_options(CLI::App& app, PingpongArgs& a);
int pingpong_main(const PingpongArgs& a);

}  // namespace pollfab::apps
