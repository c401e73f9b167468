// Small bit and alignment helpers.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pollfab::util {

constexpr uint32_t next_pow2(uint32_t v) noexcept { return v <= 1 ? 1 : std::bit_ceil(v); }
constexpr size_t align_up(size_t v, size_t a) noexcept { return (v + a - 1) & ~(a - 1); }

// Big-endian loads and stores (wire format helpers) at any alignment: one unaligned move and
// a byte swap each. (Written as byte stores before, GCC merged most but not all of them: two
// neighbouring 32-bit fields of the packet header cost ~20 instructions in byte moves.)
// v in big-endian byte order (or back: the swap is its own inverse).
template <class T>
constexpr T to_from_be(T v) noexcept {
  if constexpr (std::endian::native == std::endian::big) return v;
  else if constexpr (sizeof(T) == 2) return __builtin_bswap16(v);
  else if constexpr (sizeof(T) == 4) return __builtin_bswap32(v);
  else return __builtin_bswap64(v);
}
template <class T>
void store_be(uint8_t* p, T v) noexcept {
  v = to_from_be(v);
  std::memcpy(p, &v, sizeof v);
}
template <class T>
T load_be(const uint8_t* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return to_from_be(v);
}
inline void store_be16(uint8_t* p, uint16_t v) noexcept { store_be(p, v); }
inline void store_be32(uint8_t* p, uint32_t v) noexcept { store_be(p, v); }
inline void store_be64(uint8_t* p, uint64_t v) noexcept { store_be(p, v); }
inline uint16_t load_be16(const uint8_t* p) noexcept { return load_be<uint16_t>(p); }
inline uint32_t load_be32(const uint8_t* p) noexcept { return load_be<uint32_t>(p); }
inline uint64_t load_be64(const uint8_t* p) noexcept { return load_be<uint64_t>(p); }

}  // namespace pollfab::util
