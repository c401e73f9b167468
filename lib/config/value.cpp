#include "lib/config/value.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>

namespace pollfab::config::detail {
namespace {

// ---- binding of schema rows to Config fields ------------------------------------------------

using Ref = std::variant<bool*, uint16_t*, uint32_t*, uint64_t*, double*, std::string*,
                         std::vector<std::string>*>;

struct Binding {
  Check check;
  Ref (*field)(Config&);
};

constexpr Binding kBind[] = {
#define PF_KEY(section, key, type, def, unit, min, max, check, help) \
  Binding{Check::check, [](Config& c) -> Ref { return &c.section.key; }},
#include "lib/config/schema_keys.inc"
#undef PF_KEY
};

// The C++ field type must fit the schema type (Int keys: any unsigned integer, whose range
// must cover the schema's min..max: checked by the tests through store/fetch of both bounds).
template <Type T, class F>
constexpr bool field_fits() {
  if constexpr (T == Type::Bool) return std::is_same_v<F, bool>;
  if constexpr (T == Type::Int) return std::is_integral_v<F> && !std::is_same_v<F, bool>;
  if constexpr (T == Type::Double) return std::is_same_v<F, double>;
  if constexpr (T == Type::String) return std::is_same_v<F, std::string>;
  if constexpr (T == Type::StringList) return std::is_same_v<F, std::vector<std::string>>;
  return false;
}
#define PF_KEY(section, key, type, def, unit, min, max, check, help)                        \
  static_assert(field_fits<Type::type, decltype(Config{}.section.key)>(),                     \
                "Config::" #section "." #key " does not match its schema type");
#include "lib/config/schema_keys.inc"
#undef PF_KEY

// ---- helpers --------------------------------------------------------------------------------

constexpr std::string_view kAutoOnOff[] = {"auto", "on", "off"};
constexpr std::string_view kCongestionControl[] = {"swift", "none"};
constexpr std::string_view kClockSource[] = {"auto", "tsc", "monotonic"};
constexpr std::string_view kLogLevels[] = {"emergency", "alert",  "critical", "error",
                                           "warning",   "notice", "info",     "debug"};

int64_t bound(double d) {
  if (d >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (d <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return r;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum_(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
unsigned hex_val(char c) {
  return is_digit(c) ? unsigned(c - '0') : unsigned((c | 0x20) - 'a' + 10);
}
bool all_hex(std::string_view s, size_t n) {
  if (s.size() != n) return false;
  for (char c : s)
    if (!is_hex(c)) return false;
  return true;
}

std::string join(std::span<const std::string_view> names) {
  std::string r;
  for (auto n : names) {
    if (!r.empty()) r += ", ";
    r += n;
  }
  return r;
}

bool is_ipv4(std::string_view s) {
  int parts = 0;
  while (true) {
    size_t n = 0;
    unsigned v = 0;
    while (n < s.size() && is_digit(s[n]) && n < 4) v = v * 10 + unsigned(s[n++] - '0');
    if (n == 0 || n > 3 || v > 255 || (n > 1 && s[0] == '0')) return false;
    s.remove_prefix(n);
    if (++parts == 4) return s.empty();
    if (s.empty() || s.front() != '.') return false;
    s.remove_prefix(1);
  }
}

bool is_unicast_mac(std::string_view s) {
  if (s.size() != 17) return false;
  unsigned first = 0, any = 0;
  for (size_t i = 0; i < 6; ++i) {
    if (!all_hex(s.substr(i * 3, 2), 2)) return false;
    if (i < 5 && s[i * 3 + 2] != ':') return false;
    unsigned b = hex_val(s[i * 3]) << 4 | hex_val(s[i * 3 + 1]);
    if (i == 0) first = b;
    any |= b;
  }
  return (first & 1) == 0 && any != 0;
}

bool is_bdf(std::string_view s) {
  std::string_view a = s.substr(0, s.find(','));
  if (a.size() == 12) {  // dddd:bb:dd.f
    if (!all_hex(a.substr(0, 4), 4) || a[4] != ':') return false;
    a.remove_prefix(5);
  }
  if (a.size() != 7 || !all_hex(a.substr(0, 2), 2) || a[2] != ':' || !all_hex(a.substr(3, 2), 2) ||
      a[5] != '.' || a[6] < '0' || a[6] > '7')
    return false;
  return (hex_val(a[3]) << 4 | hex_val(a[4])) <= 0x1f;
}

bool is_vdev(std::string_view s) {
  std::string_view name = s.substr(0, s.find(','));
  if (name.empty()) return false;
  for (char c : name)
    if (!is_alnum_(c)) return false;
  return true;
}

bool is_lcores(std::string_view s) {
  if (s.empty()) return true;
  if (!is_digit(s.front()) && s.front() != '(') return false;
  int depth = 0;
  for (char c : s) {
    if (c == '(') ++depth;
    else if (c == ')') --depth;
    else if (!is_digit(c) && c != ',' && c != '-' && c != '@') return false;
    if (depth < 0 || depth > 1) return false;
  }
  return depth == 0;
}

bool is_file_prefix(std::string_view s) {
  if (s.size() > 64) return false;
  for (char c : s)
    if (!is_alnum_(c) && c != '-' && c != '.') return false;
  return true;
}

std::string one_of(std::string& s, std::span<const std::string_view> names) {
  std::string l = lower(s);
  for (auto n : names)
    if (l == n) {
      s = l;
      return {};
    }
  return fmt::format("must be one of {}, got '{}'", join(names), s);
}

std::string int_reason(size_t idx, std::string_view got) {
  const KeyInfo& k = schema()[idx];
  return fmt::format("must be {}between {} and {}, got {}",
                     kBind[idx].check == Check::Pow2 ? "a power of two " : "", bound(k.min),
                     bound(k.max), got);
}

bool is_gid_index(std::string_view s) {
  if (s.empty() || s.size() > 3) return false;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + unsigned(c - '0');
  }
  return v <= 255;
}

std::string check_string(Check ch, std::string& s) {
  switch (ch) {
    case Check::AutoOnOff: return one_of(s, kAutoOnOff);
    case Check::CongestionControl: return one_of(s, kCongestionControl);
    case Check::ClockSource: return one_of(s, kClockSource);
    case Check::LogLevel: return one_of(s, kLogLevels);
    case Check::Lcores:
      if (is_lcores(s)) return {};
      return fmt::format("must be an EAL lcore list of CPUs, ranges, (groups) and @ "
                         "(e.g. 0-3 or 0@1,(2-3)@4), got '{}'", s);
    case Check::CpuList:
      if (s.empty() || !parse_cpu_list(s).empty()) return {};
      return fmt::format("must be \"\" or a list of CPUs and ranges (e.g. 1 or 2-3,6), got '{}'", s);
    case Check::FilePrefix:
      if (is_file_prefix(s)) return {};
      return fmt::format("must be at most 64 letters, digits, '_', '-' or '.', got '{}'", s);
    case Check::Ipv4:
      if (is_ipv4(s)) return {};
      return fmt::format("must be a dotted-quad IPv4 address, got '{}'", s);
    case Check::Ipv4OrEmpty:
      if (s.empty() || is_ipv4(s)) return {};
      return fmt::format("must be \"\" or a dotted-quad IPv4 address, got '{}'", s);
    case Check::MacOrEmpty:
      if (s.empty() || is_unicast_mac(s)) return {};
      return fmt::format("must be \"\" or a unicast MAC address aa:bb:cc:dd:ee:ff, got '{}'", s);
    case Check::GidIndex:
      if (s == "auto" || is_gid_index(s)) return {};
      return fmt::format("must be auto or a GID table index 0..255, got '{}'", s);
    default: return {};
  }
}

std::string check_item(Check ch, size_t i, const std::string& s) {
  if (s.empty()) return fmt::format("item {} must not be empty", i + 1);
  if (ch == Check::Bdf && !is_bdf(s))
    return fmt::format("item {} must be a PCI address [dddd:]bb:dd.f[,devargs], got '{}'", i + 1, s);
  if (ch == Check::Vdev && !is_vdev(s))
    return fmt::format("item {} must be <driver>[,key=value...] (e.g. net_tap0,iface=pftap0), "
                       "got '{}'", i + 1, s);
  if (ch == Check::Neighbour) {
    size_t sp = s.find(' ');
    if (sp == std::string::npos || !is_ipv4(s.substr(0, sp)) || !is_unicast_mac(s.substr(sp + 1)))
      return fmt::format("item {} must be \"IPv4 MAC\" (e.g. \"198.18.0.2 02:50:46:00:00:0b\"), "
                         "got '{}'", i + 1, s);
  }
  return {};
}

}  // namespace

// ---- public (internal) API ------------------------------------------------------------------

size_t index_of(const KeyInfo& k) noexcept {
  auto all = schema();
  if (&k >= all.data() && &k < all.data() + all.size()) return size_t(&k - all.data());
  if (const KeyInfo* p = find_key(k.section ? k.section : "", k.key ? k.key : ""))
    return size_t(p - all.data());
  return kNoKey;
}

Check check_of(size_t idx) noexcept { return kBind[idx].check; }

std::string validate(size_t idx, Value& v) {
  const KeyInfo& k = schema()[idx];
  Check ch = kBind[idx].check;
  switch (k.type) {
    case Type::Bool: return {};
    case Type::Int: {
      int64_t x = std::get<int64_t>(v);
      bool ok = x >= bound(k.min) && x <= bound(k.max);
      if (ch == Check::Pow2 && (x & (x - 1)) != 0) ok = false;
      return ok ? std::string() : int_reason(idx, fmt::format("{}", x));
    }
    case Type::Double: {
      double x = std::get<double>(v);
      if (x >= k.min && x <= k.max) return {};
      return fmt::format("must be {}between {} and {}, got {}",
                         std::strcmp(k.unit, "probability") == 0 ? "a probability " : "", k.min,
                         k.max, x);
    }
    case Type::String: return check_string(ch, std::get<std::string>(v));
    case Type::StringList: {
      auto& list = std::get<std::vector<std::string>>(v);
      for (size_t i = 0; i < list.size(); ++i)
        if (std::string r = check_item(ch, i, list[i]); !r.empty()) return r;
      return {};
    }
  }
  return {};
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  if (trim(text).empty()) return out;
  while (true) {
    size_t comma = text.find(',');
    std::string_view tok = trim(text.substr(0, comma));
    bool cont = !out.empty() && tok.find('=') != std::string_view::npos && tok.front() != '-';
    if (cont)
      (out.back() += ',') += tok;
    else if (!tok.empty())
      out.emplace_back(tok);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::string parse_text(size_t idx, std::string_view text, Value& out) {
  const KeyInfo& k = schema()[idx];
  std::string_view t = trim(text);
  switch (k.type) {
    case Type::Bool: {
      std::string l = lower(t);
      if (l == "1" || l == "true" || l == "yes" || l == "on") {
        out = true;
        return {};
      }
      if (l == "0" || l == "false" || l == "no" || l == "off") {
        out = false;
        return {};
      }
      return fmt::format("must be a boolean (0/1, true/false, yes/no, on/off), got '{}'", text);
    }
    case Type::Int: {
      std::string_view d = (!t.empty() && t.front() == '+') ? t.substr(1) : t;
      int64_t x = 0;
      auto [p, ec] = std::from_chars(d.data(), d.data() + d.size(), x);
      if (ec == std::errc::result_out_of_range && p == d.data() + d.size())
        return int_reason(idx, t);
      if (ec != std::errc() || p != d.data() + d.size() || d.empty())
        return fmt::format("must be an integer, got '{}'", text);
      out = x;
      return {};
    }
    case Type::Double: {
      std::string_view d = (!t.empty() && t.front() == '+') ? t.substr(1) : t;
      double x = 0;
      auto [p, ec] = std::from_chars(d.data(), d.data() + d.size(), x);
      if (ec != std::errc() || p != d.data() + d.size() || d.empty())
        return fmt::format("must be a number, got '{}'", text);
      out = x;
      return {};
    }
    case Type::String: out = std::string(text); return {};
    case Type::StringList: out = split_list(text); return {};
  }
  return "unsupported type";
}

void store(Config& c, size_t idx, const Value& v) {
  std::visit(
      [&](auto* p) {
        using T = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<T, bool>)
          *p = std::get<bool>(v);
        else if constexpr (std::is_integral_v<T>)
          *p = static_cast<T>(std::get<int64_t>(v));
        else
          *p = std::get<T>(v);
      },
      kBind[idx].field(c));
}

Value fetch(const Config& c, size_t idx) {
  return std::visit(
      [](auto* p) -> Value {
        using T = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<T, bool>)
          return *p;
        else if constexpr (std::is_integral_v<T>)
          return static_cast<int64_t>(*p);
        else
          return *p;
      },
      kBind[idx].field(const_cast<Config&>(c)));  // read only
}

namespace {
std::string quote(std::string_view s) {
  std::string r = "\"";
  for (char c : s) {
    switch (c) {
      case '"': r += "\\\""; break;
      case '\\': r += "\\\\"; break;
      case '\b': r += "\\b"; break;
      case '\t': r += "\\t"; break;
      case '\n': r += "\\n"; break;
      case '\f': r += "\\f"; break;
      case '\r': r += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
          r += fmt::format("\\u{:04X}", static_cast<unsigned char>(c));
        else
          r += c;
    }
  }
  return r += '"';
}
}  // namespace

std::string literal(const Value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return fmt::format("{}", x);
        } else if constexpr (std::is_same_v<T, double>) {
          if (x != x) return "nan";
          if (x == std::numeric_limits<double>::infinity()) return "inf";
          if (x == -std::numeric_limits<double>::infinity()) return "-inf";
          std::string s = fmt::format("{}", x);
          if (s.find_first_of(".eE") == std::string::npos) s += ".0";
          return s;
        } else if constexpr (std::is_same_v<T, std::string>) {
          return quote(x);
        } else {
          std::string r = "[";
          for (size_t i = 0; i < x.size(); ++i) r += (i ? ", " : "") + quote(x[i]);
          return r += "]";
        }
      },
      v);
}

std::string range_text(size_t idx) {
  const KeyInfo& k = schema()[idx];
  if (k.type == Type::Int)
    return fmt::format("{}{}..{}", kBind[idx].check == Check::Pow2 ? "power of two " : "",
                       bound(k.min), bound(k.max));
  if (k.type == Type::Double) return fmt::format("{}..{}", k.min, k.max);
  return {};
}

std::vector<CrossError> cross_check(const Config& c) {
  auto idx = [](const char* s, const char* k) { return size_t(find_key(s, k) - schema().data()); };
  auto name = [](size_t i) { return fmt::format("{}.{}", schema()[i].section, schema()[i].key); };
  std::vector<CrossError> errs;
  auto le = [&](size_t a, uint64_t va, size_t b, uint64_t vb) {
    if (va <= vb) return;
    errs.push_back({a, b, fmt::format("must not exceed '{}' ({}), got {}", name(b), vb, va),
                    fmt::format("must not be below '{}' ({}), got {}", name(a), va, vb)});
  };
  const auto& t = c.transport;
  le(idx("transport", "rto_min_us"), t.rto_min_us, idx("transport", "rto_initial_us"),
     t.rto_initial_us);
  le(idx("transport", "rto_initial_us"), t.rto_initial_us, idx("transport", "rto_max_us"),
     t.rto_max_us);
  le(idx("transport", "rto_min_us"), t.rto_min_us, idx("transport", "rto_max_us"), t.rto_max_us);
  le(idx("transport", "ack_coalesce_pkts"), t.ack_coalesce_pkts, idx("transport", "window_pkts"),
     t.window_pkts);
  le(idx("transport", "window_pkts"), t.window_pkts, idx("transport", "reorder_window_pkts"),
     t.reorder_window_pkts);
  // Senders never probe: between two backed-off retransmissions (up to rto_max apart) a live
  // peer is silent, so a shorter peer timeout would declare it dead.
  if (uint64_t(t.peer_timeout_ms) * 1000 < 2 * uint64_t(t.rto_max_us)) {
    size_t a = idx("transport", "peer_timeout_ms"), b = idx("transport", "rto_max_us");
    errs.push_back({a, b,
                    fmt::format("must be at least twice '{}' ({} us), got {} ms: a live peer is "
                                "silent between two backed-off retransmissions",
                                name(b), t.rto_max_us, t.peer_timeout_ms),
                    fmt::format("must be at most half '{}' ({} ms), got {} us: a live peer is "
                                "silent between two backed-off retransmissions",
                                name(a), t.peer_timeout_ms, t.rto_max_us)});
  }

  size_t vdevs = idx("dpdk", "vdevs");
  if (!c.dpdk.mac.empty() && c.dpdk.vdevs.size() > 1) {
    std::string r = fmt::format(
        "a fixed MAC ({}) would be given to all {} vdevs; set mac= in each 'dpdk.vdevs' entry",
        c.dpdk.mac, c.dpdk.vdevs.size());
    errs.push_back({idx("dpdk", "mac"), vdevs, r, r});
  }
  size_t ports = c.dpdk.vdevs.size() + c.eal.pci_allow.size();
  if (!c.dpdk.ipv4.empty() && ports > 1) {
    std::string r = fmt::format(
        "a fixed IPv4 address ({}) would be shared by all {} ports; leave 'dpdk.ipv4' empty",
        c.dpdk.ipv4, ports);
    errs.push_back({idx("dpdk", "ipv4"), vdevs, r, r});
  }
  return errs;
}

}  // namespace pollfab::config::detail
