// The resource counts of the first RDMA device as iproute2's `rdma resource show` gives them
// (pd, cq, qp, cm_id, mr, ctx, srq): what the device-resource tests compare before and after
// closing. Empty when the command fails.
#pragma once
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

namespace pollfab::ofitest {

inline std::map<std::string, long> device_counts() {
  std::map<std::string, long> out;
  FILE* f = popen("rdma resource show 2>/dev/null", "r");
  if (!f) return out;
  char line[512];
  if (fgets(line, sizeof line, f)) {  // "0: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0"
    std::istringstream in(line);
    std::string idx, dev, key;
    long n = 0;
    in >> idx >> dev;
    while (in >> key >> n) out[key] = n;
  }
  pclose(f);
  return out;
}

inline std::string counts_text(const std::map<std::string, long>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += k + " " + std::to_string(v) + " ";
  return s;
}

}  // namespace pollfab::ofitest
