// Seq32: a 32-bit sequence number (PSN) with modular (serial number) comparison, RFC 1982 style.
//
// Invariant: two sequence numbers compared are less than 2^31 apart, which the transport
// guarantees because windows are at most a few thousand packets.
#pragma once
#include <cstdint>

namespace pollfab::util {

class Seq32 {
 public:
  constexpr Seq32() noexcept = default;
  constexpr explicit Seq32(uint32_t v) noexcept : v_(v) {}
  constexpr uint32_t raw() const noexcept { return v_; }

  constexpr Seq32 operator+(uint32_t n) const noexcept { return Seq32(v_ + n); }
  constexpr Seq32 operator-(uint32_t n) const noexcept { return Seq32(v_ - n); }
  constexpr Seq32& operator++() noexcept { ++v_; return *this; }
  constexpr Seq32& operator+=(uint32_t n) noexcept { v_ += n; return *this; }
  // Distance a - b, as a signed number (valid while |a-b| < 2^31).
  friend constexpr int32_t operator-(Seq32 a, Seq32 b) noexcept {
    return static_cast<int32_t>(a.v_ - b.v_);
  }
  friend constexpr bool operator==(Seq32 a, Seq32 b) noexcept { return a.v_ == b.v_; }
  friend constexpr bool operator<(Seq32 a, Seq32 b) noexcept { return (a - b) < 0; }
  friend constexpr bool operator<=(Seq32 a, Seq32 b) noexcept { return (a - b) <= 0; }
  friend constexpr bool operator>(Seq32 a, Seq32 b) noexcept { return (a - b) > 0; }
  friend constexpr bool operator>=(Seq32 a, Seq32 b) noexcept { return (a - b) >= 0; }

 private:
  uint32_t v_ = 0;
};

}  // namespace pollfab::util
