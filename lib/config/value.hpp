// Internal to lib/config: untyped values, their validation, and the binding of schema rows to
// Config fields. Not part of the public API (use loader.hpp).
//
// Keys are addressed by their index in schema(). Reasons returned by these functions are
// message tails such as "must be between 576 and 9000, got 100"; the loader prefixes them with
// the file or variable and the key. Thread-safety: all functions are reentrant.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lib/config/config.hpp"
#include "lib/config/schema.hpp"

namespace pollfab::config::detail {

// One value of a key: the alternative matches KeyInfo::type (Int keys hold int64_t).
using Value = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;

// Extra validation rule of a key (column Check of schema_keys.inc).
enum class Check {
  None,
  Pow2,         // Int: power of two
  AutoOnOff,    // String: auto | on | off (stored lower case)
  CongestionControl,  // String: swift | none (stored lower case)
  LogLevel,     // String: DPDK log level name (stored lower case)
  Lcores,       // String: "" or an EAL --lcores list
  FilePrefix,   // String: "" or [A-Za-z0-9_.-]+
  Bdf,          // StringList: [dddd:]bb:dd.f[,devargs]
  Vdev,         // StringList: <driver>[,key=value...]
  Ipv4,         // String: dotted quad
  Ipv4OrEmpty,  // String: "" or dotted quad
  MacOrEmpty,   // String: "" or unicast aa:bb:cc:dd:ee:ff
  Neighbour,    // StringList: "IPv4 MAC" (dotted quad, space, unicast MAC)
  CpuList,      // String: "" or CPUs and ranges, comma-separated (0,2-3)
  GidIndex,     // String: auto or a decimal GID table index 0..255
  ClockSource,  // String: auto | tsc | monotonic (stored lower case)
};

constexpr size_t kNoKey = SIZE_MAX;

// Index of k in schema() (k may be a copy), or kNoKey.
size_t index_of(const KeyInfo& k) noexcept;
Check check_of(size_t idx) noexcept;

// Validates v for key idx against range and rule; canonicalizes enumerations to lower case.
// Returns "" if valid, else the reason.
std::string validate(size_t idx, Value& v);

// Parses the text of an environment variable for key idx. Bool: 0/1/true/false/yes/no/on/off
// (any case). Int: decimal. Double: decimal or exponent form. String: verbatim. StringList:
// comma-separated, items trimmed, empty items dropped; a token of the form key=value that does
// not start with '-' continues the previous item (so "net_tap0,iface=a,net_tap1,iface=b" is two
// vdevs). The TOML array form "[...]" is handled by the loader. Returns "" or the reason; the
// value is not yet validated.
std::string parse_text(size_t idx, std::string_view text, Value& out);

// Splits a StringList environment value as described above.
std::vector<std::string> split_list(std::string_view text);

void store(Config& c, size_t idx, const Value& v);
Value fetch(const Config& c, size_t idx);

// The value as a TOML literal: true, 1500, 0.25, "text", ["a", "b"].
std::string literal(const Value& v);

// The allowed range for comments: "576..9000", "power of two 64..16384", "0..1", or "".
std::string range_text(size_t idx);

// A violated relation between two keys. The loader blames the key set last and quotes the
// other one; a_reason is the reason when blaming a, b_reason when blaming b.
struct CrossError {
  size_t a;
  size_t b;
  std::string a_reason;
  std::string b_reason;
};
std::vector<CrossError> cross_check(const Config& c);

}  // namespace pollfab::config::detail
