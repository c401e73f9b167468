// Message sizes on the command line of pollfab's tools: "64", "4k", "1m", "1g" (binary
// multiples), and comma-separated lists of them.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace pollfab::apps {

// Throws std::invalid_argument / std::out_of_range (std::stoull's) for text that is not a size.
size_t parse_size(const std::string& s);
// "64,4k,1m" -> {64, 4096, 1048576}; same exceptions.
std::vector<size_t> parse_size_list(const std::string& spec);

}  // namespace pollfab::apps
