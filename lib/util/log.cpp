#include "lib/util/log.hpp"

#include <strings.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>

namespace pollfab::util {
namespace {

constexpr const char* kLevelNames[] = {"warn", "trace", "info", "debug"};
constexpr const char* kSubsysNames[] = {"core", "fabric", "domain", "ep_ctrl", "ep_data",
                                        "av",   "cq",     "eq",     "mr",      "cntr"};

struct Settings {
  int level = 0;              // highest enabled level
  bool level_off = false;     // FI_LOG_LEVEL unknown value disables nothing; kept for clarity
  std::string prov;           // empty = all
  bool prov_exclude = false;
  unsigned subsys_mask = ~0u;
};

Settings parse_env() {
  Settings s;
  if (const char* lv = getenv("FI_LOG_LEVEL")) {
    for (int i = 0; i < 4; ++i)
      if (strcasecmp(lv, kLevelNames[i]) == 0) s.level = i;
  }
  if (const char* p = getenv("FI_LOG_PROV"); p && *p) {
    if (*p == '^') { s.prov_exclude = true; ++p; }
    s.prov = p;
  }
  if (const char* ss = getenv("FI_LOG_SUBSYS"); ss && *ss) {
    bool excl = (*ss == '^');
    if (excl) ++ss;
    unsigned mask = 0;
    for (unsigned i = 0; i < static_cast<unsigned>(LogSubsys::Count); ++i)
      if (strcasecmp(ss, kSubsysNames[i]) == 0) mask |= 1u << i;
    s.subsys_mask = excl ? ~mask : mask;
  }
  return s;
}

std::mutex g_write_mu;
Settings g_settings = parse_env();

}  // namespace

const char* log_level_name(LogLevel l) noexcept {
  int i = static_cast<int>(l);
  return (i >= 0 && i < 4) ? kLevelNames[i] : "unknown";
}
const char* log_subsys_name(LogSubsys s) noexcept {
  int i = static_cast<int>(s);
  return (i >= 0 && i < static_cast<int>(LogSubsys::Count)) ? kSubsysNames[i] : "unknown";
}

bool log_enabled(std::string_view prov, LogLevel level, LogSubsys subsys) noexcept {
  const Settings& s = g_settings;
  if (static_cast<int>(level) > s.level) return false;
  unsigned si = static_cast<unsigned>(subsys);
  if (si < 32 && !(s.subsys_mask & (1u << si))) return false;
  if (!s.prov.empty()) {
    bool match = prov == s.prov;
    if (match == s.prov_exclude) return false;
  }
  return true;
}

void log_write(std::string_view prov, LogLevel level, LogSubsys subsys, const char* func, int line,
               std::string_view msg) noexcept {
  bool nl = !msg.empty() && msg.back() == '\n';
  std::lock_guard<std::mutex> g(g_write_mu);
  fprintf(stderr, "libfabric:%d:%ld::%.*s:%s:%s():%d<%s> %.*s%s", static_cast<int>(getpid()),
          static_cast<long>(time(nullptr)), static_cast<int>(prov.size()), prov.data(),
          log_subsys_name(subsys), func ? func : "", line, log_level_name(level),
          static_cast<int>(msg.size()), msg.data(), nl ? "" : "\n");
}

void log_reload_env() noexcept { g_settings = parse_env(); }

}  // namespace pollfab::util
