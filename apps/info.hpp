#pragma once
#include <string>

#define POLLFAB_VERSION_STR POLLFAB_VERSION
#include "pollfab_build_config.h"

namespace pollfab::apps {
struct InfoArgs {
  std::string config;
};
int info_main(const InfoArgs& a);
}  // namespace pollfab::apps
