// Loading the configuration: built-in defaults, then a TOML file, then environment variables.
//
//   auto r = pollfab::config::load("dpdk");
//   if (!r.config) { log(r.error); return -FI_EINVAL; }
//   const pollfab::config::Config cfg = std::move(*r.config);
//
// File: explicit_path if given (non-empty), else $POLLFAB_CONFIG if set and non-empty, else none
// (defaults only). Every key is optional; the schema (lib/config/schema.hpp) lists them.
// Environment: for each key the provider reads (applies_to()), the variable env_name() overrides
// the file, e.g. FI_DPDK_MTU, FI_DPDK_FAULT_DROP, FI_UDP_PORT. Values: booleans
// 0/1/true/false/yes/no/on/off (any case); integers in decimal; floats as decimal or exponent;
// strings verbatim; string lists comma-separated (a key=value token continues the previous
// item, so FI_DPDK_VDEVS=net_tap0,iface=a,net_tap1,iface=b is two vdevs) or a TOML array
// literal such as ["a,b", "c"]. Unrecognised FI_<PROV>_* variables are logged as warnings.
//
// Thread-safety: load() is reentrant (no shared state; it reads the environment, so it must not
// race with setenv()). The returned Config is a value, immutable after load.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "lib/config/config.hpp"
#include "lib/config/schema.hpp"

namespace pollfab::config {

struct LoadResult {
  std::optional<Config> config;  // set on success
  std::string error;             // set on failure: one line per problem, see load()
};

// Loads and validates the configuration for `provider` ("dpdk", "udp", ...). Never throws.
// On failure config is empty and error holds one line per problem, each naming where the value
// came from, the key and the reason:
//   /path/x.toml: cannot open: No such file or directory
//   /path/x.toml:2:8: parse error: <toml++ description>
//   /path/x.toml:3:1: unknown key 'dpdk.mtuu' (did you mean 'dpdk.mtu'?)
//   /path/x.toml:1:1: unknown section 'dpdkk' (known: eal, dpdk, udp, transport, fault)
//   /path/x.toml:4:7: key 'dpdk.mtu': expected integer, got string
//   /path/x.toml:5:15: key 'transport.window_pkts': must be a power of two between 8 and 4096, got 100
//   FI_DPDK_FAULT_DROP: must be a probability between 0 and 1, got 2
// Relations between keys (rto_min_us <= rto_initial_us <= rto_max_us, ack_coalesce_pkts <=
// window_pkts <= reorder_window_pkts, a fixed dpdk.mac or dpdk.ipv4 only with a single port)
// are checked last and blame the key set last. On success, config->source is the file's path or "defaults".
LoadResult load(std::string_view provider, const char* explicit_path = nullptr);

// The environment variable that overrides key k for provider: "FI_" + upper(provider) + "_" +
// (section == provider ? upper(key) : upper(section) + "_" + upper(key)).
std::string env_name(std::string_view provider, const KeyInfo& k);

// The effective configuration as TOML that load() accepts: a header naming c.source, then per
// section a table whose keys are each preceded by one comment line (help, unit, range).
std::string to_toml(const Config& c);

// The value of key k in c as a TOML literal: 1500, true, 0.5, "auto", ["net_tap0,iface=pftap0"].
// "" if k is not a schema key.
std::string value_text(const Config& c, const KeyInfo& k);

}  // namespace pollfab::config
