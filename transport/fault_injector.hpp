// FaultInjector: the seeded decision source of the fault layer (transport/fault_io.hpp): what
// happens to each packet (pass, drop, duplicate, reorder, corrupt).
//
// Probabilities are in [0, 1]. Decisions come from one std::mt19937_64 seeded with `seed`, so a
// run is replayable from (seed, probabilities, packet sequence). When only drop is configured
// (the loss benchmarks), the gap to the next drop is drawn once per drop (geometric, by
// inversion) instead of a draw per packet: the same distribution, and the layer costs a
// counter per packet, so a benchmark measures the protocol's recovery, not the instrument.
// Thread-safety: none.
#pragma once
#include <cmath>
#include <cstdint>
#include <random>

namespace pollfab::transport {

struct FaultConfig {
  double drop = 0.0;
  double dup = 0.0;
  double reorder = 0.0;
  double corrupt = 0.0;
  uint64_t seed = 1;
  bool any() const noexcept { return drop > 0 || dup > 0 || reorder > 0 || corrupt > 0; }
};

struct FaultStats {
  uint64_t seen = 0, dropped = 0, duplicated = 0, reordered = 0, corrupted = 0;
};

class FaultInjector {
 public:
  enum class Action : uint8_t { Pass, Drop, Duplicate, Reorder, Corrupt };

  FaultInjector() : FaultInjector(FaultConfig{}) {}
  explicit FaultInjector(const FaultConfig& cfg) : cfg_(cfg), rng_(cfg.seed) {}

  const FaultConfig& config() const noexcept { return cfg_; }
  const FaultStats& stats() const noexcept { return stats_; }
  bool enabled() const noexcept { return cfg_.any(); }

  // Decides what happens to the next packet.
  Action next() noexcept { return next(cfg_); }
  // Same, with the probabilities of `p` (its seed is ignored: decisions still come from this
  // injector's generator, so a run with time-varying probabilities stays replayable).
  Action next(const FaultConfig& p) noexcept {
    ++stats_.seen;
    if (p.dup == 0 && p.reorder == 0 && p.corrupt == 0 && p.drop == cfg_.drop && p.drop > 0) {
      if (gap_ < 0) gap_ = next_gap();  // passes before the next drop
      if (gap_ > 0) {
        --gap_;
        return Action::Pass;
      }
      gap_ = next_gap();
      ++stats_.dropped;
      return Action::Drop;
    }
    double r = uni_(rng_);
    if (r < p.drop) { ++stats_.dropped; return Action::Drop; }
    r -= p.drop;
    if (r < p.dup) { ++stats_.duplicated; return Action::Duplicate; }
    r -= p.dup;
    if (r < p.reorder) { ++stats_.reordered; return Action::Reorder; }
    r -= p.reorder;
    if (r < p.corrupt) { ++stats_.corrupted; return Action::Corrupt; }
    return Action::Pass;
  }
  // How many later packets a reordered one waits for (1..4).
  uint32_t reorder_distance() noexcept { return 1 + static_cast<uint32_t>(rng_() % 4); }
  // A byte index < len to corrupt, and a non-zero XOR mask.
  uint32_t corrupt_index(uint32_t len) noexcept { return len ? static_cast<uint32_t>(rng_() % len) : 0; }
  uint8_t corrupt_mask() noexcept { return static_cast<uint8_t>(1u << (rng_() % 8)); }

 private:
  // Packets before the next drop at probability cfg_.drop: floor(ln u / ln(1 - p)), u in (0, 1].
  int64_t next_gap() noexcept {
    if (cfg_.drop >= 1) return 0;
    const double u = 1.0 - uni_(rng_);  // (0, 1]
    const double g = std::floor(std::log(u) / std::log1p(-cfg_.drop));
    return g < 1e15 ? static_cast<int64_t>(g) : int64_t(1e15);
  }

  FaultConfig cfg_;
  std::mt19937_64 rng_;
  int64_t gap_ = -1;  // drop-only: passes left before the next drop (-1: not drawn yet)
  std::uniform_real_distribution<double> uni_{0.0, 1.0};
  FaultStats stats_;
};

}  // namespace pollfab::transport
