// Unit tests of lib/config: schema, defaults, file loading, errors, environment overrides.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "lib/config/loader.hpp"
#include "lib/config/schema.hpp"
#if __has_include("pollfab_build_config.h")
#include "pollfab_build_config.h"  // POLLFAB_SOURCE_ROOT under meson
#endif

extern char** environ;

namespace pollfab::config {
namespace {

namespace fs = std::filesystem;

// EXPECT_HAS(text, part): text contains part (gtest only, no gmock).
::testing::AssertionResult Has(const char* te, const char*, const std::string& text,
                               const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << te << " = \"" << text << "\"\n  does not contain \""
                                       << part << "\"";
}
#define EXPECT_HAS(text, part) EXPECT_PRED_FORMAT2(Has, text, part)

fs::path source_root() {
#ifdef POLLFAB_SOURCE_ROOT
  return POLLFAB_SOURCE_ROOT;
#else
  return fs::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
#endif
}

// Removes every variable that load() reads, so tests see a clean environment.
void clear_env() {
  std::vector<std::string> names;
  for (char** e = environ; e && *e; ++e) {
    std::string v = *e;
    v = v.substr(0, v.find('='));
    if (v.rfind("FI_DPDK_", 0) == 0 || v.rfind("FI_UDP_", 0) == 0 || v == "POLLFAB_CONFIG")
      names.push_back(v);
  }
  for (const auto& n : names) unsetenv(n.c_str());
}

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_env();
    std::string tmpl = (fs::temp_directory_path() / "pollfab_config_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    clear_env();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  // Loads text as a file; expects failure and returns the error.
  std::string error_of(const std::string& text, const char* provider = "dpdk") {
    std::string p = write("bad.toml", text);
    LoadResult r = load(provider, p.c_str());
    EXPECT_FALSE(r.config.has_value()) << text;
    EXPECT_HAS(r.error, p);
    return r.error;
  }
  std::string path(const std::string& name) { return (dir_ / name).string(); }
  fs::path dir_;
};

const KeyInfo& key(const char* s, const char* k) {
  const KeyInfo* p = find_key(s, k);
  EXPECT_NE(p, nullptr) << s << "." << k;
  return *p;
}

// ---- schema and defaults ----------------------------------------------------------------------

TEST_F(ConfigTest, SchemaIsCompleteAndConsistent) {
  std::set<std::string> seen;
  for (const KeyInfo& k : schema()) {
    std::string name = std::string(k.section) + "." + k.key;
    EXPECT_TRUE(seen.insert(name).second) << "duplicate " << name;
    EXPECT_GT(std::strlen(k.help), 10u) << name;
    EXPECT_NE(k.unit, nullptr) << name;
    if (k.type == Type::Int || k.type == Type::Double) {
      EXPECT_LT(k.min, k.max) << name;
    }
    // The struct's initializers are the schema's defaults.
    EXPECT_EQ(value_text(Config{}, k), k.default_text) << name;
  }
  EXPECT_EQ(schema().size(), 63u);
  EXPECT_EQ(std::string(key("dpdk", "mtu").unit), "bytes");
  EXPECT_EQ(std::string(key("transport", "rto_min_us").unit), "us");
  EXPECT_EQ(std::string(key("fault", "drop").unit), "probability");
  EXPECT_EQ(find_key("dpdk", "nope"), nullptr);
}

TEST_F(ConfigTest, DefaultsWithoutFileOrEnvironment) {
  LoadResult r = load("dpdk");
  ASSERT_TRUE(r.config) << r.error;
  const Config& c = *r.config;
  EXPECT_EQ(c, Config{});
  EXPECT_EQ(c.source, "defaults");
  EXPECT_EQ(c.eal.huge, "auto");
  EXPECT_EQ(c.eal.memory_mb, 512u);
  EXPECT_EQ(c.dpdk.vdevs, std::vector<std::string>{"net_tap0,iface=pftap0"});
  EXPECT_EQ(c.dpdk.mtu, 1500u);
  EXPECT_EQ(c.dpdk.mempool_size, 16383u);
  EXPECT_EQ(c.dpdk.udp_port, 47600);
  EXPECT_EQ(c.dpdk.zero_copy, "auto");
  EXPECT_EQ(c.udp.iface_ip, "127.0.0.1");
  EXPECT_EQ(c.udp.socket_buffer_bytes, 4194304u);
  EXPECT_EQ(c.transport.window_pkts, 256u);
  EXPECT_EQ(c.transport.peer_timeout_ms, 10000u);
  EXPECT_EQ(c.transport.max_unexpected_bytes, 67108864u);
  EXPECT_EQ(c.fault.drop, 0.0);
  EXPECT_EQ(c.fault.seed, 1u);
}

TEST_F(ConfigTest, DefaultTomlEqualsBuiltInDefaults) {
  std::string p = (source_root() / "config" / "default.toml").string();
  LoadResult r = load("dpdk", p.c_str());
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->source, p);
  Config c = *r.config;
  c.source = "defaults";
  EXPECT_EQ(c, Config{});
  // ... and it sets every key explicitly.
  std::ifstream f(p);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (const KeyInfo& k : schema())
    EXPECT_HAS(text, "\n" + std::string(k.key) + " = " + k.default_text + "\n")
        << k.section << "." << k.key;
}

// Every Int key's field holds both bounds (the field type is wide enough).
TEST_F(ConfigTest, IntFieldsHoldTheirWholeRange) {
  for (const KeyInfo& k : schema()) {
    if (k.type != Type::Int) continue;
    const char* prov = std::strcmp(k.section, "udp") == 0     ? "udp"
                       : std::strcmp(k.section, "verbs") == 0 ? "verbs"
                                                               : "dpdk";
    std::string var = env_name(prov, k);
    for (double b : {k.min, k.max}) {
      std::string text = b >= 9.2e18 ? "9223372036854775807" : std::to_string(int64_t(b));
      if (std::strcmp(k.key, "rto_min_us") == 0 || std::strcmp(k.key, "rto_max_us") == 0 ||
          std::strcmp(k.key, "rto_initial_us") == 0 || std::strcmp(k.key, "window_pkts") == 0 ||
          std::strcmp(k.key, "reorder_window_pkts") == 0 ||
          std::strcmp(k.key, "ack_coalesce_pkts") == 0 || std::strcmp(k.key, "peer_timeout_ms") == 0)
        continue;  // related keys; covered by CrossChecks
      setenv(var.c_str(), text.c_str(), 1);
      LoadResult r = load(prov);
      ASSERT_TRUE(r.config) << r.error;
      EXPECT_EQ(value_text(*r.config, k), text) << var;
      unsetenv(var.c_str());
    }
  }
}

// ---- files --------------------------------------------------------------------------------------

TEST_F(ConfigTest, LoadsFile) {
  std::string p = write("x.toml", R"(
[eal]
args = ["--no-telemetry"]
huge = "OFF"
pci_allow = ["0000:01:00.0", "02:00.1,txq_inline=128"]
[dpdk]
vdevs = ["net_tap0,iface=a", "net_tap1,iface=b"]
mtu = 9000
rx_queue_size = 4096
[udp]
port = 5000
[transport]
window_pkts = 64
ack_coalesce_pkts = 8
[fault]
drop = 0.125
reorder = 1
seed = 42
)");
  LoadResult r = load("dpdk", p.c_str());
  ASSERT_TRUE(r.config) << r.error;
  const Config& c = *r.config;
  EXPECT_EQ(c.source, p);
  EXPECT_EQ(c.eal.args, std::vector<std::string>{"--no-telemetry"});
  EXPECT_EQ(c.eal.huge, "off");  // canonical lower case
  EXPECT_EQ(c.eal.pci_allow.size(), 2u);
  EXPECT_EQ(c.dpdk.vdevs.size(), 2u);
  EXPECT_EQ(c.dpdk.mtu, 9000u);
  EXPECT_EQ(c.dpdk.rx_queue_size, 4096u);
  EXPECT_EQ(c.dpdk.tx_queue_size, 1024u);  // untouched keys keep their defaults
  EXPECT_EQ(c.udp.port, 5000);
  EXPECT_EQ(c.transport.window_pkts, 64u);
  EXPECT_EQ(c.transport.ack_coalesce_pkts, 8u);
  EXPECT_EQ(c.fault.drop, 0.125);
  EXPECT_EQ(c.fault.reorder, 1.0);  // an integer is accepted for a float
  EXPECT_EQ(c.fault.seed, 42u);
}

TEST_F(ConfigTest, UnknownKeyNamesFileLineKeyAndSuggestion) {
  std::string p = path("bad.toml");
  std::string e = error_of("# comment\n[dpdk]\nmtuu = 1500\n");
  EXPECT_EQ(e, p + ":3:1: unknown key 'dpdk.mtuu' (did you mean 'dpdk.mtu'?)");
  e = error_of("[dpdk]\nwindow_pkts = 64\n");
  EXPECT_EQ(e, p + ":2:1: unknown key 'dpdk.window_pkts' (it belongs in [transport])");
  e = error_of("mtu = 1500\n");
  EXPECT_HAS(e, p + ":1:1: unknown key 'mtu'");
  EXPECT_HAS(e, "it belongs in [dpdk]");
}

TEST_F(ConfigTest, UnknownSection) {
  std::string e = error_of("\n[dpdkk]\nmtu = 1500\n");
  EXPECT_HAS(e, path("bad.toml") + ":2:");
  EXPECT_HAS(e, "unknown section 'dpdkk'");
  EXPECT_HAS(e, "eal, dpdk, udp, verbs, transport, fault, progress, stats");
  e = error_of("dpdk = 3\n");
  EXPECT_HAS(e, "section 'dpdk' must be a table, got integer");
}

TEST_F(ConfigTest, WrongType) {
  std::string p = path("bad.toml");
  EXPECT_EQ(error_of("[dpdk]\nmtu = \"1500\"\n"),
            p + ":2:7: key 'dpdk.mtu': expected integer, got string");
  EXPECT_EQ(error_of("[eal]\npin_threads = \"yes\"\n"),
            p + ":2:15: key 'eal.pin_threads': expected boolean, got string");
  EXPECT_EQ(error_of("[dpdk]\nmtu = 1500.0\n"),
            p + ":2:7: key 'dpdk.mtu': expected integer, got float");
  EXPECT_EQ(error_of("[dpdk]\nvdevs = \"net_tap0\"\n"),
            p + ":2:9: key 'dpdk.vdevs': expected array of strings, got string");
  EXPECT_EQ(error_of("[dpdk]\nvdevs = [\"net_tap0\", 7]\n"),
            p + ":2:22: key 'dpdk.vdevs': expected array of strings, got an array containing "
                "integer");
  EXPECT_HAS(error_of("[fault]\ndrop = true\n"), "key 'fault.drop': expected float, got boolean");
}

TEST_F(ConfigTest, OutOfRange) {
  std::string p = path("bad.toml");
  EXPECT_EQ(error_of("[transport]\nwindow_pkts = 100\n"),
            p + ":2:15: key 'transport.window_pkts': must be a power of two between 8 and 4096, "
                "got 100");
  EXPECT_EQ(error_of("[dpdk]\nmtu = 100\n"),
            p + ":2:7: key 'dpdk.mtu': must be between 576 and 9000, got 100");
  EXPECT_EQ(error_of("[fault]\ndrop = 1.5\n"),
            p + ":2:8: key 'fault.drop': must be a probability between 0 and 1, got 1.5");
  EXPECT_HAS(error_of("[fault]\nseed = -1\n"), "key 'fault.seed': must be between 0 and 9223372036854775807, got -1");
  EXPECT_HAS(error_of("[fault]\nperiod_ms = 3600001\n"),
             "key 'fault.period_ms': must be between 0 and 3600000, got 3600001");
  EXPECT_HAS(error_of("[dpdk]\nrx_queue_size = 32768\n"), "key 'dpdk.rx_queue_size': must be a power of two between 64 and 16384");
  EXPECT_HAS(error_of("[udp]\nport = 65536\n"), "key 'udp.port': must be between 0 and 65535, got 65536");
}

TEST_F(ConfigTest, ProgressCoresIsACpuList) {
  EXPECT_EQ(parse_cpu_list("0,2-3,6"), (std::vector<int>{0, 2, 3, 6}));
  EXPECT_EQ(parse_cpu_list("1"), (std::vector<int>{1}));
  for (const char* bad : {"", "a", "3-1", "1,", ",1", "1--2", "4096"})
    EXPECT_TRUE(parse_cpu_list(bad).empty()) << bad;
  EXPECT_HAS(error_of("[progress]\ncores = \"0-\"\n"),
             "key 'progress.cores': must be \"\" or a list of CPUs and ranges (e.g. 1 or 2-3,6), got '0-'");
  EXPECT_HAS(error_of("[progress]\nidle_us = -1\n"), "key 'progress.idle_us': must be between 0 and 1000000");
}

TEST_F(ConfigTest, BadEnumAndFormatValues) {
  std::string p = path("bad.toml");
  EXPECT_EQ(error_of("[eal]\nhuge = \"maybe\"\n"),
            p + ":2:8: key 'eal.huge': must be one of auto, on, off, got 'maybe'");
  EXPECT_HAS(error_of("[eal]\nlog_level = \"verbose\"\n"), "key 'eal.log_level': must be one of emergency, alert, critical, error, "
                        "warning, notice, info, debug, got 'verbose'");
  EXPECT_HAS(error_of("[dpdk]\nmac = \"01:00:5e:00:00:01\"\n"), "key 'dpdk.mac': must be \"\" or a unicast MAC");
  EXPECT_HAS(error_of("[dpdk]\nmac = \"02:00:00:00:00\"\n"), "key 'dpdk.mac'");
  EXPECT_HAS(error_of("[dpdk]\nipv4 = \"10.0.0.256\"\n"), "key 'dpdk.ipv4': must be \"\" or a dotted-quad IPv4 address");
  EXPECT_HAS(error_of("[udp]\niface_ip = \"\"\n"), "key 'udp.iface_ip': must be a dotted-quad IPv4 address, got ''");
  EXPECT_HAS(error_of("[eal]\npci_allow = [\"0000:01:00.0\", \"xyz\"]\n"), "key 'eal.pci_allow': item 2 must be a PCI address");
  EXPECT_HAS(error_of("[dpdk]\nneighbours = [\"198.18.0.2 02:50:46:00:00:0b\", \"198.18.0.3\"]\n"),
             "key 'dpdk.neighbours': item 2 must be \"IPv4 MAC\"");
  EXPECT_HAS(error_of("[dpdk]\nneighbours = [\"198.18.0.2 01:00:5e:00:00:01\"]\n"),
             "key 'dpdk.neighbours': item 1 must be \"IPv4 MAC\"");
  EXPECT_HAS(error_of("[dpdk]\nvdevs = [\"iface=pftap0\"]\n"), "key 'dpdk.vdevs': item 1 must be <driver>");
  EXPECT_HAS(error_of("[eal]\nlcores = \"a-b\"\n"), "key 'eal.lcores': must be");
  EXPECT_HAS(error_of("[eal]\nfile_prefix = \"a/b\"\n"), "key 'eal.file_prefix': must be");
  EXPECT_HAS(error_of("[transport]\nchecksum = \"yes\"\n"),
             "key 'transport.checksum': must be one of auto, on, off, got 'yes'");
  EXPECT_HAS(error_of("[transport]\nchecksum = true\n"), "key 'transport.checksum'");  // was a bool
  EXPECT_HAS(error_of("[dpdk]\nzero_copy = \"always\"\n"),
             "key 'dpdk.zero_copy': must be one of auto, on, off, got 'always'");
  // Accepted forms.
  std::string ok = write("ok.toml",
                         "[eal]\nlcores = \"0@1,(2-3)@4\"\nlog_level = \"Debug\"\n"
                         "[dpdk]\nmac = \"02:00:00:00:00:01\"\nipv4 = \"10.0.0.1\"\n");
  LoadResult r = load("dpdk", ok.c_str());
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->eal.log_level, "debug");
  EXPECT_EQ(r.config->dpdk.mac, "02:00:00:00:00:01");
}

TEST_F(ConfigTest, ParseErrorNamesFileLineAndReason) {
  std::string e = error_of("[dpdk]\nmtu = = 3\n");
  EXPECT_HAS(e, path("bad.toml") + ":2:");
  EXPECT_HAS(e, "parse error");
  e = error_of("[dpdk]\nmtu = 1500\nmtu = 1400\n");  // redefinition
  EXPECT_HAS(e, path("bad.toml") + ":3:");
  EXPECT_HAS(e, "mtu");
  e = error_of(std::string("[dpdk]\nmac = \"\xff\xfe\"\n"));  // invalid UTF-8
  EXPECT_HAS(e, "parse error");
}

TEST_F(ConfigTest, MissingFileOrDirectory) {
  std::string p = path("nope.toml");
  LoadResult r = load("dpdk", p.c_str());
  EXPECT_FALSE(r.config);
  EXPECT_EQ(r.error, p + ": cannot open config file: No such file or directory");
  r = load("dpdk", dir_.c_str());
  EXPECT_FALSE(r.config);
  EXPECT_HAS(r.error, dir_.string() + ": cannot open config file: is a directory");
}

TEST_F(ConfigTest, ReportsEveryProblem) {
  std::string e = error_of("[dpdk]\nmtu = 1\nburst = 0\n[fault]\ndup = 2.0\n");
  EXPECT_HAS(e, "'dpdk.mtu'");
  EXPECT_HAS(e, "'dpdk.burst'");
  EXPECT_HAS(e, "'fault.dup'");
  EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 2);
  // In file order, not toml++'s key order.
  EXPECT_LT(e.find("'dpdk.mtu'"), e.find("'dpdk.burst'"));
  EXPECT_LT(e.find("'dpdk.burst'"), e.find("'fault.dup'"));
}

TEST_F(ConfigTest, ReorderWindowLeftUnsetFollowsALargerWindow) {
  LoadResult r = load("dpdk", write("w.toml", "[transport]\nwindow_pkts = 2048\n").c_str());
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->transport.window_pkts, 2048u);
  EXPECT_EQ(r.config->transport.reorder_window_pkts, 2048u);
  r = load("dpdk", write("d.toml", "[transport]\nwindow_pkts = 64\n").c_str());
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->transport.reorder_window_pkts, 1024u) << "a smaller window keeps the default";
}

TEST_F(ConfigTest, AckCoalesceLeftUnsetFollowsASmallerWindow) {
  LoadResult r = load("dpdk", write("s.toml", "[transport]\nwindow_pkts = 32\n").c_str());
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->transport.ack_coalesce_pkts, 8u) << "a quarter of the window";
  EXPECT_EQ(r.config->transport.ack_coalesce_msgs, 16u);
  r = load("dpdk", write("l.toml", "[transport]\nwindow_pkts = 2048\n").c_str());
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->transport.ack_coalesce_pkts, 64u) << "a larger window keeps the default";
  r = load("dpdk", write("e.toml", "[transport]\nwindow_pkts = 32\nack_coalesce_pkts = 32\n"
                                   "ack_coalesce_msgs = 4\n").c_str());
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->transport.ack_coalesce_pkts, 32u) << "a value set is kept";
  EXPECT_EQ(r.config->transport.ack_coalesce_msgs, 4u);
}

TEST_F(ConfigTest, CrossChecksBlameTheKeySetLast) {
  std::string p = path("bad.toml");
  EXPECT_EQ(error_of("[transport]\nrto_min_us = 5000\n"),
            p + ":2:14: key 'transport.rto_min_us': must not exceed 'transport.rto_initial_us' "
                "(1000), got 5000");
  EXPECT_HAS(error_of("[transport]\nack_coalesce_pkts = 64\nwindow_pkts = 32\n"), "key 'transport.ack_coalesce_pkts': must not exceed "
                        "'transport.window_pkts' (32), got 64 ('transport.window_pkts' set by " +
                        p + ":3:15)");
  // The pipe cannot be larger than the room to reorder in, whichever key moved last; left at
  // its default, the reorder window follows a larger window_pkts.
  EXPECT_EQ(error_of("[transport]\nwindow_pkts = 2048\nreorder_window_pkts = 1024\n"),
            p + ":2:15: key 'transport.window_pkts': must not exceed "
                "'transport.reorder_window_pkts' (1024), got 2048 ('transport.reorder_window_pkts' "
                "set by " + p + ":3:23)");
  EXPECT_HAS(error_of("[transport]\nwindow_pkts = 256\nreorder_window_pkts = 128\n"),
             "key 'transport.window_pkts': must not exceed 'transport.reorder_window_pkts' "
             "(128), got 256 ('transport.reorder_window_pkts' set by " + p + ":3:23)");
  EXPECT_HAS(error_of("[transport]\npeer_timeout_ms = 150\n"),
             "key 'transport.peer_timeout_ms': must be at least twice 'transport.rto_max_us' "
             "(100000 us), got 150 ms");
  EXPECT_HAS(error_of("[transport]\nrto_max_us = 6000000\n"),
             "key 'transport.rto_max_us': must be at most half 'transport.peer_timeout_ms' "
             "(10000 ms), got 6000000 us");
  EXPECT_HAS(error_of("[dpdk]\nmac = \"02:00:00:00:00:01\"\n"
                       "vdevs = [\"net_tap0\", \"net_tap1\"]\n"), "key 'dpdk.mac': a fixed MAC (02:00:00:00:00:01) would be given to all "
                        "2 vdevs");
  setenv("FI_DPDK_TRANSPORT_RTO_INITIAL_US", "50", 1);
  LoadResult r = load("dpdk");
  EXPECT_FALSE(r.config);
  EXPECT_EQ(r.error, "FI_DPDK_TRANSPORT_RTO_INITIAL_US: must not be below "
                     "'transport.rto_min_us' (1000), got 50");
}

// ---- environment ----------------------------------------------------------------------------------

TEST_F(ConfigTest, EnvNames) {
  EXPECT_EQ(env_name("dpdk", key("fault", "drop")), "FI_DPDK_FAULT_DROP");
  EXPECT_EQ(env_name("dpdk", key("dpdk", "mtu")), "FI_DPDK_MTU");
  EXPECT_EQ(env_name("dpdk", key("transport", "rto_min_us")), "FI_DPDK_TRANSPORT_RTO_MIN_US");
  EXPECT_EQ(env_name("dpdk", key("eal", "args")), "FI_DPDK_EAL_ARGS");
  EXPECT_EQ(env_name("udp", key("udp", "port")), "FI_UDP_PORT");
  EXPECT_EQ(env_name("udp", key("fault", "drop")), "FI_UDP_FAULT_DROP");
  EXPECT_EQ(env_name("udp", key("stats", "socket")), "FI_UDP_STATS_SOCKET");
  EXPECT_EQ(env_name("dpdk", key("stats", "socket")), "FI_DPDK_STATS_SOCKET");
  // No two keys a provider reads share a variable (dpdk.udp_port vs udp.port).
  for (const char* prov : {"dpdk", "udp"}) {
    std::set<std::string> names;
    for (const KeyInfo& k : schema())
      if (applies_to(prov, k)) {
        EXPECT_TRUE(names.insert(env_name(prov, k)).second) << k.key;
      }
  }
  EXPECT_FALSE(applies_to("udp", key("dpdk", "mtu")));
  EXPECT_FALSE(applies_to("dpdk", key("udp", "port")));
  EXPECT_TRUE(applies_to("udp", key("transport", "window_pkts")));
}

TEST_F(ConfigTest, EnvOverridesForDpdk) {
  std::string p = write("x.toml", "[dpdk]\nmtu = 1400\nburst = 16\n");
  setenv("FI_DPDK_MTU", "9000", 1);
  setenv("FI_DPDK_FAULT_DROP", "0.25", 1);
  setenv("FI_DPDK_TRANSPORT_RTO_MIN_US", "50", 1);
  setenv("FI_DPDK_EAL_ARGS", "--no-telemetry, --log-level=lib.eal:debug", 1);
  setenv("FI_DPDK_EAL_PIN_THREADS", "YES", 1);
  setenv("FI_DPDK_EAL_HUGE", "Off", 1);
  setenv("FI_DPDK_VDEVS", "net_tap0,iface=a,net_tap1,iface=b", 1);
  setenv("FI_DPDK_UDP_PORT", "4000", 1);  // dpdk.udp_port, not udp.port
  setenv("FI_DPDK_FAULT_SEED", "+7", 1);
  setenv("FI_DPDK_FAULT_PERIOD_MS", "250", 1);
  LoadResult r = load("dpdk", p.c_str());
  ASSERT_TRUE(r.config) << r.error;
  const Config& c = *r.config;
  EXPECT_EQ(c.source, p);
  EXPECT_EQ(c.dpdk.mtu, 9000u);  // environment beats the file
  EXPECT_EQ(c.dpdk.burst, 16u);  // the file beats the defaults
  EXPECT_EQ(c.fault.drop, 0.25);
  EXPECT_EQ(c.transport.rto_min_us, 50u);
  EXPECT_EQ(c.eal.args, (std::vector<std::string>{"--no-telemetry", "--log-level=lib.eal:debug"}));
  EXPECT_TRUE(c.eal.pin_threads);
  EXPECT_EQ(c.eal.huge, "off");
  EXPECT_EQ(c.dpdk.vdevs, (std::vector<std::string>{"net_tap0,iface=a", "net_tap1,iface=b"}));
  EXPECT_EQ(c.dpdk.udp_port, 4000);
  EXPECT_EQ(c.udp.port, 0);
  EXPECT_EQ(c.fault.seed, 7u);
  EXPECT_EQ(c.fault.period_ms, 250u);
}

TEST_F(ConfigTest, EnvOverridesForUdp) {
  setenv("FI_UDP_PORT", "5000", 1);
  setenv("FI_UDP_IFACE_IP", "10.1.2.3", 1);
  setenv("FI_UDP_FAULT_DROP", "1e-3", 1);
  setenv("FI_UDP_TRANSPORT_WINDOW_PKTS", "1024", 1);
  setenv("FI_UDP_SOCKET_BUFFER_BYTES", "65536", 1);
  setenv("FI_DPDK_MTU", "9000", 1);  // another provider's: ignored
  setenv("FI_UDP_STATS_SOCKET", "false", 1);
  LoadResult r = load("udp");
  ASSERT_TRUE(r.config) << r.error;
  const Config& c = *r.config;
  EXPECT_EQ(c.udp.port, 5000);
  EXPECT_EQ(c.udp.iface_ip, "10.1.2.3");
  EXPECT_EQ(c.fault.drop, 0.001);
  EXPECT_EQ(c.transport.window_pkts, 1024u);
  EXPECT_EQ(c.udp.socket_buffer_bytes, 65536u);
  EXPECT_EQ(c.dpdk.mtu, 1500u);
  EXPECT_FALSE(c.stats.socket);
}

TEST_F(ConfigTest, EnvListForms) {
  setenv("FI_DPDK_EAL_ARGS", R"(["-a", "x,y=1", "--z"])", 1);
  setenv("FI_DPDK_EAL_PCI_ALLOW", " 0000:01:00.0 , ,02:00.0,txq_inline=64 ", 1);
  setenv("FI_DPDK_VDEVS", "", 1);
  LoadResult r = load("dpdk");
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->eal.args, (std::vector<std::string>{"-a", "x,y=1", "--z"}));
  EXPECT_EQ(r.config->eal.pci_allow,
            (std::vector<std::string>{"0000:01:00.0", "02:00.0,txq_inline=64"}));
  EXPECT_TRUE(r.config->dpdk.vdevs.empty());
  setenv("FI_DPDK_EAL_ARGS", "[1, 2]", 1);
  r = load("dpdk");
  EXPECT_FALSE(r.config);
  EXPECT_EQ(r.error, "FI_DPDK_EAL_ARGS: must be a TOML array of strings, got '[1, 2]'");
}

TEST_F(ConfigTest, EnvErrorsNameTheVariable) {
  struct Case {
    const char* var;
    const char* value;
    const char* error;
  } cases[] = {
      {"FI_DPDK_FAULT_DROP", "2", "FI_DPDK_FAULT_DROP: must be a probability between 0 and 1, got 2"},
      {"FI_DPDK_FAULT_DROP", "lots", "FI_DPDK_FAULT_DROP: must be a number, got 'lots'"},
      {"FI_DPDK_MTU", "abc", "FI_DPDK_MTU: must be an integer, got 'abc'"},
      {"FI_DPDK_MTU", "1500.0", "FI_DPDK_MTU: must be an integer, got '1500.0'"},
      {"FI_DPDK_MTU", "", "FI_DPDK_MTU: must be an integer, got ''"},
      {"FI_DPDK_TRANSPORT_WINDOW_PKTS", "100",
       "FI_DPDK_TRANSPORT_WINDOW_PKTS: must be a power of two between 8 and 4096, got 100"},
      {"FI_DPDK_FAULT_SEED", "99999999999999999999",
       "FI_DPDK_FAULT_SEED: must be between 0 and 9223372036854775807, got 99999999999999999999"},
      {"FI_DPDK_EAL_PIN_THREADS", "maybe",
       "FI_DPDK_EAL_PIN_THREADS: must be a boolean (0/1, true/false, yes/no, on/off), got 'maybe'"},
      {"FI_DPDK_EAL_HUGE", "sometimes",
       "FI_DPDK_EAL_HUGE: must be one of auto, on, off, got 'sometimes'"},
      {"FI_UDP_PORT", "-1", "FI_UDP_PORT: must be between 0 and 65535, got -1"},
      {"FI_UDP_TRANSPORT_CLOCK", "hpet",
       "FI_UDP_TRANSPORT_CLOCK: must be one of auto, tsc, monotonic, got 'hpet'"},
  };
  for (const Case& c : cases) {
    clear_env();
    setenv(c.var, c.value, 1);
    LoadResult r = load(std::string_view(c.var).substr(3, 3) == "UDP" ? "udp" : "dpdk");
    EXPECT_FALSE(r.config) << c.var << "=" << c.value;
    EXPECT_EQ(r.error, c.error);
  }
}

TEST_F(ConfigTest, PollfabConfigSelectsTheFile) {
  std::string a = write("a.toml", "[dpdk]\nmtu = 1000\n");
  std::string b = write("b.toml", "[dpdk]\nmtu = 2000\n");
  setenv("POLLFAB_CONFIG", a.c_str(), 1);
  LoadResult r = load("dpdk");
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->source, a);
  EXPECT_EQ(r.config->dpdk.mtu, 1000u);
  r = load("dpdk", b.c_str());  // an explicit path wins
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->source, b);
  EXPECT_EQ(r.config->dpdk.mtu, 2000u);
  setenv("POLLFAB_CONFIG", path("missing.toml").c_str(), 1);
  r = load("dpdk");
  EXPECT_FALSE(r.config);
  EXPECT_HAS(r.error, path("missing.toml") + ": cannot open config file");
  setenv("POLLFAB_CONFIG", "", 1);  // empty = unset
  r = load("dpdk");
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->source, "defaults");
}

// ---- output ---------------------------------------------------------------------------------------

TEST_F(ConfigTest, ToTomlRoundTripsWithCommentsPerKey) {
  std::string p = write("x.toml", R"([eal]
args = ["a \"quoted\" arg", "back\\slash", "tab\there"]
netns = "ns1"
[dpdk]
vdevs = []
[fault]
corrupt = 0.0001
dup = 0.5
)");
  LoadResult r = load("dpdk", p.c_str());
  ASSERT_TRUE(r.config) << r.error;
  std::string text = to_toml(*r.config);
  EXPECT_HAS(text, "source: " + p);
  for (const KeyInfo& k : schema()) {
    // The key's line within its own section (several sections have a `port`).
    size_t sec = text.find("\n[" + std::string(k.section) + "]\n");
    ASSERT_NE(sec, std::string::npos) << k.section;
    size_t at = text.find("\n" + std::string(k.key) + " = ", sec);
    ASSERT_NE(at, std::string::npos) << k.key;
    size_t line = text.rfind('\n', at - 1);
    EXPECT_EQ(text.substr(line + 1, 2), "# ") << k.key;
    EXPECT_HAS(text.substr(line, at - line), k.help);
    if (*k.unit) {
      EXPECT_HAS(text.substr(line, at - line), k.unit);
    }
  }
  std::string q = write("y.toml", text);
  LoadResult r2 = load("dpdk", q.c_str());
  ASSERT_TRUE(r2.config) << r2.error << "\n" << text;
  Config c2 = *r2.config;
  c2.source = r.config->source;
  EXPECT_EQ(c2, *r.config);
}

TEST_F(ConfigTest, ValueText) {
  Config c;
  EXPECT_EQ(value_text(c, key("dpdk", "vdevs")), "[\"net_tap0,iface=pftap0\"]");
  EXPECT_EQ(value_text(c, key("eal", "huge")), "\"auto\"");
  EXPECT_EQ(value_text(c, key("fault", "drop")), "0.0");
  EXPECT_EQ(value_text(c, key("eal", "pin_threads")), "false");
  c.fault.drop = 0.5;
  KeyInfo copy = key("fault", "drop");  // a copy is found by name
  EXPECT_EQ(value_text(c, copy), "0.5");
  KeyInfo bogus{"dpdk", "nope", Type::Int, "0", "", "", 0, 1};
  EXPECT_EQ(value_text(c, bogus), "");
}

TEST_F(ConfigTest, LoadNeverThrows) {
  std::string p = write("junk.toml", std::string("\0\x01\x02[[[\n", 7));
  EXPECT_NO_THROW({
    LoadResult r = load("dpdk", p.c_str());
    EXPECT_FALSE(r.config);
    EXPECT_HAS(r.error, p);
  });
}

}  // namespace
}  // namespace pollfab::config
