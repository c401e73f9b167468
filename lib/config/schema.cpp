#include "lib/config/schema.hpp"

#include <array>

namespace pollfab::config {
namespace {

constexpr KeyInfo kKeys[] = {
#define PF_KEY(section, key, type, def, unit, min, max, check, help) \
  KeyInfo{#section, #key, Type::type, def, unit, help, double(min), double(max)},
#include "lib/config/schema_keys.inc"
#undef PF_KEY
};

constexpr std::string_view kSections[] = {"eal", "dpdk", "udp", "verbs", "transport", "fault", "progress",
                                           "stats"};

}  // namespace

std::span<const KeyInfo> schema() noexcept { return kKeys; }

std::span<const std::string_view> sections() noexcept { return kSections; }

const KeyInfo* find_key(std::string_view section, std::string_view key) noexcept {
  for (const KeyInfo& k : kKeys)
    if (section == k.section && key == k.key) return &k;
  return nullptr;
}

const char* type_name(Type t) noexcept {
  switch (t) {
    case Type::Bool: return "boolean";
    case Type::Int: return "integer";
    case Type::Double: return "float";
    case Type::String: return "string";
    case Type::StringList: return "array of strings";
  }
  return "?";
}

bool applies_to(std::string_view provider, const KeyInfo& k) noexcept {
  std::string_view s = k.section;
  if (s == "eal" || s == "dpdk") return provider == "dpdk";
  if (s == "udp") return provider == "udp";
  if (s == "verbs") return provider == "verbs";
  return true;
}

}  // namespace pollfab::config
