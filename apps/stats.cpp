// `pollfab info --stats [--json] [PID...]`: the counters of running pollfab processes, read from
// their stats sockets (lib/core/stats_server.hpp). With PIDs, those processes; without, every
// process with a socket in the stats directories. A socket nobody listens on (the process is
// gone) is reported and skipped.
#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "apps/common/json.hpp"
#include "apps/info.hpp"
#include "lib/core/stats_server.hpp"

namespace pollfab::apps {
namespace {

bool is_socket(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// pid -> socket path, over every stats directory (the first directory wins for a pid).
std::map<long, std::string> find_sockets() {
  std::map<long, std::string> out;
  for (const std::string& dir : core::stats::socket_dirs()) {
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      long pid = strtol(e->d_name, &end, 10);
      if (pid <= 0 || !end || std::strcmp(end, ".sock") != 0) continue;
      std::string p = dir + "/" + e->d_name;
      if (is_socket(p)) out.emplace(pid, p);
    }
    closedir(d);
  }
  return out;
}

enum class Fetch { Ok, Stale, Error };

// Connects to path and reads the document. Stale: nothing listens there (the process is gone).
Fetch fetch(const std::string& path, std::string& doc, std::string& err) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) {
    err = "path too long";
    return Fetch::Error;
  }
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = strerror(errno);
    return Fetch::Error;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    int e = errno;
    close(fd);
    err = strerror(e);
    return (e == ECONNREFUSED || e == ENOENT) ? Fetch::Stale : Fetch::Error;
  }
  timeval tv{5, 0};  // the library answers at once; do not hang on a wedged process
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      doc.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno == EAGAIN ? std::string("no answer within 5 s") : std::string(strerror(errno));
      close(fd);
      return Fetch::Error;
    }
    break;
  }
  close(fd);
  if (doc.empty()) {
    err = "empty answer";
    return Fetch::Error;
  }
  return Fetch::Ok;
}

std::string num(const Json* v) {
  if (!v || v->is_null()) return "-";
  if (v->kind == Json::Kind::Bool) return v->boolean ? "true" : "false";
  if (v->kind == Json::Kind::String) return v->text;
  return v->text;
}

std::string usec(const Json* v) {
  if (!v || v->kind != Json::Kind::Number) return "-";
  return fmt::format("{:.1f}", double(v->u64()) / 1000.0);
}

// "name=value" pairs of an object's members, wrapped at ~100 columns, each line indented.
void print_members(const Json& obj, const char* indent) {
  std::string line;
  for (size_t i = 0; i < obj.keys.size(); ++i) {
    std::string item = fmt::format("{}={}", obj.keys[i], num(&obj.items[i]));
    if (!line.empty() && line.size() + 1 + item.size() > 96) {
      printf("%s%s\n", indent, line.c_str());
      line.clear();
    }
    line += (line.empty() ? "" : " ") + item;
  }
  if (!line.empty()) printf("%s%s\n", indent, line.c_str());
}

struct Column {
  const char* head;
  bool left;
};

void print_table(const std::vector<Column>& cols, const std::vector<std::vector<std::string>>& rows,
                 const char* indent) {
  std::vector<size_t> w(cols.size());
  for (size_t c = 0; c < cols.size(); ++c) {
    w[c] = std::strlen(cols[c].head);
    for (const auto& r : rows) w[c] = std::max(w[c], r[c].size());
  }
  auto line = [&](auto cell) {
    std::string s = indent;
    for (size_t c = 0; c < cols.size(); ++c) {
      std::string v = cell(c);
      if (c) s += "  ";
      std::string pad(w[c] - v.size(), ' ');
      s += cols[c].left ? v + (c + 1 < cols.size() ? pad : "") : pad + v;
    }
    printf("%s\n", s.c_str());
  };
  line([&](size_t c) { return std::string(cols[c].head); });
  for (const auto& r : rows) line([&](size_t c) { return r[c]; });
}

void print_peers(const Json& peers) {
  static const std::vector<Column> cols = {
      {"peer", true},  {"fi_addr", false}, {"state", true},   {"tx_pkts", false},
      {"tx_bytes", false}, {"rx_pkts", false}, {"rx_bytes", false}, {"retx", false},
      {"dup", false},  {"rtos", false},    {"srtt_us", false}, {"rttvar_us", false},
      {"rto_us", false}, {"cwnd", false},  {"inflight", false}, {"credits", false}};
  std::vector<std::vector<std::string>> rows;
  for (const Json& p : peers.items) {
    const Json* dead = p.get("dead");
    rows.push_back({num(p.get("addr")), num(p.get("fi_addr")),
                    dead && dead->boolean ? "dead" : "alive", num(p.get("tx_pkts")),
                    num(p.get("tx_bytes")), num(p.get("rx_pkts")), num(p.get("rx_bytes")),
                    num(p.get("retx_pkts")), num(p.get("dup_pkts")), num(p.get("rto_events")),
                    usec(p.get("srtt_ns")), usec(p.get("rttvar_ns")), usec(p.get("rto_ns")),
                    num(p.get("cwnd_pkts")), num(p.get("inflight_pkts")), num(p.get("credits_pkts"))});
  }
  print_table(cols, rows, "    ");
}

void print_doc(const Json& doc, const std::string& path) {
  printf("pid %s %s (%s)\n", num(doc.get("pid")).c_str(), num(doc.get("process")).c_str(),
         path.c_str());
  const Json* domains = doc.get("domains");
  if (!domains || domains->items.empty()) {
    printf("  no domain with an enabled endpoint\n");
    return;
  }
  for (const Json& d : domains->items) {
    printf("  domain %s (provider %s): dropped_unknown_ep=%s cm_dropped=%s cm_resets_tx=%s "
           "assist_runs=%s\n",
           num(d.get("domain")).c_str(), num(d.get("provider")).c_str(),
           num(d.get("dropped_unknown_ep")).c_str(), num(d.get("cm_dropped")).c_str(),
           num(d.get("cm_resets_tx")).c_str(), num(d.get("assist_runs")).c_str());
    if (const Json* io = d.get("io"); io && !io->keys.empty()) {
      printf("    io:\n");
      print_members(*io, "      ");
    }
    const Json* eps = d.get("endpoints");
    if (!eps || eps->items.empty()) printf("    no endpoints\n");
    if (!eps) continue;
    for (const Json& e : eps->items) {
      printf("  endpoint %s %s %s\n", num(e.get("id")).c_str(), num(e.get("type")).c_str(),
             num(e.get("name")).c_str());
      if (const Json* s = e.get("stats")) print_members(*s, "    ");
      const Json* peers = e.get("peers");
      if (peers && !peers->items.empty()) print_peers(*peers);
      else printf("    no peers\n");
    }
  }
}

// 0 ok, 1 failed, 2 stale.
int show(long pid, const std::string& path, bool json) {
  std::string doc, err;
  switch (fetch(path, doc, err)) {
    case Fetch::Stale:
      printf("pid %ld: stale stats socket %s (%s: the process is gone), skipped\n", pid,
             path.c_str(), err.c_str());
      return 2;
    case Fetch::Error:
      printf("pid %ld: %s: %s\n", pid, path.c_str(), err.c_str());
      return 1;
    case Fetch::Ok: break;
  }
  if (json) {
    fputs(doc.c_str(), stdout);
    if (doc.back() != '\n') putchar('\n');
    return 0;
  }
  Json j;
  if (!parse_json(doc, j, err)) {
    printf("pid %ld: %s: bad answer (%s)\n", pid, path.c_str(), err.c_str());
    return 1;
  }
  print_doc(j, path);
  return 0;
}

std::string dirs_text() {
  std::string s;
  for (const auto& d : core::stats::socket_dirs()) s += (s.empty() ? "" : ", ") + d;
  return s;
}

}  // namespace

int stats_main(const InfoArgs& a) {
  std::map<long, std::string> socks = find_sockets();
  int rc = 0;
  if (!a.pids.empty()) {
    bool first = true;
    for (long pid : a.pids) {
      if (!a.json && !first) printf("\n");
      first = false;
      auto it = socks.find(pid);
      if (it == socks.end()) {
        bool alive = kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
        printf("pid %ld: %s (searched %s)\n", pid,
               alive ? "no stats socket: not a pollfab process, no endpoint enabled yet, or "
                       "stats.socket = false"
                     : "no such process",
               dirs_text().c_str());
        rc = 1;
        continue;
      }
      if (show(pid, it->second, a.json) != 0) rc = 1;  // failed, or stale: that process is gone
    }
    return rc;
  }
  if (socks.empty()) {
    printf("no pollfab process with a stats socket (searched %s)\n", dirs_text().c_str());
    return 0;
  }
  bool first = true;
  for (const auto& [pid, path] : socks) {
    if (!a.json && !first) printf("\n");
    first = false;
    if (show(pid, path, a.json) == 1) rc = 1;  // stale sockets are skipped
  }
  return rc;
}

}  // namespace pollfab::apps
