// copy_bytes: memcpy for the copies of the message path, with the short ones (a 64-byte
// message into its bundle on send, out of it into the posted receive on delivery) inline and
// without a call. A libc memcpy call for 64 bytes was ~25 instructions a message on each side
// of the message rate (the call, its size dispatch and its return; docs/performance.md item
// 69); copy_small is at most four 16-byte loads, then as many stores, chosen by two to five
// compares. The technique is DPDK's rte_memcpy (and libc's own for short sizes): copy the
// head and the tail of the range with fixed-size moves, which overlap in the middle when n
// is not a multiple of the move.
// dst and src must not overlap (memcpy's rule; every load comes before the first store, so an
// overlap would still copy right, but nothing relies on it). Thread-safety: no shared state
// (the caller owns both ranges).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pollfab::util {

// The largest copy, in bytes, that copy_bytes makes inline (copy_small); longer ones call
// memcpy.
inline constexpr size_t kSmallCopyMaxBytes = 64;

namespace detail {
template <size_t N>
struct Chunk {
  uint8_t b[N];
};
template <size_t N>
[[gnu::always_inline]] inline Chunk<N> load(const uint8_t* src) noexcept {
  Chunk<N> c;
  __builtin_memcpy(c.b, src, N);  // a fixed size: one load of N bytes
  return c;
}
template <size_t N>
[[gnu::always_inline]] inline void store(uint8_t* dst, const Chunk<N>& c) noexcept {
  __builtin_memcpy(dst, c.b, N);
}
// Copies n bytes, N <= n <= 2N, as the first N and the last N (overlapping when n < 2N).
template <size_t N>
[[gnu::always_inline]] inline void head_tail(uint8_t* dst, const uint8_t* src, size_t n) noexcept {
  const Chunk<N> h = load<N>(src), t = load<N>(src + n - N);
  store<N>(dst, h);
  store<N>(dst + n - N, t);
}
}  // namespace detail

// Copies n bytes, n <= kSmallCopyMaxBytes, from src to dst (n 0: nothing). Larger n is a
// caller's error: trapped under -Ddebug_checks, else only the first and last 32 bytes move.
[[gnu::always_inline]] inline void copy_small(uint8_t* dst, const uint8_t* src, size_t n) noexcept {
  using namespace detail;
#if POLLFAB_DEBUG_CHECKS
  if (n > kSmallCopyMaxBytes) __builtin_trap();  // (meson -Ddebug_checks)
#endif
  if (n >= 16) {
    if (n > 32) {  // 33..64: the first 32 and the last 32
      const Chunk<16> a = load<16>(src), b = load<16>(src + 16), c = load<16>(src + n - 32),
                      d = load<16>(src + n - 16);
      store<16>(dst, a);
      store<16>(dst + 16, b);
      store<16>(dst + n - 32, c);
      store<16>(dst + n - 16, d);
    } else {
      head_tail<16>(dst, src, n);  // 16..32
    }
  } else if (n >= 8) {
    head_tail<8>(dst, src, n);
  } else if (n >= 4) {
    head_tail<4>(dst, src, n);
  } else if (n >= 2) {
    head_tail<2>(dst, src, n);
  } else if (n) {
    dst[0] = src[0];
  }
}

// copy_bytes' longer copies: libc's memcpy, out of line (inlined, GCC's range analysis of a
// caller's length that is never long warns of impossible bounds, -Wstringop-overflow).
[[gnu::noinline]] inline void copy_long(void* dst, const void* src, size_t n) noexcept {
  std::memcpy(dst, src, n);
}

// memcpy(dst, src, n) for ranges that do not overlap, with the short sizes inline
// (copy_small).
[[gnu::always_inline]] inline void copy_bytes(void* dst, const void* src, size_t n) noexcept {
  if (n <= kSmallCopyMaxBytes) {
    copy_small(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n);
    return;
  }
  copy_long(dst, src, n);
}

}  // namespace pollfab::util
