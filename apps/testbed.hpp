#pragma once
#include <string>
#include <vector>

namespace pollfab::apps {

struct TestbedArgs {
  std::string action;  // up | down | status | addr | exec
  std::string link = "tap";
  std::string host;
  std::vector<std::string> cmd;
};
int testbed_main(const TestbedArgs& a);

}  // namespace pollfab::apps
