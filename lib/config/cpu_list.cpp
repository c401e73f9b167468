// parse_cpu_list (config.hpp): "0,2-3" -> {0, 2, 3}.
#include <charconv>

#include "lib/config/config.hpp"

namespace pollfab::config {

std::vector<int> parse_cpu_list(const std::string& list) {
  constexpr int kMaxCpu = 4095;
  std::vector<int> out;
  const char* p = list.data();
  const char* end = p + list.size();
  auto number = [&](int& v) {
    auto [q, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || q == p || v < 0 || v > kMaxCpu) return false;
    p = q;
    return true;
  };
  while (p < end) {
    int lo, hi;
    if (!number(lo)) return {};
    hi = lo;
    if (p < end && *p == '-') {
      ++p;
      if (!number(hi) || hi < lo) return {};
    }
    for (int c = lo; c <= hi; ++c) out.push_back(c);
    if (p == end) break;
    if (*p != ',' || ++p == end) return {};
  }
  return out;
}

}  // namespace pollfab::config
