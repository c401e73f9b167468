#pragma once
#include <string>
#include <vector>

namespace pollfab::apps {
struct RunArgs {
  std::string config;
  std::vector<std::string> cmd;
};
int run_main(const RunArgs& a);
}  // namespace pollfab::apps
