// Logging primitives with libfabric's controls and line format (libfabric src/log.c):
//   FI_LOG_LEVEL=warn|trace|info|debug (default warn), FI_LOG_PROV=name|^name,
//   FI_LOG_SUBSYS=core|fabric|domain|ep_ctrl|ep_data|av|cq|eq|mr|cntr|^name.
// Lines go to stderr as  libfabric:<pid>:<unix time>:<prov>:<subsys>:<func>():<line><<level>> msg
//
// Thread-safety: all functions are MT-safe (settings are read once, lines written whole).
// The numeric values of LogLevel and LogSubsys equal OFI's enum fi_log_level / fi_log_subsys.
#pragma once
#include <fmt/format.h>

#include <string_view>

namespace pollfab::util {

enum class LogLevel : int { Warn = 0, Trace = 1, Info = 2, Debug = 3 };
enum class LogSubsys : int { Core = 0, Fabric, Domain, EpCtrl, EpData, Av, Cq, Eq, Mr, Cntr, Count };

const char* log_level_name(LogLevel l) noexcept;
const char* log_subsys_name(LogSubsys s) noexcept;

// True if a line of this provider, level and subsystem would be written.
bool log_enabled(std::string_view prov, LogLevel level, LogSubsys subsys) noexcept;

// Writes one line (a newline is appended unless msg ends with one).
void log_write(std::string_view prov, LogLevel level, LogSubsys subsys, const char* func, int line,
               std::string_view msg) noexcept;

template <class... Args>
[[gnu::cold, gnu::noinline]] void log_fmt(std::string_view prov, LogLevel level, LogSubsys subsys,
                                          const char* func, int line,
                                          fmt::format_string<Args...> f, Args&&... args) noexcept {
  try {
    log_write(prov, level, subsys, func, line, fmt::format(f, std::forward<Args>(args)...));
  } catch (...) {
  }
}

// Re-reads FI_LOG_* (tests only; the settings are otherwise read once).
void log_reload_env() noexcept;

}  // namespace pollfab::util

#define PF_LOG(prov, level, subsys, ...)                                                   \
  do {                                                                                     \
    if (::pollfab::util::log_enabled(prov, ::pollfab::util::LogLevel::level,               \
                                     ::pollfab::util::LogSubsys::subsys))                  \
      ::pollfab::util::log_fmt(prov, ::pollfab::util::LogLevel::level,                     \
                               ::pollfab::util::LogSubsys::subsys, __func__, __LINE__,     \
                               __VA_ARGS__);                                               \
  } while (0)
