// PsnBitmap: one bit per PSN of a window, in a ring indexed by psn & (slots - 1), read 64 PSNs
// at a time. The receiver's reorder buffer marks what it holds (its SACK is word copies); the
// sender's SACK scoreboard marks what was SACKed (an ACK's SACK is compared word by word, and
// loss detection visits only the packets not SACKed). Shapes: slots is a power of two,
// 8..4096; the PSNs in use lie within one ring's span. Thread-safety: none. Allocation: at
// init and grow only.
#pragma once
#include <cstdint>
#include <memory>
#include <new>

#include "lib/util/seq.hpp"

namespace pollfab::transport {

class PsnBitmap {
 public:
  void init(uint32_t slots) {
    slots_ = slots;
    bits_ = std::make_unique<uint64_t[]>(words(slots));
  }
  uint32_t slots() const noexcept { return slots_; }
  bool test(util::Seq32 psn) const noexcept {
    const uint32_t i = psn.raw() & (slots_ - 1);
    return (bits_[i >> 6] >> (i & 63)) & 1;
  }
  void set(util::Seq32 psn) noexcept {
    const uint32_t i = psn.raw() & (slots_ - 1);
    bits_[i >> 6] |= 1ull << (i & 63);
  }
  void clear(util::Seq32 psn) noexcept {
    const uint32_t i = psn.raw() & (slots_ - 1);
    bits_[i >> 6] &= ~(1ull << (i & 63));
  }
  void clear_all() noexcept {
    for (uint32_t w = 0; w < words(slots_); ++w) bits_[w] = 0;
  }
  // The bits of the 64 PSNs from `from` on (bit i: from + i). Bits for PSNs past
  // from + slots - 1 are meaningless (they alias the ring's start, or read 0 in rings under 64
  // slots): the caller masks what lies beyond its span.
  uint64_t bits64(util::Seq32 from) const noexcept {
    const uint32_t pos = from.raw() & (slots_ - 1);
    if (slots_ < 64) {  // one partial word: rotate its `slots_` bits
      const uint64_t all = (1ull << slots_) - 1, w = bits_[0] & all;
      return ((w >> pos) | (w << (slots_ - pos))) & all;
    }
    const uint32_t wi = pos >> 6, sh = pos & 63;
    uint64_t v = bits_[wi] >> sh;
    if (sh) v |= bits_[(wi + 1) & (words(slots_) - 1)] << (64 - sh);
    return v;
  }
  // Calls f(ring index) for every set bit, in ring order.
  template <class F>
  void for_each_index(F&& f) const noexcept {
    for (uint32_t w = 0; w < words(slots_); ++w)
      for (uint64_t b = bits_[w]; b; b &= b - 1) f(w * 64 + uint32_t(__builtin_ctzll(b)));
  }
  // The PSN in [base, base + slots) whose bit is at ring index i.
  util::Seq32 psn_at(uint32_t i, util::Seq32 base) const noexcept {
    return base + ((i - base.raw()) & (slots_ - 1));
  }
  // Grows to `slots` (a larger power of two), keeping every set bit's PSN; the set PSNs lie in
  // [base, base + slots()). False (nothing changed) if memory is short.
  bool grow(uint32_t slots, util::Seq32 base) noexcept {
    PsnBitmap g = grown(slots, base);
    if (!g.slots()) return false;
    *this = std::move(g);
    return true;
  }
  // The same bits in a bitmap of `slots` (as grow), leaving this one as it is; slots() == 0 if
  // memory is short. (Two bitmaps grown together change both or neither.)
  PsnBitmap grown(uint32_t slots, util::Seq32 base) const noexcept {
    PsnBitmap g;
    g.bits_.reset(new (std::nothrow) uint64_t[words(slots)]());
    if (!g.bits_) return g;
    for_each_index([&](uint32_t i) {
      const uint32_t j = psn_at(i, base).raw() & (slots - 1);
      g.bits_[j >> 6] |= 1ull << (j & 63);
    });
    g.slots_ = slots;
    return g;
  }

 private:
  static uint32_t words(uint32_t slots) noexcept { return slots < 64 ? 1 : slots / 64; }
  std::unique_ptr<uint64_t[]> bits_;
  uint32_t slots_ = 0;
};

}  // namespace pollfab::transport
