#include "apps/common/proc.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "pollfab_build_config.h"

extern char** environ;

namespace pollfab::apps {
namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> v;
  for (const auto& s : argv) v.push_back(const_cast<char*>(s.c_str()));
  v.push_back(nullptr);
  return v;
}

int wait_status(pid_t pid) {
  int st = 0;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return 127;
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 127;
}

}  // namespace

int run_cmd(const std::vector<std::string>& argv, bool quiet) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (quiet) {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid;
  auto v = c_argv(argv);
  int r = posix_spawnp(&pid, v[0], &fa, nullptr, v.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (r != 0) return 127;
  return wait_status(pid);
}

int run_capture(const std::vector<std::string>& argv, std::string& out) {
  int fds[2];
  if (pipe(fds) != 0) return 127;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  pid_t pid;
  auto v = c_argv(argv);
  int r = posix_spawnp(&pid, v[0], &fa, nullptr, v.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (r != 0) {
    close(fds[0]);
    return 127;
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  return wait_status(pid);
}

int exec_cmd(const std::vector<std::string>& argv) {
  auto v = c_argv(argv);
  execvp(v[0], v.data());
  fprintf(stderr, "pollfab: cannot run %s: %s\n", v[0], strerror(errno));
  return 127;
}

std::string dropin_libdir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto build_lib = exe.parent_path().parent_path() / "abi";
    if (std::filesystem::exists(build_lib / "libfabric.so.1")) return build_lib.string();
  }
  if (std::filesystem::exists(std::string(POLLFAB_BUILD_LIBDIR) + "/libfabric.so.1"))
    return POLLFAB_BUILD_LIBDIR;
  return POLLFAB_INSTALL_LIBDIR;
}

void prepend_ld_library_path(const std::string& dir) {
  const char* old = getenv("LD_LIBRARY_PATH");
  std::string v = dir;
  if (old && *old) v += std::string(":") + old;
  setenv("LD_LIBRARY_PATH", v.c_str(), 1);
}

}  // namespace pollfab::apps
