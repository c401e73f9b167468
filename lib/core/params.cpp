#include "lib/core/params.hpp"

#include <rdma/fi_errno.h>
#include <strings.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "lib/util/log.hpp"

namespace pollfab::core {
namespace {

struct Entry {
  bool core;
  std::string prov;  // empty for the core
  std::string name;
  fi_param_type type;
  std::string help;  // as listed ("<prov>: <help>" for providers)
  std::string env;   // FI_...
};

struct Registry {
  std::mutex mu;
  std::vector<Entry> entries;  // definition order
};

struct HookState {
  std::recursive_mutex mu;  // recursive: the hook may call getparams()/set_params_init_hook()
  ParamsInitHook hook = nullptr;
  bool done = false;
};

// Never destroyed on purpose (see params.hpp). nullptr only if the first allocation failed.
Registry* registry() noexcept {
  static Registry* r = new (std::nothrow) Registry();
  return r;
}

HookState* hook_state() noexcept {
  static HookState* h = new (std::nothrow) HookState();
  return h;
}

bool same_owner(const Entry& e, const char* prov_name) noexcept {
  return prov_name ? (!e.core && e.prov == prov_name) : e.core;
}

const Entry* find(const Registry& r, const char* prov_name, const char* name) noexcept {
  for (const Entry& e : r.entries)
    if (same_owner(e, prov_name) && e.name == name) return &e;
  return nullptr;
}

bool valid_type(fi_param_type t) noexcept {
  switch (t) {
    case FI_PARAM_STRING:
    case FI_PARAM_INT:
    case FI_PARAM_BOOL:
    case FI_PARAM_SIZE_T:
      return true;
  }
  return false;
}

// "FI_" [prov "_"] name, ASCII-uppercased, anything outside [A-Za-z0-9_] -> '_'.
std::string make_env_name(const char* prov_name, const char* name) {
  std::string s = "FI_";
  if (prov_name) {
    s += prov_name;
    s += '_';
  }
  s += name;
  for (char& c : s) {
    if (c >= 'a' && c <= 'z')
      c = static_cast<char>(c - 'a' + 'A');
    else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      c = '_';
  }
  return s;
}

// libfabric fi_parse_bool(): 0 / 1 for the accepted spellings, -1 otherwise.
int parse_bool(const char* s) noexcept {
  if (strcmp(s, "0") == 0 || strcasecmp(s, "false") == 0 || strcasecmp(s, "no") == 0 ||
      strcasecmp(s, "off") == 0)
    return 0;
  if (strcmp(s, "1") == 0 || strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0 ||
      strcasecmp(s, "on") == 0)
    return 1;
  return -1;
}

const char* log_prov(const char* prov_name) noexcept { return prov_name ? prov_name : "core"; }

void run_init_hook() noexcept {
  HookState* h = hook_state();
  if (!h) return;
  std::lock_guard<std::recursive_mutex> g(h->mu);
  if (!h->hook || h->done) return;
  h->done = true;
  try {
    h->hook();
  } catch (...) {
  }
}

void free_param_fields(fi_param& p) noexcept {
  free(const_cast<char*>(p.name));
  free(const_cast<char*>(p.help_string));
  free(const_cast<char*>(p.value));
  p.name = p.help_string = p.value = nullptr;
}

}  // namespace

int param_define(const char* prov_name, const char* param_name, enum fi_param_type type,
                 const char* help) noexcept {
  if (!param_name || !help || !*help || !valid_type(type)) {
    PF_LOG(log_prov(prov_name), Debug, Core,
           "Failed to register {} variable: provider coding error",
           param_name ? param_name : "(null)");
    return -FI_EINVAL;
  }
  Registry* r = registry();
  if (!r) return -FI_ENOMEM;
  try {
    Entry e{prov_name == nullptr,
            prov_name ? prov_name : "",
            param_name,
            type,
            prov_name ? std::string(prov_name) + ": " + help : std::string(help),
            make_env_name(prov_name, param_name)};
    {
      std::lock_guard<std::mutex> g(r->mu);
      if (find(*r, prov_name, param_name)) {
        PF_LOG(log_prov(prov_name), Debug, Core, "var {} already registered", param_name);
        return FI_SUCCESS;
      }
      r->entries.push_back(std::move(e));
    }
  } catch (...) {
    PF_LOG(log_prov(prov_name), Debug, Core, "Failed to register {} variable: ENOMEM",
           param_name);
    return -FI_ENOMEM;
  }
  PF_LOG(log_prov(prov_name), Debug, Core, "registered var {}", param_name);
  return FI_SUCCESS;
}

int param_get(const char* prov_name, const char* param_name, void* value) noexcept {
  const char* lp = log_prov(prov_name);
  if (!param_name || !value) {
    PF_LOG(lp, Debug, Core, "Failed to read {} variable: provider coding error",
           param_name ? param_name : "(null)");
    return -FI_EINVAL;
  }
  Registry* r = registry();
  if (!r) return -FI_ENOENT;

  fi_param_type type;
  const char* str = nullptr;
  {
    std::lock_guard<std::mutex> g(r->mu);
    const Entry* e = find(*r, prov_name, param_name);
    if (!e) {
      PF_LOG(lp, Debug, Core, "Failed to find parameter {}: was not defined", param_name);
      return -FI_ENOENT;
    }
    type = e->type;
    str = getenv(e->env.c_str());
  }
  if (!str) {
    PF_LOG(lp, Info, Core, "variable {}=<not set>", param_name);
    return -FI_ENODATA;
  }

  switch (type) {
    case FI_PARAM_STRING:
      *static_cast<char**>(value) = const_cast<char*>(str);
      PF_LOG(lp, Info, Core, "read string var {}={}", param_name, str);
      break;
    case FI_PARAM_INT:
      *static_cast<int*>(value) = static_cast<int>(strtol(str, nullptr, 0));
      PF_LOG(lp, Info, Core, "read int var {}={}", param_name, *static_cast<int*>(value));
      break;
    case FI_PARAM_BOOL: {
      int b = parse_bool(str);
      if (b < 0) {
        PF_LOG(lp, Warn, Core, "failed to parse bool var {}={}", param_name, str);
        return -FI_EINVAL;
      }
      *static_cast<int*>(value) = b;
      PF_LOG(lp, Info, Core, "read bool var {}={}", param_name, b);
      break;
    }
    case FI_PARAM_SIZE_T:
      *static_cast<size_t*>(value) = static_cast<size_t>(strtol(str, nullptr, 0));
      PF_LOG(lp, Info, Core, "read long var {}={}", param_name, *static_cast<size_t*>(value));
      break;
  }
  return FI_SUCCESS;
}

int param_undefine(const char* prov_name) noexcept {
  Registry* r = registry();
  if (!r) return 0;
  std::lock_guard<std::mutex> g(r->mu);
  size_t before = r->entries.size();
  // Moves only (std::string move is noexcept), so erase/remove_if cannot throw.
  std::erase_if(r->entries, [prov_name](const Entry& e) { return same_owner(e, prov_name); });
  return static_cast<int>(before - r->entries.size());
}

int getparams(struct fi_param** params, int* count) noexcept {
  if (!params || !count) return -FI_EINVAL;
  run_init_hook();
  Registry* r = registry();
  if (!r) return -FI_ENOMEM;

  std::lock_guard<std::mutex> g(r->mu);
  size_t n = r->entries.size();
  if (n == 0) {
    *params = nullptr;
    *count = 0;
    return FI_SUCCESS;
  }
  auto* v = static_cast<fi_param*>(calloc(n + 1, sizeof(fi_param)));
  if (!v) return -FI_ENOMEM;
  for (size_t i = 0; i < n; ++i) {
    const Entry& e = r->entries[i];
    v[i].name = strdup(e.env.c_str());
    v[i].type = e.type;
    v[i].help_string = strdup(e.help.c_str());
    const char* val = getenv(e.env.c_str());
    if (val) v[i].value = strdup(val);
    if (!v[i].name || !v[i].help_string || (val && !v[i].value)) {
      free_param_fields(v[i]);  // entry i may be partial; freeparams() stops at its null name
      freeparams(v);
      return -FI_ENOMEM;
    }
  }
  *params = v;
  *count = static_cast<int>(n);
  return FI_SUCCESS;
}

void freeparams(struct fi_param* params) noexcept {
  if (!params) return;
  for (size_t i = 0; params[i].name; ++i) free_param_fields(params[i]);
  free(params);
}

void set_params_init_hook(ParamsInitHook hook) noexcept {
  HookState* h = hook_state();
  if (!h) return;
  std::lock_guard<std::recursive_mutex> g(h->mu);
  if (h->hook != hook) {
    h->hook = hook;
    h->done = false;
  }
}

std::vector<ParamInfo> params_snapshot(bool run_init_hook_first) noexcept {
  if (run_init_hook_first) run_init_hook();
  std::vector<ParamInfo> out;
  Registry* r = registry();
  if (!r) return out;
  try {
    std::lock_guard<std::mutex> g(r->mu);
    out.reserve(r->entries.size());
    for (const Entry& e : r->entries) {
      ParamInfo p;
      p.core = e.core;
      p.prov_name = e.prov;
      p.name = e.name;
      p.env_name = e.env;
      p.type = e.type;
      p.help = e.help;
      if (const char* val = getenv(e.env.c_str())) {
        p.is_set = true;
        p.value = val;
      }
      out.push_back(std::move(p));
    }
  } catch (...) {
    out.clear();
  }
  return out;
}

}  // namespace pollfab::core
