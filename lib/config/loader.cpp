#include "lib/config/loader.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <system_error>
#include <toml++/toml.h>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lib/config/value.hpp"
#include "lib/util/log.hpp"

extern char** environ;

namespace pollfab::config {
namespace {

using detail::Value;

enum Rank { kDefault = 0, kFile = 1, kEnv = 2 };

// What load() accumulates: the values, where each came from, and the problems found.
struct State {
  Config cfg;
  std::vector<Rank> rank = std::vector<Rank>(schema().size(), kDefault);
  std::vector<std::string> origin = std::vector<std::string>(schema().size(), "defaults");
  std::vector<std::string> errors;
};

std::string upper(std::string_view s) {
  std::string r(s);
  for (char& c : r)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return r;
}

std::string key_name(const KeyInfo& k) { return fmt::format("{}.{}", k.section, k.key); }

std::string where(const std::string& path, const toml::source_region& r) {
  if (r.begin.line == 0) return path;
  return fmt::format("{}:{}:{}", path, r.begin.line, r.begin.column);
}

const char* node_type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    default: return "nothing";
  }
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diag = up;
    }
  }
  return row[b.size()];
}

// " (did you mean 'dpdk.mtu'?)", " (it belongs in [transport])" or "".
std::string suggest_key(std::string_view section, std::string_view key) {
  for (const KeyInfo& k : schema())
    if (key == k.key && section != k.section) return fmt::format(" (it belongs in [{}])", k.section);
  const KeyInfo* best = nullptr;
  size_t best_d = 3;
  for (const KeyInfo& k : schema()) {
    if (section != k.section) continue;
    size_t d = edit_distance(key, k.key);
    if (d < best_d) best = &k, best_d = d;
  }
  return best ? fmt::format(" (did you mean '{}'?)", key_name(*best)) : std::string();
}

bool is_section(std::string_view s) {
  return std::find(sections().begin(), sections().end(), s) != sections().end();
}

std::string known_sections() {
  std::string r;
  for (auto s : sections()) r += fmt::format("{}{}", r.empty() ? "" : ", ", s);
  return r;
}

// Converts a TOML node to the key's value type. Returns "" or the reason; *at is set to the
// region of the offending node (an array element) when it is not the node itself.
std::string from_node(const KeyInfo& k, const toml::node& n, Value& out,
                      const toml::source_region** at) {
  auto wrong = [&] {
    return fmt::format("expected {}, got {}", type_name(k.type), node_type_name(n.type()));
  };
  switch (k.type) {
    case Type::Bool:
      if (auto* b = n.as_boolean()) return out = b->get(), std::string();
      return wrong();
    case Type::Int:
      if (auto* i = n.as_integer()) return out = int64_t{i->get()}, std::string();
      return wrong();
    case Type::Double:
      if (auto* d = n.as_floating_point()) return out = d->get(), std::string();
      if (auto* i = n.as_integer()) return out = static_cast<double>(i->get()), std::string();
      return wrong();
    case Type::String:
      if (auto* s = n.as_string()) return out = s->get(), std::string();
      return wrong();
    case Type::StringList: {
      auto* a = n.as_array();
      if (!a) return wrong();
      std::vector<std::string> list;
      for (const toml::node& e : *a) {
        auto* s = e.as_string();
        if (!s) {
          *at = &e.source();
          return fmt::format("expected array of strings, got an array containing {}",
                             node_type_name(e.type()));
        }
        list.push_back(s->get());
      }
      out = std::move(list);
      return {};
    }
  }
  return "unsupported type";
}

// Parses TOML text; returns "" or "<where>: parse error: <description>".
std::string parse_toml(std::string_view text, const std::string& path, toml::table& out) {
#if TOML_EXCEPTIONS
  try {
    out = toml::parse(text, path);
    return {};
  } catch (const toml::parse_error& e) {
    return fmt::format("{}: parse error: {}", where(path, e.source()), e.description());
  }
#else
  toml::parse_result r = toml::parse(text, path);
  if (!r) {
    const toml::parse_error& e = r.error();
    return fmt::format("{}: parse error: {}", where(path, e.source()), e.description());
  }
  out = std::move(r).table();
  return {};
#endif
}

bool read_file(const std::string& path, std::string& text, std::string& err) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    err = fmt::format("{}: cannot open config file: {}", path,
                      std::generic_category().message(errno));
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    err = fmt::format("{}: cannot open config file: is a directory", path);
    return false;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    err = fmt::format("{}: cannot open config file: {}", path,
                      std::generic_category().message(errno));
    return false;
  }
  text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  if (f.bad()) {
    err = fmt::format("{}: cannot read config file", path);
    return false;
  }
  return true;
}

void apply_file(State& st, const std::string& path) {
  std::string text, err;
  toml::table root;
  if (!read_file(path, text, err) || !(err = parse_toml(text, path, root)).empty()) {
    st.errors.push_back(std::move(err));
    return;
  }
  // toml++ iterates keys in name order; report problems in file order.
  std::vector<std::pair<toml::source_position, std::string>> errs;
  auto fail = [&](const toml::source_region& r, std::string msg) {
    errs.emplace_back(r.begin, std::move(msg));
  };
  for (auto&& [skey, snode] : root) {
    std::string_view sname = skey.str();
    const toml::source_region& sr = skey.source();
    if (!is_section(sname)) {
      if (snode.is_table())
        fail(sr, fmt::format("{}: unknown section '{}' (known: {})", where(path, sr), sname,
                             known_sections()));
      else
        fail(sr, fmt::format("{}: unknown key '{}': keys belong in a section ({}){}",
                             where(path, sr), sname, known_sections(), suggest_key("", sname)));
      continue;
    }
    const toml::table* tbl = snode.as_table();
    if (!tbl) {
      fail(sr, fmt::format("{}: section '{}' must be a table, got {}", where(path, sr), sname,
                           node_type_name(snode.type())));
      continue;
    }
    for (auto&& [key, node] : *tbl) {
      const KeyInfo* k = find_key(sname, key.str());
      if (!k) {
        fail(key.source(), fmt::format("{}: unknown key '{}.{}'{}", where(path, key.source()),
                                       sname, key.str(), suggest_key(sname, key.str())));
        continue;
      }
      size_t i = detail::index_of(*k);
      Value v;
      const toml::source_region* at = &node.source();
      std::string why = from_node(*k, node, v, &at);
      if (why.empty()) why = detail::validate(i, v);
      if (!why.empty()) {
        fail(*at, fmt::format("{}: key '{}': {}", where(path, *at), key_name(*k), why));
        continue;
      }
      detail::store(st.cfg, i, v);
      st.rank[i] = kFile;
      st.origin[i] = where(path, node.source());
    }
  }
  std::stable_sort(errs.begin(), errs.end(), [](const auto& a, const auto& b) {
    return a.first.line != b.first.line ? a.first.line < b.first.line
                                        : a.first.column < b.first.column;
  });
  for (auto& e : errs) st.errors.push_back(std::move(e.second));
}

// A StringList given as a TOML array literal in an environment variable.
std::string parse_env_array(std::string_view text, Value& out) {
  toml::table t;
  std::string err = parse_toml(fmt::format("v = {}", text), "", t);
  const toml::array* a = err.empty() ? t["v"].as_array() : nullptr;
  std::vector<std::string> list;
  if (a) {
    for (const toml::node& e : *a) {
      if (!e.is_string()) {
        a = nullptr;
        break;
      }
      list.push_back(e.as_string()->get());
    }
  }
  if (!a) return fmt::format("must be a TOML array of strings, got '{}'", text);
  out = std::move(list);
  return {};
}

void apply_env(State& st, std::string_view provider) {
  std::unordered_set<std::string> known;
  for (size_t i = 0; i < schema().size(); ++i) {
    const KeyInfo& k = schema()[i];
    if (!applies_to(provider, k)) continue;
    std::string name = env_name(provider, k);
    known.insert(name);
    const char* e = std::getenv(name.c_str());
    if (!e) continue;
    std::string_view text = e;
    Value v;
    std::string why;
    size_t first = text.find_first_not_of(" \t");
    if (k.type == Type::StringList && first != std::string_view::npos && text[first] == '[')
      why = parse_env_array(text, v);
    else
      why = detail::parse_text(i, text, v);
    if (why.empty()) why = detail::validate(i, v);
    if (!why.empty()) {
      st.errors.push_back(fmt::format("{}: {}", name, why));
      continue;
    }
    detail::store(st.cfg, i, v);
    st.rank[i] = kEnv;
    st.origin[i] = name;
  }
  // Likely typos: FI_<PROV>_* variables that set nothing.
  if (provider.empty()) return;
  std::string prefix = fmt::format("FI_{}_", upper(provider));
  for (char** e = environ; e && *e; ++e) {
    std::string_view var = *e;
    var = var.substr(0, var.find('='));
    if (var.substr(0, prefix.size()) == prefix && !known.count(std::string(var)))
      PF_LOG(provider, Warn, Core, "{}: not a {} setting of pollfab; ignored", var, provider);
  }
}

// Defaults that follow another key: reorder_window_pkts left at its default is at least
// window_pkts (a config that only raises window_pkts past 1024 stays valid); ack_coalesce_pkts
// left at its default is at most window_pkts / 4 (a config that only lowers window_pkts below
// 256 stays valid, and its window still sees four ACKs).
void apply_derived_defaults(State& st) {
  const size_t reorder = size_t(find_key("transport", "reorder_window_pkts") - schema().data());
  const size_t ack = size_t(find_key("transport", "ack_coalesce_pkts") - schema().data());
  auto& t = st.cfg.transport;
  if (st.rank[reorder] == kDefault && t.reorder_window_pkts < t.window_pkts)
    t.reorder_window_pkts = t.window_pkts;
  if (st.rank[ack] == kDefault && t.ack_coalesce_pkts > t.window_pkts / 4)
    t.ack_coalesce_pkts = std::max<uint32_t>(1, t.window_pkts / 4);
}

void apply_cross_checks(State& st) {
  for (const detail::CrossError& x : detail::cross_check(st.cfg)) {
    bool blame_b = st.rank[x.b] > st.rank[x.a];
    size_t blamed = blame_b ? x.b : x.a, other = blame_b ? x.a : x.b;
    std::string msg = st.rank[blamed] == kEnv
                          ? fmt::format("{}: {}", st.origin[blamed], blame_b ? x.b_reason : x.a_reason)
                          : fmt::format("{}: key '{}': {}", st.origin[blamed],
                                        key_name(schema()[blamed]),
                                        blame_b ? x.b_reason : x.a_reason);
    if (st.rank[other] != kDefault)
      msg += fmt::format(" ('{}' set by {})", key_name(schema()[other]), st.origin[other]);
    st.errors.push_back(std::move(msg));
  }
}

LoadResult load_impl(std::string_view provider, const char* explicit_path) {
  State st;
  const char* path = explicit_path && *explicit_path ? explicit_path : std::getenv("POLLFAB_CONFIG");
  if (path && *path) {
    st.cfg.source = path;
    apply_file(st, path);
  }
  apply_env(st, provider);
  apply_derived_defaults(st);
  if (st.errors.empty()) apply_cross_checks(st);
  if (!st.errors.empty()) {
    LoadResult r;
    for (const std::string& e : st.errors) r.error += (r.error.empty() ? "" : "\n") + e;
    return r;
  }
  return LoadResult{std::move(st.cfg), {}};
}

}  // namespace

LoadResult load(std::string_view provider, const char* explicit_path) {
  try {
    return load_impl(provider, explicit_path);
  } catch (const std::exception& e) {
    LoadResult r;
    try {
      r.error = fmt::format("configuration: internal error: {}", e.what());
    } catch (...) {
    }
    return r;
  } catch (...) {
    LoadResult r;
    try {
      r.error = "configuration: internal error";
    } catch (...) {
    }
    return r;
  }
}

std::string env_name(std::string_view provider, const KeyInfo& k) {
  std::string_view section = k.section;
  if (section == provider) return fmt::format("FI_{}_{}", upper(provider), upper(k.key));
  return fmt::format("FI_{}_{}_{}", upper(provider), upper(section), upper(k.key));
}

std::string value_text(const Config& c, const KeyInfo& k) {
  size_t i = detail::index_of(k);
  return i == detail::kNoKey ? std::string() : detail::literal(detail::fetch(c, i));
}

std::string to_toml(const Config& c) {
  std::string src = c.source;
  std::replace(src.begin(), src.end(), '\n', ' ');
  std::string out = fmt::format("# pollfab configuration (source: {})\n", src);
  const char* section = "";
  for (size_t i = 0; i < schema().size(); ++i) {
    const KeyInfo& k = schema()[i];
    if (std::string_view(section) != k.section) {
      section = k.section;
      out += fmt::format("\n[{}]\n", section);
    }
    std::string range = detail::range_text(i);
    std::string note = *k.unit && !range.empty() ? fmt::format(" [{}, {}]", k.unit, range)
                       : *k.unit                 ? fmt::format(" [{}]", k.unit)
                       : !range.empty()          ? fmt::format(" [{}]", range)
                                                 : std::string();
    out += fmt::format("# {}{}\n{} = {}\n", k.help, note, k.key,
                       detail::literal(detail::fetch(c, i)));
  }
  return out;
}

}  // namespace pollfab::config
