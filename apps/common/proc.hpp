// Process helpers for the pollfab command: run a command and wait, exec a command, find the
// drop-in library directory.
#pragma once
#include <string>
#include <vector>

namespace pollfab::apps {

// Runs argv (PATH lookup) and waits; returns its exit status (128+signal if killed, 127 if it
// could not start). stdout/stderr are inherited unless quiet (then sent to /dev/null).
int run_cmd(const std::vector<std::string>& argv, bool quiet = false);
// Like run_cmd, but returns the command's standard output.
int run_capture(const std::vector<std::string>& argv, std::string& out);
// Replaces the process with argv; returns only on failure (127).
int exec_cmd(const std::vector<std::string>& argv);
// Directory holding pollfab's drop-in libfabric.so.1 (build tree or install tree).
std::string dropin_libdir();
// Prepends dir to LD_LIBRARY_PATH in this process's environment.
void prepend_ld_library_path(const std::string& dir);

}  // namespace pollfab::apps
