#include "lib/util/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace pollfab::util {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;

constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  return t;
}

constexpr auto kTables = make_tables();

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const void* data, size_t len,
                                                        uint32_t seed) noexcept {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t c = ~seed;
  while (len >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    len -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (len--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#else
const bool kHaveSse42 = false;
#endif

}  // namespace

uint32_t crc32c_sw(const void* data, size_t len, uint32_t seed) noexcept {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~seed;
  while (len >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;  // little-endian hosts (x86_64, aarch64)
    c = kTables[7][lo & 0xff] ^ kTables[6][(lo >> 8) & 0xff] ^ kTables[5][(lo >> 16) & 0xff] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xff] ^ kTables[2][(hi >> 8) & 0xff] ^
        kTables[1][(hi >> 16) & 0xff] ^ kTables[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len--) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
  return ~c;
}

uint32_t crc32c(const void* data, size_t len, uint32_t seed) noexcept {
#if defined(__x86_64__)
  if (kHaveSse42) return crc32c_sse42(data, len, seed);
#endif
  return crc32c_sw(data, len, seed);
}

bool crc32c_hw() noexcept { return kHaveSse42; }

}  // namespace pollfab::util
