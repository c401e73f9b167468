#include "apps/common/half_rtt.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pollfab::apps {

double percentile(std::vector<float>& v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * double(v.size())))];
}

HalfRttLog::~HalfRttLog() {
  if (f_) std::fclose(f_);
}

bool HalfRttLog::open(const std::string& path, std::string& err) {
  path_ = path;
  f_ = std::fopen(path.c_str(), "w");
  if (!f_) err = path + ": " + std::strerror(errno);
  return f_ != nullptr;
}

void HalfRttLog::write(size_t size, const std::vector<float>& half_rtt_us) noexcept {
  if (!f_) return;
  std::fprintf(f_, "# size %zu\n", size);
  for (float x : half_rtt_us) std::fprintf(f_, "%.3f\n", x);
}

bool HalfRttLog::close(std::string& err) {
  if (!f_) return true;
  const bool failed = std::ferror(f_) != 0;
  const int e = errno;
  const bool close_failed = std::fclose(f_) != 0;
  f_ = nullptr;
  if (failed || close_failed) {
    err = path_ + ": " + std::strerror(close_failed ? errno : e);
    return false;
  }
  return true;
}

}  // namespace pollfab::apps
