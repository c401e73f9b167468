// copy_small: memcpy for the short copies of the message path (a 64-byte message into its
// bundle on send, out of it into the posted receive on delivery), inline and without a call.
// A libc memcpy call for 64 bytes was ~25 instructions a message on each side of the message
// rate (the call, its size dispatch and its return; docs/performance.md item 69); this is at
// most four 16-byte loads and stores that may overlap, chosen by two or three compares. The
// technique is DPDK's rte_memcpy (and libc's own for short sizes): copy the head and the
// tail of the range with fixed-size moves, which overlap in the middle when n is not a
// multiple of the move.
// dst and src must not overlap (as memcpy). Thread-safety: pure.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pollfab::util {

// The size copy_small takes; longer copies go to memcpy (copy_bytes).
inline constexpr size_t kSmallCopyMax = 64;

namespace detail {
template <size_t N>
[[gnu::always_inline]] inline void move_fixed(uint8_t* dst, const uint8_t* src) noexcept {
  uint8_t tmp[N];
  __builtin_memcpy(tmp, src, N);  // a fixed size: one load (and one store) of N bytes
  __builtin_memcpy(dst, tmp, N);
}
}  // namespace detail

// Copies n <= kSmallCopyMax bytes from src to dst.
[[gnu::always_inline]] inline void copy_small(uint8_t* dst, const uint8_t* src, size_t n) noexcept {
  using detail::move_fixed;
  if (n >= 16) {
    if (n > 32) {  // 33..64: the first 32 and the last 32
      move_fixed<16>(dst, src);
      move_fixed<16>(dst + 16, src + 16);
      move_fixed<16>(dst + n - 32, src + n - 32);
      move_fixed<16>(dst + n - 16, src + n - 16);
    } else {  // 16..32
      move_fixed<16>(dst, src);
      move_fixed<16>(dst + n - 16, src + n - 16);
    }
  } else if (n >= 8) {
    move_fixed<8>(dst, src);
    move_fixed<8>(dst + n - 8, src + n - 8);
  } else if (n >= 4) {
    move_fixed<4>(dst, src);
    move_fixed<4>(dst + n - 4, src + n - 4);
  } else if (n) {  // 1..3
    dst[0] = src[0];
    if (n > 1) move_fixed<2>(dst + n - 2, src + n - 2);
  }
}

// copy_bytes' longer copies: libc's memcpy, out of line (inlined, GCC's range analysis of a
// caller's length that is never long warns of impossible bounds, -Wstringop-overflow).
[[gnu::noinline]] inline void copy_long(void* dst, const void* src, size_t n) noexcept {
  std::memcpy(dst, src, n);
}

// memcpy, with the short sizes of the message path inline (copy_small).
[[gnu::always_inline]] inline void copy_bytes(void* dst, const void* src, size_t n) noexcept {
  if (n <= kSmallCopyMax) {
    copy_small(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n);
    return;
  }
  copy_long(dst, src, n);
}

}  // namespace pollfab::util
