#include "apps/common/sizes.hpp"

#include <cctype>

namespace pollfab::apps {

size_t parse_size(const std::string& s) {
  size_t mult = 1;
  std::string n = s;
  char c = n.empty() ? 0 : static_cast<char>(tolower(n.back()));
  if (c == 'k') mult = 1024; else if (c == 'm') mult = 1 << 20; else if (c == 'g') mult = 1 << 30;
  if (mult != 1) n.pop_back();
  return static_cast<size_t>(std::stoull(n)) * mult;
}

std::vector<size_t> parse_size_list(const std::string& spec) {
  std::vector<size_t> v;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    v.push_back(parse_size(spec.substr(pos, comma - pos)));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return v;
}

}  // namespace pollfab::apps
