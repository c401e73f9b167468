// Half round trips of a ping-pong (`pollfab pingpong --lat`): their percentiles, and the
// --lat-log file that keeps every one of them. Units: microseconds.
// Thread-safety: none (one per ping-pong client).
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace pollfab::apps {

// The p-th percentile (0..100) of v (sorted in place); -1 if empty.
double percentile(std::vector<float>& v, double p);

// Every half round trip in iteration order, one a line ("%.3f"), after a "# size N" line per
// message size: where a warm-up or a stall happened in a run, which the percentiles hide.
class HalfRttLog {
 public:
  HalfRttLog() = default;
  HalfRttLog(const HalfRttLog&) = delete;
  HalfRttLog& operator=(const HalfRttLog&) = delete;
  ~HalfRttLog();
  // Creates or truncates path. False, with err naming the file and the reason, if it cannot.
  bool open(const std::string& path, std::string& err);
  bool is_open() const noexcept { return f_ != nullptr; }
  // Appends one size's half round trips (us); no-op if not open.
  void write(size_t size, const std::vector<float>& half_rtt_us) noexcept;
  // Flushes and closes. False, with err, if any write failed (a full disk): the file is short.
  bool close(std::string& err);

 private:
  FILE* f_ = nullptr;
  std::string path_;
};

}  // namespace pollfab::apps
