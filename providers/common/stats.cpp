#include "providers/common/stats.hpp"

#include <dirent.h>
#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <mutex>

#include "lib/core/fabric.hpp"
#include "lib/core/provider.hpp"
#include "lib/util/log.hpp"
#include "providers/common/domain.hpp"

namespace pollfab::providers::stats {

using transport::EngineStats;
using transport::PeerStats;

namespace {

struct EngineField {
  const char* name;
  uint64_t EngineStats::*member;
};

constexpr EngineField kEngineFields[] = {
    {"tx_pkts", &EngineStats::tx_pkts},
    {"tx_bytes", &EngineStats::tx_bytes},
    {"rx_pkts", &EngineStats::rx_pkts},
    {"rx_bytes", &EngineStats::rx_bytes},
    {"retx_pkts", &EngineStats::retx_pkts},
    {"rto_events", &EngineStats::rto_events},
    {"fast_retx_events", &EngineStats::fast_retx_events},
    {"acks_tx", &EngineStats::acks_tx},
    {"acks_rx", &EngineStats::acks_rx},
    {"dup_pkts", &EngineStats::dup_pkts},
    {"ooo_pkts", &EngineStats::ooo_pkts},
    {"drop_window", &EngineStats::drop_window},
    {"drop_unexpected_full", &EngineStats::drop_unexpected_full},
    {"drop_no_recv", &EngineStats::drop_no_recv},
    {"drop_stale_epoch", &EngineStats::drop_stale_epoch},
    {"drop_unknown_peer", &EngineStats::drop_unknown_peer},
    {"drop_protocol", &EngineStats::drop_protocol},
    {"peer_resets", &EngineStats::peer_resets},
    {"peers_dead", &EngineStats::peers_dead},
    {"probes_tx", &EngineStats::probes_tx},
    {"drop_dead_peer", &EngineStats::drop_dead_peer},
    {"srtt_ns", &EngineStats::srtt_ns},
    {"drop_checksum", &EngineStats::drop_checksum},
    {"credit_stalls", &EngineStats::credit_stalls},
    {"credit_probes", &EngineStats::credit_probes},
    {"cc_decreases", &EngineStats::cc_decreases},
    {"rack_retx_events", &EngineStats::rack_retx_events},
    {"zc_tx_pkts", &EngineStats::zc_tx_pkts},
};
// A counter added to EngineStats must be added above too (it would be missing from the socket
// and the close-time log otherwise).
static_assert(sizeof(EngineStats) == std::size(kEngineFields) * sizeof(uint64_t),
              "EngineStats changed: update kEngineFields in providers/common/stats.cpp");
static_assert(std::size(kEngineFields) <= kMaxCounters);

void json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += ch;
    }
  }
  out += '"';
}

void json_counters(std::string& out, const Counter* c, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    json_string(out, c[i].name);
    out += ':';
    out += fmt::format("{}", c[i].value);
  }
}

// ---- socket directory ----------------------------------------------------------------------

// A real directory, owned by us or root, not writable by others, and writable by us.
bool usable_dir(const std::string& dir) noexcept {
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  if (st.st_uid != geteuid() && st.st_uid != 0) return false;
  if (st.st_mode & S_IWOTH) return false;
  return access(dir.c_str(), W_OK | X_OK) == 0;
}

bool make_dir(const std::string& dir, mode_t mode) noexcept {
  if (mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) return false;
  return usable_dir(dir);
}

std::string xdg_dir() {
  const char* x = getenv("XDG_RUNTIME_DIR");
  return (x && *x == '/') ? std::string(x) + "/pollfab-stats" : std::string();
}

std::string tmp_dir() { return fmt::format("/tmp/pollfab-stats-{}", geteuid()); }

constexpr const char* kRunDir = "/run/pollfab/stats";

// The directory for this process's socket, created if needed; "" if none is usable.
std::string pick_dir() {
  if (make_dir("/run/pollfab", 0755) && make_dir(kRunDir, 0755)) return kRunDir;
  std::string x = xdg_dir();
  if (!x.empty() && make_dir(x, 0700)) return x;
  std::string t = tmp_dir();
  if (make_dir(t, 0700)) return t;
  return {};
}

bool fill_sockaddr(const std::string& path, sockaddr_un& sa) noexcept {
  std::memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) return false;
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  return true;
}

// True if nothing listens on the socket at path (connect refused).
bool refused(const std::string& path) noexcept {
  sockaddr_un sa;
  if (!fill_sockaddr(path, sa)) return false;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool r = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 && errno == ECONNREFUSED;
  close(fd);
  return r;
}

// Removes <pid>.sock files of processes that no longer exist (and on which nothing listens).
void sweep_stale(const std::string& dir) noexcept {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = strtol(e->d_name, &end, 10);
    if (pid <= 0 || !end || std::strcmp(end, ".sock") != 0 || pid == getpid()) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::string p = dir + "/" + e->d_name;
    struct stat st;
    if (lstat(p.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) continue;
    if (refused(p)) unlink(p.c_str());
  }
  closedir(d);
}

// ---- the server ----------------------------------------------------------------------------

// Never destroyed (calls may come from other static destructors at exit); the socket and the
// thread are released by an exit hook (ExitHook below) or when the last domain closes.
class Server {
 public:
  Server() { pthread_atfork(&Server::prepare, &Server::parent, &Server::child); }

  void endpoint_enabled(TransportDomain* d) noexcept {
    std::lock_guard<std::mutex> life(life_mu_);
    {
      std::lock_guard<std::mutex> g(reg_mu_);
      if (std::find(domains_.begin(), domains_.end(), d) == domains_.end()) {
        try {
          domains_.push_back(d);
        } catch (...) {
          return;
        }
      }
    }
    if (!running_ && !exiting_) start(d->fabric()->provider()->name());
  }

  void domain_closing(TransportDomain* d) noexcept {
    std::lock_guard<std::mutex> life(life_mu_);
    bool empty;
    {
      std::lock_guard<std::mutex> g(reg_mu_);
      auto it = std::find(domains_.begin(), domains_.end(), d);
      if (it == domains_.end()) return;
      domains_.erase(it);
      empty = domains_.empty();
    }
    if (empty) stop();
  }

  std::vector<DomainSnapshot> snapshot_all() {
    std::vector<DomainSnapshot> out;
    std::lock_guard<std::mutex> g(reg_mu_);
    out.resize(domains_.size());
    for (size_t i = 0; i < domains_.size(); ++i) domains_[i]->snapshot(out[i]);
    return out;
  }

  std::string path() {
    std::lock_guard<std::mutex> life(life_mu_);
    return running_ ? path_ : std::string();
  }

  void at_exit() noexcept {
    std::lock_guard<std::mutex> life(life_mu_);
    exiting_ = true;
    stop(/*bounded=*/true);
  }

 private:
  // life_mu_ held.
  void start(const char* prov) noexcept {
    try {
      std::string dir = pick_dir();
      if (dir.empty()) {
        warn_once(prov, "no usable directory (tried /run/pollfab/stats, $XDG_RUNTIME_DIR/pollfab-stats, " +
                  tmp_dir() + ")");
        return;
      }
      sweep_stale(dir);
      std::string path = fmt::format("{}/{}.sock", dir, getpid());
      sockaddr_un sa;
      if (!fill_sockaddr(path, sa)) {
        warn_once(prov, path + ": path too long");
        return;
      }
      struct stat st;
      if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path.c_str());  // pid reuse
      int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        warn_once(prov, fmt::format("socket: {}", strerror(errno)));
        return;
      }
      if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(fd, 16) != 0) {
        warn_once(prov, fmt::format("{}: {}", path, strerror(errno)));
        close(fd);
        return;
      }
      chmod(path.c_str(), 0600);
      int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
      if (wake < 0) {
        warn_once(prov, fmt::format("eventfd: {}", strerror(errno)));
        close(fd);
        unlink(path.c_str());
        return;
      }
      listen_fd_ = fd;
      wake_fd_ = wake;
      path_ = path;
      // The thread must not take signals meant for the application.
      sigset_t all, old;
      sigfillset(&all);
      pthread_sigmask(SIG_SETMASK, &all, &old);
      int r = pthread_create(&thread_, nullptr, &Server::main_tramp, this);
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
      if (r != 0) {
        warn_once(prov, fmt::format("pthread_create: {}", strerror(r)));
        release_fds();
        return;
      }
      running_ = true;
      PF_LOG(prov, Info, Core, "stats socket {} (pollfab info --stats {})", path_, getpid());
    } catch (...) {
      warn_once(prov, "out of memory");
    }
  }

  // life_mu_ held. bounded (at exit): wait at most 1 s for the thread (it could be waiting for
  // a domain lock that an exiting thread holds); the socket is removed either way.
  void stop(bool bounded = false) noexcept {
    if (!running_) return;
    uint64_t one = 1;
    ssize_t w = write(wake_fd_, &one, sizeof one);
    (void)w;
    running_ = false;
    if (bounded) {
      timespec deadline;
      clock_gettime(CLOCK_REALTIME, &deadline);
      deadline.tv_sec += 1;
      if (pthread_timedjoin_np(thread_, nullptr, &deadline) != 0) {
        if (!path_.empty()) unlink(path_.c_str());
        return;  // the thread still uses the fds; the process is ending
      }
    } else {
      pthread_join(thread_, nullptr);
    }
    release_fds();
  }

  void release_fds() noexcept {
    if (listen_fd_ >= 0) close(listen_fd_);
    if (wake_fd_ >= 0) close(wake_fd_);
    listen_fd_ = wake_fd_ = -1;
    if (!path_.empty()) unlink(path_.c_str());
    path_.clear();
  }

  void warn_once(const char* prov, const std::string& why) noexcept {
    if (warned_) return;
    warned_ = true;
    PF_LOG(prov, Warn, Core, "stats socket disabled: {} (pollfab info --stats cannot reach this process)",
           why);
  }

  static void* main_tramp(void* self) {
    static_cast<Server*>(self)->main();
    return nullptr;
  }

  void main() noexcept {
    pthread_setname_np(pthread_self(), "pollfab-stats");
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (;;) {
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[0].revents) return;
      if (!(fds[1].revents & POLLIN)) continue;
      int c = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      serve(c);
      close(c);
    }
  }

  void serve(int fd) noexcept {
    std::string doc;
    try {
      doc = render_json(snapshot_all());
    } catch (...) {
      doc = "{\"version\":1,\"error\":\"out of memory\"}\n";
    }
    // A client that stops reading cannot hold the thread (and thus a closing domain) for long.
    timeval tv{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    size_t off = 0;
    while (off < doc.size()) {
      ssize_t n = send(fd, doc.data() + off, doc.size() - off, MSG_NOSIGNAL);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        break;
      }
      off += static_cast<size_t>(n);
    }
  }

  // fork(): the child has no serving thread; it forgets the parent's (and its socket file) and
  // starts its own when it enables an endpoint.
  static void prepare() {
    instance().life_mu_.lock();
    instance().reg_mu_.lock();
  }
  static void parent() {
    instance().reg_mu_.unlock();
    instance().life_mu_.unlock();
  }
  static void child() {
    Server& s = instance();
    if (s.running_) {
      close(s.listen_fd_);
      close(s.wake_fd_);
      s.listen_fd_ = s.wake_fd_ = -1;
      s.path_.clear();
      s.running_ = false;
    }
    s.reg_mu_.unlock();
    s.life_mu_.unlock();
  }

 public:
  static Server& instance() {
    static Server* s = created_ = new Server;
    return *s;
  }
  static inline Server* created_ = nullptr;  // for the exit hook: null if never used

 private:
  std::mutex life_mu_;  // start/stop
  std::mutex reg_mu_;   // domains_
  std::vector<TransportDomain*> domains_;
  bool running_ = false;
  bool exiting_ = false;
  bool warned_ = false;
  pthread_t thread_{};
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  std::string path_;
};

// At exit: stop the thread and remove the socket (domains still open are left as they are).
struct ExitHook {
  ~ExitHook() {
    if (Server::created_) Server::created_->at_exit();
  }
} g_exit_hook;

}  // namespace

size_t engine_counters(const EngineStats& s, Counter* out) noexcept {
  size_t n = 0;
  for (const EngineField& f : kEngineFields) out[n++] = {f.name, s.*f.member};
  return n;
}

size_t peer_counters(const PeerStats& s, Counter* out) noexcept {
  size_t n = 0;
  out[n++] = {"remote_epoch", s.remote_epoch};
  out[n++] = {"tx_pkts", s.tx_pkts};
  out[n++] = {"tx_bytes", s.tx_bytes};
  out[n++] = {"rx_pkts", s.rx_pkts};
  out[n++] = {"rx_bytes", s.rx_bytes};
  out[n++] = {"retx_pkts", s.retx_pkts};
  out[n++] = {"dup_pkts", s.dup_pkts};
  out[n++] = {"rto_events", s.rto_events};
  out[n++] = {"srtt_ns", s.srtt_ns};
  out[n++] = {"rttvar_ns", s.rttvar_ns};
  out[n++] = {"rto_ns", s.rto_ns};
  out[n++] = {"min_rtt_ns", s.min_rtt_ns};
  out[n++] = {"cwnd_pkts", s.cwnd_pkts};
  out[n++] = {"inflight_pkts", s.inflight_pkts};
  out[n++] = {"credits_pkts", s.credits_pkts};
  return n;
}

std::string format_counters(const Counter* c, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += fmt::format("{}{}={}", i ? " " : "", c[i].name, c[i].value);
  return s;
}

std::string address_str(const Name& n) {
  if (n.kind == NameKind::Udp)
    return fmt::format("fi_udp://{}.{}.{}.{}:{}/{}", n.ipv4 >> 24, (n.ipv4 >> 16) & 0xff,
                       (n.ipv4 >> 8) & 0xff, n.ipv4 & 0xff, n.udp_port, n.ep_id);
  return n.str();
}

std::string address_str(NameKind kind, const transport::PeerAddr& a) {
  return address_str(Name::from_host(kind, a.host, a.ep_id));
}

std::string render_json(const std::vector<DomainSnapshot>& domains) {
  std::string o;
  o.reserve(1024);
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  o += fmt::format("{{\"version\":1,\"pid\":{},\"process\":", getpid());
  json_string(o, program_invocation_short_name);
  o += fmt::format(",\"time_unix_ns\":{},\"domains\":[",
                   std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
  Counter c[kMaxCounters];
  for (size_t di = 0; di < domains.size(); ++di) {
    const DomainSnapshot& d = domains[di];
    o += di ? ",{" : "{";
    o += "\"provider\":";
    json_string(o, d.provider);
    o += ",\"domain\":";
    json_string(o, d.domain);
    o += ",\"io\":{";
    json_counters(o, d.io, d.io_count);
    o += fmt::format("}},\"dropped_unknown_ep\":{},\"assist_runs\":{},\"endpoints\":[",
                     d.dropped_unknown_ep, d.assist_runs);
    for (size_t ei = 0; ei < d.endpoints.size(); ++ei) {
      const EndpointSnapshot& e = d.endpoints[ei];
      o += fmt::format("{}{{\"id\":{},\"type\":\"{}\",\"name\":", ei ? "," : "", e.id,
                       e.reliable ? "rdm" : "dgram");
      json_string(o, address_str(e.name));
      o += ",\"stats\":{";
      json_counters(o, c, engine_counters(e.engine, c));
      o += "},\"peers\":[";
      for (size_t pi = 0; pi < e.peers.size(); ++pi) {
        const PeerStats& p = e.peers[pi];
        o += pi ? ",{\"addr\":" : "{\"addr\":";
        json_string(o, address_str(d.kind, p.addr));
        if (p.user == ~0ull)
          o += ",\"fi_addr\":null";
        else
          o += fmt::format(",\"fi_addr\":{}", p.user);
        o += p.dead ? ",\"dead\":true," : ",\"dead\":false,";
        json_counters(o, c, peer_counters(p, c));
        o += '}';
      }
      o += "]}";
    }
    o += "]}";
  }
  o += "]}\n";
  return o;
}

void endpoint_enabled(TransportDomain* d) noexcept {
  if (!d->config().stats.socket) return;
  Server::instance().endpoint_enabled(d);
}

void domain_closing(TransportDomain* d) noexcept { Server::instance().domain_closing(d); }

std::vector<DomainSnapshot> snapshot_all() { return Server::instance().snapshot_all(); }

std::string socket_path() { return Server::instance().path(); }

std::vector<std::string> socket_dirs() {
  std::vector<std::string> dirs{kRunDir};
  if (std::string x = xdg_dir(); !x.empty()) dirs.push_back(x);
  dirs.push_back(tmp_dir());
  if (geteuid() == 0) {
    auto scan = [&](const char* parent, const char* prefix, const char* suffix) {
      DIR* d = opendir(parent);
      if (!d) return;
      while (dirent* e = readdir(d)) {
        if (std::strncmp(e->d_name, prefix, std::strlen(prefix)) != 0 || e->d_name[0] == '.')
          continue;
        dirs.push_back(fmt::format("{}/{}{}", parent, e->d_name, suffix));
      }
      closedir(d);
    };
    scan("/run/user", "", "/pollfab-stats");
    scan("/tmp", "pollfab-stats-", "");
  }
  std::sort(dirs.begin() + 1, dirs.end());
  dirs.erase(std::unique(dirs.begin() + 1, dirs.end()), dirs.end());
  return dirs;
}

}  // namespace pollfab::providers::stats
