// Tests for the parameter registry (pollfab::core::param_* / getparams / freeparams).
// Behaviour was checked against Debian's libfabric 1.17 through a throwaway dlopen program;
// deliberate differences (env-name sanitising, duplicate listing) are noted where tested.
#include "lib/core/params.hpp"

#include <gtest/gtest.h>
#include <rdma/fi_errno.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace pc = pollfab::core;

namespace {

// Finds an entry of a getparams() array by env name, or nullptr.
const fi_param* find_param(const fi_param* ps, const char* env) {
  for (int i = 0; ps && ps[i].name; ++i)
    if (strcmp(ps[i].name, env) == 0) return &ps[i];
  return nullptr;
}

int count_env(const fi_param* ps, const char* env) {
  int n = 0;
  for (int i = 0; ps && ps[i].name; ++i)
    if (strcmp(ps[i].name, env) == 0) ++n;
  return n;
}

// Each test uses its own provider name and cleans it up.
struct ProvGuard {
  const char* prov;
  explicit ProvGuard(const char* p) : prov(p) {}
  ~ProvGuard() { pc::param_undefine(prov); }
};

}  // namespace

TEST(ParamDefine, RejectsBadArguments) {
  EXPECT_EQ(-FI_EINVAL, pc::param_define("pt_bad", nullptr, FI_PARAM_INT, "h"));
  EXPECT_EQ(-FI_EINVAL, pc::param_define("pt_bad", "x", FI_PARAM_INT, nullptr));
  EXPECT_EQ(-FI_EINVAL, pc::param_define("pt_bad", "x", FI_PARAM_INT, ""));
  EXPECT_EQ(-FI_EINVAL, pc::param_define("pt_bad", "x", static_cast<fi_param_type>(42), "h"));
  EXPECT_EQ(-FI_EINVAL, pc::param_define(nullptr, nullptr, FI_PARAM_INT, "h"));
  EXPECT_EQ(0, pc::param_undefine("pt_bad"));  // nothing was registered
}

TEST(ParamDefine, CoreAndProviderNamesAndHelp) {
  ProvGuard g("pt_names");
  ASSERT_EQ(0, pc::param_define(nullptr, "pt_core_knob", FI_PARAM_INT, "core help"));
  ASSERT_EQ(0, pc::param_define("pt_names", "iface", FI_PARAM_STRING, "which NIC"));

  fi_param* ps = nullptr;
  int n = -1;
  ASSERT_EQ(0, pc::getparams(&ps, &n));
  ASSERT_NE(nullptr, ps);
  EXPECT_EQ(nullptr, ps[n].name);  // terminator
  const fi_param* c = find_param(ps, "FI_PT_CORE_KNOB");
  ASSERT_NE(nullptr, c);
  EXPECT_EQ(FI_PARAM_INT, c->type);
  EXPECT_STREQ("core help", c->help_string);
  const fi_param* p = find_param(ps, "FI_PT_NAMES_IFACE");
  ASSERT_NE(nullptr, p);
  EXPECT_EQ(FI_PARAM_STRING, p->type);
  EXPECT_STREQ("pt_names: which NIC", p->help_string);
  pc::freeparams(ps);

  EXPECT_EQ(1, pc::param_undefine(nullptr));  // removes only the core entry defined above
}

TEST(ParamDefine, EnvNameIsUppercasedAndSanitised) {
  // Reference would use "FI_MY-PROV.X_MIXED-NAME"; we map non-alnum to '_' (see params.hpp).
  ProvGuard g("my-prov.x");
  ASSERT_EQ(0, pc::param_define("my-prov.x", "Mixed-name", FI_PARAM_SIZE_T, "h"));
  setenv("FI_MY_PROV_X_MIXED_NAME", "0x10", 1);
  size_t v = 0;
  EXPECT_EQ(0, pc::param_get("my-prov.x", "Mixed-name", &v));
  EXPECT_EQ(16u, v);
  unsetenv("FI_MY_PROV_X_MIXED_NAME");

  auto snap = pc::params_snapshot(false);
  bool found = false;
  for (const auto& p : snap)
    if (!p.core && p.prov_name == "my-prov.x") {
      found = true;
      EXPECT_EQ("FI_MY_PROV_X_MIXED_NAME", p.env_name);
      EXPECT_EQ("Mixed-name", p.name);
      EXPECT_EQ("my-prov.x: h", p.help);
    }
  EXPECT_TRUE(found);
}

TEST(ParamDefine, RedefineKeepsFirstAndListsOnce) {
  ProvGuard g("pt_dup");
  ASSERT_EQ(0, pc::param_define("pt_dup", "a", FI_PARAM_BOOL, "first"));
  EXPECT_EQ(0, pc::param_define("pt_dup", "a", FI_PARAM_INT, "second"));
  fi_param* ps = nullptr;
  int n = 0;
  ASSERT_EQ(0, pc::getparams(&ps, &n));
  EXPECT_EQ(1, count_env(ps, "FI_PT_DUP_A"));
  const fi_param* p = find_param(ps, "FI_PT_DUP_A");
  ASSERT_NE(nullptr, p);
  EXPECT_EQ(FI_PARAM_BOOL, p->type);
  EXPECT_STREQ("pt_dup: first", p->help_string);
  pc::freeparams(ps);

  setenv("FI_PT_DUP_A", "yes", 1);
  int v = 42;
  EXPECT_EQ(0, pc::param_get("pt_dup", "a", &v));  // parsed as BOOL (first definition)
  EXPECT_EQ(1, v);
  unsetenv("FI_PT_DUP_A");
}

TEST(ParamDefine, CoreAndProviderParamsAreDistinct) {
  ProvGuard g("pt_own");
  ASSERT_EQ(0, pc::param_define("pt_own", "shared", FI_PARAM_INT, "h"));
  int v = 0;
  EXPECT_EQ(-FI_ENOENT, pc::param_get(nullptr, "shared", &v));
  EXPECT_EQ(-FI_ENOENT, pc::param_get("pt_other", "shared", &v));
  EXPECT_EQ(-FI_ENODATA, pc::param_get("pt_own", "shared", &v));
}

TEST(ParamGet, Errors) {
  ProvGuard g("pt_err");
  ASSERT_EQ(0, pc::param_define("pt_err", "x", FI_PARAM_INT, "h"));
  int v = 7;
  EXPECT_EQ(-FI_EINVAL, pc::param_get("pt_err", nullptr, &v));
  EXPECT_EQ(-FI_EINVAL, pc::param_get("pt_err", "x", nullptr));
  EXPECT_EQ(-FI_ENOENT, pc::param_get("pt_err", "y", &v));
  unsetenv("FI_PT_ERR_X");
  EXPECT_EQ(-FI_ENODATA, pc::param_get("pt_err", "x", &v));
  EXPECT_EQ(7, v);
}

TEST(ParamGet, StringReturnsEnvPointer) {
  ProvGuard g("pt_str");
  ASSERT_EQ(0, pc::param_define("pt_str", "s", FI_PARAM_STRING, "h"));
  setenv("FI_PT_STR_S", "eth0,eth1", 1);
  char* s = nullptr;
  ASSERT_EQ(0, pc::param_get("pt_str", "s", &s));
  EXPECT_EQ(getenv("FI_PT_STR_S"), s);
  EXPECT_STREQ("eth0,eth1", s);
  setenv("FI_PT_STR_S", "", 1);
  ASSERT_EQ(0, pc::param_get("pt_str", "s", &s));  // set but empty is still data
  EXPECT_STREQ("", s);
  unsetenv("FI_PT_STR_S");
}

TEST(ParamGet, IntUsesStrtolBase0) {
  ProvGuard g("pt_int");
  ASSERT_EQ(0, pc::param_define("pt_int", "i", FI_PARAM_INT, "h"));
  struct { const char* in; int out; } cases[] = {
      {"42", 42}, {"-5", -5}, {"0x10", 16}, {"010", 8}, {"12abc", 12}, {"abc", 0}, {" 7", 7},
  };
  for (const auto& c : cases) {
    setenv("FI_PT_INT_I", c.in, 1);
    int v = 12345;
    EXPECT_EQ(0, pc::param_get("pt_int", "i", &v)) << c.in;
    EXPECT_EQ(c.out, v) << c.in;
  }
  unsetenv("FI_PT_INT_I");
}

TEST(ParamGet, SizeTMatchesReferenceStrtol) {
  ProvGuard g("pt_sz");
  ASSERT_EQ(0, pc::param_define("pt_sz", "z", FI_PARAM_SIZE_T, "h"));
  struct { const char* in; size_t out; } cases[] = {
      {"0x10", 16},
      {"4096", 4096},
      {"-1", SIZE_MAX},
      {"18446744073709551615", static_cast<size_t>(LONG_MAX)},  // reference saturates
  };
  for (const auto& c : cases) {
    setenv("FI_PT_SZ_Z", c.in, 1);
    size_t v = 1;
    EXPECT_EQ(0, pc::param_get("pt_sz", "z", &v)) << c.in;
    EXPECT_EQ(c.out, v) << c.in;
  }
  unsetenv("FI_PT_SZ_Z");
}

TEST(ParamGet, BoolSpellings) {
  ProvGuard g("pt_bool");
  ASSERT_EQ(0, pc::param_define("pt_bool", "b", FI_PARAM_BOOL, "h"));
  const char* falses[] = {"0", "false", "FALSE", "No", "off", "OFF"};
  const char* trues[] = {"1", "true", "True", "YES", "on", "On"};
  for (const char* s : falses) {
    setenv("FI_PT_BOOL_B", s, 1);
    int v = 42;
    EXPECT_EQ(0, pc::param_get("pt_bool", "b", &v)) << s;
    EXPECT_EQ(0, v) << s;
  }
  for (const char* s : trues) {
    setenv("FI_PT_BOOL_B", s, 1);
    int v = 42;
    EXPECT_EQ(0, pc::param_get("pt_bool", "b", &v)) << s;
    EXPECT_EQ(1, v) << s;
  }
  const char* bad[] = {"maybe", " 1", "2", "", "yes ", "enable"};
  for (const char* s : bad) {
    setenv("FI_PT_BOOL_B", s, 1);
    int v = 42;
    EXPECT_EQ(-FI_EINVAL, pc::param_get("pt_bool", "b", &v)) << s;
    EXPECT_EQ(42, v) << s;  // untouched, as the 1.17 reference
  }
  unsetenv("FI_PT_BOOL_B");
}

TEST(GetParams, ValuesAreCopiesAndUnsetIsNull) {
  ProvGuard g("pt_gp");
  ASSERT_EQ(0, pc::param_define("pt_gp", "one", FI_PARAM_STRING, "h1"));
  ASSERT_EQ(0, pc::param_define("pt_gp", "two", FI_PARAM_INT, "h2"));
  setenv("FI_PT_GP_ONE", "hello", 1);
  unsetenv("FI_PT_GP_TWO");
  fi_param* ps = nullptr;
  int n = 0;
  ASSERT_EQ(0, pc::getparams(&ps, &n));
  ASSERT_GE(n, 2);
  for (int i = 0; i < n; ++i) {
    EXPECT_NE(nullptr, ps[i].name);
    EXPECT_NE(nullptr, ps[i].help_string);
  }
  EXPECT_EQ(nullptr, ps[n].name);
  EXPECT_EQ(nullptr, ps[n].help_string);
  EXPECT_EQ(nullptr, ps[n].value);

  // Definition order is kept.
  int i1 = -1, i2 = -1;
  for (int i = 0; i < n; ++i) {
    if (strcmp(ps[i].name, "FI_PT_GP_ONE") == 0) i1 = i;
    if (strcmp(ps[i].name, "FI_PT_GP_TWO") == 0) i2 = i;
  }
  ASSERT_GE(i1, 0);
  ASSERT_GE(i2, 0);
  EXPECT_LT(i1, i2);
  EXPECT_STREQ("hello", ps[i1].value);
  EXPECT_NE(getenv("FI_PT_GP_ONE"), ps[i1].value);  // strdup'd
  EXPECT_EQ(nullptr, ps[i2].value);
  pc::freeparams(ps);
  unsetenv("FI_PT_GP_ONE");
}

TEST(GetParams, NullArguments) {
  fi_param* ps = nullptr;
  int n = 0;
  EXPECT_EQ(-FI_EINVAL, pc::getparams(nullptr, &n));
  EXPECT_EQ(-FI_EINVAL, pc::getparams(&ps, nullptr));
  pc::freeparams(nullptr);  // no-op
}

TEST(GetParams, EmptyRegistryGivesNull) {
  pc::set_params_init_hook(nullptr);
  for (const auto& p : pc::params_snapshot(false))
    pc::param_undefine(p.core ? nullptr : p.prov_name.c_str());
  fi_param* ps = reinterpret_cast<fi_param*>(0x1);
  int n = -1;
  ASSERT_EQ(0, pc::getparams(&ps, &n));
  EXPECT_EQ(nullptr, ps);
  EXPECT_EQ(0, n);
  EXPECT_TRUE(pc::params_snapshot(false).empty());
}

namespace {
std::atomic<int> g_hook_calls{0};
std::atomic<int> g_reentry_result{1};

void hook_define() {
  ++g_hook_calls;
  pc::param_define("pt_hook", "late", FI_PARAM_BOOL, "defined by hook");
}

void hook_reentrant() {
  ++g_hook_calls;
  pc::param_define("pt_hook", "late", FI_PARAM_BOOL, "defined by hook");
  fi_param* ps = nullptr;
  int n = 0;
  g_reentry_result = pc::getparams(&ps, &n);  // must not deadlock or re-run the hook
  pc::freeparams(ps);
}

void hook_throws() {
  ++g_hook_calls;
  throw 1;
}
}  // namespace

TEST(InitHook, RunsOnceBeforeListing) {
  ProvGuard g("pt_hook");
  g_hook_calls = 0;
  pc::set_params_init_hook(hook_define);
  fi_param* ps = nullptr;
  int n = 0;
  ASSERT_EQ(0, pc::getparams(&ps, &n));
  EXPECT_EQ(1, g_hook_calls.load());
  const fi_param* p = find_param(ps, "FI_PT_HOOK_LATE");
  ASSERT_NE(nullptr, p);
  EXPECT_STREQ("pt_hook: defined by hook", p->help_string);
  pc::freeparams(ps);

  ASSERT_EQ(0, pc::getparams(&ps, &n));
  pc::freeparams(ps);
  (void)pc::params_snapshot();
  EXPECT_EQ(1, g_hook_calls.load());

  pc::set_params_init_hook(hook_define);  // same pointer: not re-armed
  ASSERT_EQ(0, pc::getparams(&ps, &n));
  pc::freeparams(ps);
  EXPECT_EQ(1, g_hook_calls.load());
  pc::set_params_init_hook(nullptr);
}

TEST(InitHook, SnapshotRunsHookUnlessAskedNot) {
  ProvGuard g("pt_hook");
  g_hook_calls = 0;
  pc::set_params_init_hook(hook_define);
  auto none = pc::params_snapshot(false);
  EXPECT_EQ(0, g_hook_calls.load());
  auto snap = pc::params_snapshot();
  EXPECT_EQ(1, g_hook_calls.load());
  bool found = false;
  for (const auto& p : snap) found |= p.env_name == "FI_PT_HOOK_LATE";
  EXPECT_TRUE(found);
  pc::set_params_init_hook(nullptr);
}

TEST(InitHook, ReentrantGetparamsAndThrowingHook) {
  ProvGuard g("pt_hook");
  g_hook_calls = 0;
  g_reentry_result = 1;
  pc::set_params_init_hook(hook_reentrant);
  fi_param* ps = nullptr;
  int n = 0;
  ASSERT_EQ(0, pc::getparams(&ps, &n));
  pc::freeparams(ps);
  EXPECT_EQ(1, g_hook_calls.load());
  EXPECT_EQ(0, g_reentry_result.load());

  g_hook_calls = 0;
  pc::set_params_init_hook(hook_throws);  // different pointer: re-armed
  EXPECT_EQ(0, pc::getparams(&ps, &n));
  pc::freeparams(ps);
  EXPECT_EQ(1, g_hook_calls.load());
  pc::set_params_init_hook(nullptr);
}

TEST(ParamUndefine, RemovesOnlyThatProvider) {
  ASSERT_EQ(0, pc::param_define("pt_u1", "a", FI_PARAM_INT, "h"));
  ASSERT_EQ(0, pc::param_define("pt_u1", "b", FI_PARAM_INT, "h"));
  ASSERT_EQ(0, pc::param_define("pt_u2", "a", FI_PARAM_INT, "h"));
  EXPECT_EQ(2, pc::param_undefine("pt_u1"));
  int v = 0;
  EXPECT_EQ(-FI_ENOENT, pc::param_get("pt_u1", "a", &v));
  EXPECT_EQ(-FI_ENODATA, pc::param_get("pt_u2", "a", &v));
  EXPECT_EQ(1, pc::param_undefine("pt_u2"));
  EXPECT_EQ(0, pc::param_undefine("pt_u2"));
}

TEST(Params, ConcurrentUse) {
  constexpr int kThreads = 4;
  constexpr int kIters = 200;
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([t, &failures] {
      std::string prov = "pt_mt" + std::to_string(t);
      for (int i = 0; i < kIters; ++i) {
        std::string name = "p" + std::to_string(i);
        if (pc::param_define(prov.c_str(), name.c_str(), FI_PARAM_INT, "h") != 0) ++failures;
        int v = 0;
        if (pc::param_get(prov.c_str(), name.c_str(), &v) != -FI_ENODATA) ++failures;
        if (i % 50 == 0) {
          fi_param* ps = nullptr;
          int n = 0;
          if (pc::getparams(&ps, &n) != 0) ++failures;
          pc::freeparams(ps);
          (void)pc::params_snapshot(false);
        }
      }
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(0, failures.load());
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(kIters, pc::param_undefine(("pt_mt" + std::to_string(t)).c_str()));
}
