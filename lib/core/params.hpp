// libfabric's run-time parameter registry (fi_param_define / fi_param_get / fi_getparams /
// fi_freeparams, libfabric 1.17 src/var.c semantics). Parameters are environment variables:
// a core parameter "foo" is FI_FOO, a provider parameter "foo" of provider "tcp" is
// FI_TCP_FOO. The ABI shim (abi/) exports the C symbols and forwards here; printf-style
// help formatting of fi_param_define is done by the shim before calling param_define().
//
// Thread-safety: every function is MT-safe. A mutex guards the registry; values are read
// with getenv() at call time, so (as with any getenv user) callers must not run setenv /
// unsetenv / putenv concurrently. No function throws: failures are -FI_E* return codes.
//
// Storage: one process-wide registry, created on first use (function-local, deliberately
// never destroyed, so the C entry points stay usable from atexit handlers and destructors of
// other libraries).
#pragma once
#include <rdma/fabric.h>

#include <string>
#include <vector>

namespace pollfab::core {

// Registers a parameter. prov_name == nullptr means the libfabric core (env FI_<NAME>, help
// as given); otherwise env FI_<PROV>_<NAME> and help "<prov>: <help>", as the reference.
// The env name is uppercased, and (unlike the reference, which only uppercases) every
// character that is not [A-Za-z0-9_] becomes '_' so the name is a valid shell variable;
// for all names libfabric itself uses ([a-z0-9_]) both rules give the same result.
// Re-defining an already defined (provider, name) returns 0 like the reference, but keeps
// the first definition (type and help) and is not listed twice by getparams(); the
// reference appends a duplicate entry whose lookups also resolve to the first one.
// Returns 0; -FI_EINVAL if param_name or help is null, help is empty, or type is not one of
// FI_PARAM_STRING/INT/BOOL/SIZE_T; -FI_ENOMEM on allocation failure.
int param_define(const char* prov_name, const char* param_name, enum fi_param_type type,
                 const char* help) noexcept;

// Reads a defined parameter from the environment. value must point to a char* (STRING: set
// to getenv()'s pointer, not a copy), an int (INT: strtol(s, nullptr, 0) truncated to int;
// BOOL: 0/1), or a size_t (SIZE_T: strtol(s, nullptr, 0) converted to size_t, so "-1" is
// SIZE_MAX and values above LONG_MAX saturate at LONG_MAX, exactly as the reference).
// BOOL accepts "0", "false", "no", "off" -> 0 and "1", "true", "yes", "on" -> 1 (words
// case-insensitive, no surrounding blanks).
// Returns 0; -FI_EINVAL if param_name or value is null or a BOOL value is not recognised
// (*value is then left untouched); -FI_ENOENT if (prov_name, param_name) was never defined;
// -FI_ENODATA if the variable is not set (*value untouched).
int param_get(const char* prov_name, const char* param_name, void* value) noexcept;

// Removes every parameter of one provider (nullptr = the core's), like the reference's
// internal fi_param_undefine() used when a provider is unloaded. Returns how many entries
// were removed (0 if none). Never fails.
int param_undefine(const char* prov_name) noexcept;

// fi_getparams(3). First runs the init hook (see set_params_init_hook) once, then returns a
// calloc'd array of *count + 1 struct fi_param in definition order, terminated by an entry
// whose name is null. name (env variable name), help_string and value (the current getenv
// value, or null when unset) are strdup'd; release the array with freeparams(). With no
// parameters defined, *params = nullptr and *count = 0 (as the reference).
// Returns 0; -FI_EINVAL if params or count is null; -FI_ENOMEM on allocation failure
// (nothing is returned or leaked then).
int getparams(struct fi_param** params, int* count) noexcept;

// fi_freeparams(3): frees an array from getparams() (every string, then the array).
// nullptr is a no-op (the reference would crash). Never fails.
void freeparams(struct fi_param* params) noexcept;

// Installs the routine getparams() runs before listing, so every provider has defined its
// parameters (the shim passes its provider-registration routine, like the reference's
// fi_ini()). The hook runs at most once per installed pointer: it is marked done before it
// is called (a re-entrant getparams() from inside the hook does not run it again) and other
// threads calling getparams() meanwhile wait for it to finish. Installing a different pointer
// re-arms it; nullptr removes it. The hook must not throw (an exception is swallowed).
using ParamsInitHook = void (*)();
void set_params_init_hook(ParamsInitHook hook) noexcept;

// One registry entry as seen by internal tools (e.g. the pollfab CLI's parameter listing).
struct ParamInfo {
  bool core = true;              // defined with prov_name == nullptr
  std::string prov_name;         // empty for the core
  std::string name;              // name as defined ("iface")
  std::string env_name;          // environment variable ("FI_TCP_IFACE")
  enum fi_param_type type = FI_PARAM_STRING;
  std::string help;              // help string as listed by getparams ("tcp: ...")
  bool is_set = false;           // the environment variable is set
  std::string value;             // its value when is_set
};

// Copy of the registry in definition order with current values, for internal listings.
// run_init_hook: run the init hook first exactly as getparams() does, so providers' params
// are included. Returns an empty vector if memory runs out. MT-safe; never throws.
std::vector<ParamInfo> params_snapshot(bool run_init_hook = true) noexcept;

}  // namespace pollfab::core
