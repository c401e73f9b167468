// Counter: one named statistic, as the layers report them for the stats socket and the
// close-time log (name is a static string: snake_case, unit in the name when it has one).
#pragma once
#include <cstdint>

namespace pollfab::util {

struct Counter {
  const char* name;
  uint64_t value;
};

}  // namespace pollfab::util
