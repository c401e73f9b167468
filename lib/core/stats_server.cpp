#include "lib/core/stats_server.hpp"

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
#include <mutex>

#include "lib/util/log.hpp"

namespace pollfab::core::stats {

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

void json_counters(std::string& out, const util::Counter* c, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    json_string(out, c[i].name);
    out += ':';
    out += fmt::format("{}", c[i].value);
  }
}

namespace {

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

  void attach(Source* s, const char* prov) noexcept {
    std::lock_guard<std::mutex> life(life_mu_);
    {
      std::lock_guard<std::mutex> g(reg_mu_);
      if (std::find(sources_.begin(), sources_.end(), s) == sources_.end()) {
        try {
          sources_.push_back(s);
        } catch (...) {
          return;
        }
      }
    }
    if (!running_ && !exiting_) start(prov);
  }

  void detach(Source* s) noexcept {
    std::lock_guard<std::mutex> life(life_mu_);
    bool empty;
    {
      std::lock_guard<std::mutex> g(reg_mu_);
      auto it = std::find(sources_.begin(), sources_.end(), s);
      if (it == sources_.end()) return;
      sources_.erase(it);
      empty = sources_.empty();
    }
    if (empty) stop();
  }

  void for_each(const std::function<void(Source*)>& f) {
    std::lock_guard<std::mutex> g(reg_mu_);
    for (Source* s : sources_) f(s);
  }

  std::string document() {
    std::string o;
    o.reserve(1024);
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    o += fmt::format("{{\"version\":1,\"pid\":{},\"process\":", getpid());
    json_string(o, program_invocation_short_name);
    o += fmt::format(",\"time_unix_ns\":{},\"domains\":[",
                     std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
    {
      std::lock_guard<std::mutex> g(reg_mu_);
      for (size_t i = 0; i < sources_.size(); ++i) {
        if (i) o += ',';
        sources_[i]->render_json(o);
      }
    }
    o += "]}\n";
    return o;
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
      doc = document();
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
  std::mutex reg_mu_;   // sources_
  std::vector<Source*> sources_;
  bool running_ = false;
  bool exiting_ = false;
  bool warned_ = false;
  pthread_t thread_{};
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  std::string path_;
};

// At exit: stop the thread and remove the socket (sources still registered are left as they are).
struct ExitHook {
  ~ExitHook() {
    if (Server::created_) Server::created_->at_exit();
  }
} g_exit_hook;

}  // namespace

std::string format_counters(const util::Counter* c, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += fmt::format("{}{}={}", i ? " " : "", c[i].name, c[i].value);
  return s;
}

void attach(Source* src, const char* prov) noexcept { Server::instance().attach(src, prov); }

void detach(Source* src) noexcept { Server::instance().detach(src); }

void for_each_source(const std::function<void(Source*)>& f) { Server::instance().for_each(f); }

std::string document() { return Server::instance().document(); }

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

}  // namespace pollfab::core::stats
