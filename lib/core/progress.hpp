// Progressable: something the application's calls drive forward under FI_PROGRESS_MANUAL
// (fi_domain(3) "Progress"): CQ and counter reads and data calls call progress().
#pragma once

namespace pollfab::core {

class Progressable {
 public:
  virtual ~Progressable() = default;
  // Polls the device, runs protocol timers, writes completions. Never blocks.
  virtual void progress() noexcept = 0;
};

}  // namespace pollfab::core
