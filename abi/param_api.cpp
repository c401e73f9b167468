// fi_param_define, fi_param_get, fi_getparams, fi_freeparams, fi_log_enabled, fi_log,
// fi_log_ready (fi_provider(3), fabric(3)).
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "abi/export.hpp"
#include "abi/providers.hpp"
#include "lib/core/params.hpp"
#include "lib/util/clock.hpp"
#include "lib/util/log.hpp"

using namespace pollfab;

namespace {
const char* prov_name(const fi_provider* p) { return p && p->name ? p->name : "core"; }
}  // namespace

PF_EXPORT int fi_param_define(const struct fi_provider* provider, const char* param_name,
                              enum fi_param_type type, const char* help_string_fmt, ...) {
  if (!help_string_fmt) return -FI_EINVAL;
  char help[1024];
  va_list ap;
  va_start(ap, help_string_fmt);
  vsnprintf(help, sizeof help, help_string_fmt, ap);
  va_end(ap);
  return core::param_define(provider ? provider->name : nullptr, param_name, type, help);
}

PF_EXPORT int fi_param_get(struct fi_provider* provider, const char* param_name, void* value) {
  return core::param_get(provider ? provider->name : nullptr, param_name, value);
}

PF_EXPORT int fi_getparams(struct fi_param** params, int* count) {
  abi::ensure_providers();
  return core::getparams(params, count);
}

PF_EXPORT void fi_freeparams(struct fi_param* params) { core::freeparams(params); }

PF_EXPORT int fi_log_enabled(const struct fi_provider* prov, enum fi_log_level level,
                             enum fi_log_subsys subsys) {
  return util::log_enabled(prov_name(prov), static_cast<util::LogLevel>(level),
                           static_cast<util::LogSubsys>(subsys));
}

PF_EXPORT int fi_log_ready(const struct fi_provider* prov, enum fi_log_level level,
                           enum fi_log_subsys subsys, uint64_t* showtime) {
  if (!fi_log_enabled(prov, level, subsys)) return 0;
  static const uint64_t interval_ms = [] {
    const char* v = getenv("FI_LOG_INTERVAL");
    return v ? strtoull(v, nullptr, 0) : 2000ull;
  }();
  uint64_t now_ms = util::monotonic_ns() / 1000000;
  if (showtime && now_ms < *showtime) return 0;
  if (showtime) *showtime = now_ms + interval_ms;
  return 1;
}

PF_EXPORT void fi_log(const struct fi_provider* prov, enum fi_log_level level,
                      enum fi_log_subsys subsys, const char* func, int line, const char* fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt ? fmt : "", ap);
  va_end(ap);
  util::log_write(prov_name(prov), static_cast<util::LogLevel>(level),
                  static_cast<util::LogSubsys>(subsys), func, line, msg);
}
