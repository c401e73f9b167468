// Scatter/gather helpers over an iovec list (the transport's view of application buffers).
// Offsets and lengths in bytes; copies are clipped to the list. Thread-safety: pure.
#pragma once
#include <sys/uio.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "lib/util/small_copy.hpp"

namespace pollfab::transport {

// copy_to_iov's walk over several entries (out of line: the one-buffer case inlined stays
// free of the walk's registers).
[[gnu::noinline]] inline void copy_to_iov_walk(const iovec* iov, uint32_t cnt, uint64_t off,
                                               const uint8_t* src, uint64_t len) noexcept {
  for (uint32_t i = 0; i < cnt && len; ++i) {
    if (off >= iov[i].iov_len) { off -= iov[i].iov_len; continue; }
    uint64_t n = std::min<uint64_t>(len, iov[i].iov_len - off);
    std::memcpy(static_cast<uint8_t*>(iov[i].iov_base) + off, src, n);
    src += n; len -= n; off = 0;
  }
}

// Copies len bytes from src into the iov list at byte offset off (clipped to the iov). One
// buffer: inline, short copies without a call (util::copy_bytes).
inline void copy_to_iov(const iovec* iov, uint32_t cnt, uint64_t off, const uint8_t* src,
                        uint64_t len) noexcept {
  if (cnt == 1 && off + len <= iov[0].iov_len) [[likely]] {  // one buffer: no walk
    util::copy_bytes(static_cast<uint8_t*>(iov[0].iov_base) + off, src, len);  // (len may be 0)
    return;
  }
  copy_to_iov_walk(iov, cnt, off, src, len);
}

// copy_from_iov's walk over several entries (out of line, as copy_to_iov_walk).
[[gnu::noinline]] inline void copy_from_iov_walk(const iovec* iov, uint32_t cnt, uint64_t off,
                                                 uint8_t* dst, uint64_t len) noexcept {
  for (uint32_t i = 0; i < cnt && len; ++i) {
    if (off >= iov[i].iov_len) { off -= iov[i].iov_len; continue; }
    uint64_t n = std::min<uint64_t>(len, iov[i].iov_len - off);
    std::memcpy(dst, static_cast<const uint8_t*>(iov[i].iov_base) + off, n);
    dst += n; len -= n; off = 0;
  }
}

// Copies len bytes at byte offset off of the iov list into dst. Always inline (a compare and
// a copy for one buffer): a caller grown past the inliner's budget, such as Engine::post_send
// with a bundle append in it, would otherwise call it.
[[gnu::always_inline]] inline void copy_from_iov(const iovec* iov, uint32_t cnt, uint64_t off,
                                                 uint8_t* dst, uint64_t len) noexcept {
  if (cnt == 1 && off + len <= iov[0].iov_len) [[likely]] {  // one buffer: no walk
    util::copy_bytes(dst, static_cast<const uint8_t*>(iov[0].iov_base) + off, len);
    return;
  }
  copy_from_iov_walk(iov, cnt, off, dst, len);
}

// The address of bytes [off, off + len) of the iov list if they lie in one entry, else null.
inline const uint8_t* contiguous_in_iov(const iovec* iov, uint32_t cnt, uint64_t off,
                                        uint64_t len) noexcept {
  for (uint32_t i = 0; i < cnt; ++i) {
    if (off >= iov[i].iov_len) { off -= iov[i].iov_len; continue; }
    return off + len <= iov[i].iov_len ? static_cast<const uint8_t*>(iov[i].iov_base) + off : nullptr;
  }
  return nullptr;
}

// Writes the entries covering bytes [off, off + len) of the iov list to dst (at most cnt
// entries) and returns how many; clipped to the list.
inline uint32_t slice_iov(const iovec* iov, uint32_t cnt, uint64_t off, uint64_t len,
                          iovec* dst) noexcept {
  uint32_t n = 0;
  for (uint32_t i = 0; i < cnt && len; ++i) {
    if (off >= iov[i].iov_len) { off -= iov[i].iov_len; continue; }
    const uint64_t take = std::min<uint64_t>(len, iov[i].iov_len - off);
    dst[n].iov_base = static_cast<uint8_t*>(iov[i].iov_base) + off;
    dst[n].iov_len = take;
    ++n; len -= take; off = 0;
  }
  return n;
}

// The address of byte off of the iov list (one past the end if off is the list's length).
inline void* iov_addr(const iovec* iov, uint32_t cnt, uint64_t off) noexcept {
  for (uint32_t i = 0; i < cnt; ++i) {
    if (off < iov[i].iov_len) return static_cast<uint8_t*>(iov[i].iov_base) + off;
    off -= iov[i].iov_len;
  }
  return cnt ? static_cast<uint8_t*>(iov[cnt - 1].iov_base) + iov[cnt - 1].iov_len : nullptr;
}

inline uint64_t iov_bytes(const iovec* iov, uint32_t cnt) noexcept {
  if (cnt == 1) [[likely]] return iov[0].iov_len;  // every fi_send / fi_recv: no loop
  uint64_t n = 0;
  for (uint32_t i = 0; i < cnt; ++i) n += iov[i].iov_len;
  return n;
}

}  // namespace pollfab::transport
