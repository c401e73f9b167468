// The providers this build contains, best first (fi_getinfo orders results this way).
#pragma once
#include <vector>

#include "lib/core/provider.hpp"

namespace pollfab::providers {
std::vector<core::Provider*> all();
}
