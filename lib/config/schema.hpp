// The configuration schema: every key pollfab reads, with type, default, unit, range and help.
//
// The table (lib/config/schema_keys.inc) is the single list of keys: the loader validates files
// and environment variables against it, `pollfab info` prints it, and config/default.toml
// mirrors it. The typed values live in pollfab::config::Config (lib/config/config.hpp).
//
// Thread-safety: the schema is immutable static data; every function here is MT-safe.
#pragma once
#include <span>
#include <string_view>

namespace pollfab::config {

enum class Type { Bool, Int, Double, String, StringList };

struct KeyInfo {
  const char* section;       // TOML table, e.g. "dpdk"
  const char* key;           // key within the section, e.g. "mtu"
  Type type;
  const char* default_text;  // default as a TOML literal: 1500, "auto", [], 0.0, false
  const char* unit;          // "bytes", "packets", "us", "ms", "MiB", "probability", ... or ""
  const char* help;          // one line
  double min;                // inclusive bounds of Int and Double keys (0 for other types)
  double max;
};

// Every key, grouped by section in the order eal, dpdk, udp, transport, fault, stats.
std::span<const KeyInfo> schema() noexcept;

// The section names in schema order.
std::span<const std::string_view> sections() noexcept;

// The schema row of section.key, or nullptr.
const KeyInfo* find_key(std::string_view section, std::string_view key) noexcept;

// Name of a type for messages: "boolean", "integer", "float", "string", "array of strings".
const char* type_name(Type t) noexcept;

// True if the key is read by the named provider: sections eal and dpdk belong to "dpdk", udp to
// "udp", the others (transport, fault, stats) to every provider. Environment overrides are applied only
// for these keys (so FI_DPDK_UDP_PORT means dpdk.udp_port, not udp.port).
bool applies_to(std::string_view provider, const KeyInfo& k) noexcept;

}  // namespace pollfab::config
