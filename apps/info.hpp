#pragma once
#include <string>
#include <vector>

#define POLLFAB_VERSION_STR POLLFAB_VERSION
#include "pollfab_build_config.h"

namespace pollfab::apps {
struct InfoArgs {
  std::string config;
  bool stats = false;      // --stats: counters of running processes instead
  bool json = false;       // --json: with --stats, the raw JSON documents (one per line)
  std::vector<long> pids;  // with --stats: these processes (default: every one with a socket)
};
int info_main(const InfoArgs& a);
// `pollfab info --stats` (apps/stats.cpp).
int stats_main(const InfoArgs& a);
}  // namespace pollfab::apps
