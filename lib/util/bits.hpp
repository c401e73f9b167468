// Small bit and alignment helpers.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>

namespace pollfab::util {

constexpr uint32_t next_pow2(uint32_t v) noexcept { return v <= 1 ? 1 : std::bit_ceil(v); }
constexpr size_t align_up(size_t v, size_t a) noexcept { return (v + a - 1) & ~(a - 1); }

// Big-endian loads and stores (wire format helpers); memcpy-free, compile to bswap.
inline void store_be16(uint8_t* p, uint16_t v) noexcept { p[0] = uint8_t(v >> 8); p[1] = uint8_t(v); }
inline void store_be32(uint8_t* p, uint32_t v) noexcept {
  p[0] = uint8_t(v >> 24); p[1] = uint8_t(v >> 16); p[2] = uint8_t(v >> 8); p[3] = uint8_t(v);
}
inline void store_be64(uint8_t* p, uint64_t v) noexcept {
  store_be32(p, uint32_t(v >> 32)); store_be32(p + 4, uint32_t(v));
}
inline uint16_t load_be16(const uint8_t* p) noexcept { return uint16_t((p[0] << 8) | p[1]); }
inline uint32_t load_be32(const uint8_t* p) noexcept {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}
inline uint64_t load_be64(const uint8_t* p) noexcept {
  return (uint64_t(load_be32(p)) << 32) | load_be32(p + 4);
}

}  // namespace pollfab::util
