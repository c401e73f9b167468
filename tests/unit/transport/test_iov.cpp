// The scatter/gather copies (transport/iov.hpp): one buffer (the common case, inlined) and the
// walk over several entries give the same bytes, start at the byte offset asked for, clip at
// the list's end and never write past an entry; and the short copies they use for one buffer
// (lib/util/small_copy.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "lib/util/small_copy.hpp"
#include "transport/iov.hpp"

namespace pollfab::transport {
namespace {

constexpr uint8_t kGuard = 0xee;  // fills the bytes past each entry: they must stay so

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), uint8_t(1));
  return v;
}

// An entry of `len` bytes at the front of a buffer 16 bytes longer, the rest guard bytes.
struct Guarded {
  // Zeroed entry, then the guard (built in two parts: a fill bounded by len + 16 made GCC 12
  // warn of a bound that could wrap, -Wstringop-overflow).
  explicit Guarded(size_t len) : len(len), mem(len, 0) {
    mem.reserve(len + 16);  // no spare capacity past the guard (ASan's redzone right after it)
    mem.insert(mem.end(), 16, kGuard);
  }
  iovec iov() { return {mem.data(), len}; }
  std::vector<uint8_t> bytes() const { return {mem.begin(), mem.begin() + len}; }
  bool guard_intact() const {
    return std::all_of(mem.begin() + len, mem.end(), [](uint8_t b) { return b == kGuard; });
  }
  size_t len;
  std::vector<uint8_t> mem;
};

TEST(Iov, CopiesIntoOneBufferOrSeveralAtAnOffsetAndClipAtTheEnd) {
  const std::vector<uint8_t> src = pattern(40);
  for (uint64_t off : {0u, 3u, 9u, 21u})
    for (uint64_t len : {30 - off, uint64_t(40)}) {  // fits exactly; clipped to the 30 bytes
      SCOPED_TRACE("offset " + std::to_string(off) + " length " + std::to_string(len));
      Guarded one(30);
      iovec single = one.iov();
      copy_to_iov(&single, 1, off, src.data(), len);
      Guarded a(4), b(7), c(19);
      iovec three[3] = {a.iov(), b.iov(), c.iov()};
      copy_to_iov(three, 3, off, src.data(), len);
      std::vector<uint8_t> joined = a.bytes(), bb = b.bytes(), cb = c.bytes();
      joined.insert(joined.end(), bb.begin(), bb.end());
      joined.insert(joined.end(), cb.begin(), cb.end());
      EXPECT_EQ(joined, one.bytes());
      for (uint64_t i = 0; i < 30; ++i) EXPECT_EQ(one.mem[i], i < off ? 0 : src[i - off]) << i;
      EXPECT_TRUE(one.guard_intact());
      EXPECT_TRUE(a.guard_intact() && b.guard_intact() && c.guard_intact());
    }
}

TEST(Iov, CopiesOutOfOneBufferOrSeveralFromAnOffset) {
  std::vector<uint8_t> whole = pattern(30);
  std::vector<uint8_t> a(whole.begin(), whole.begin() + 4), b(whole.begin() + 4, whole.begin() + 11),
      c(whole.begin() + 11, whole.end());
  iovec single{whole.data(), whole.size()};
  iovec three[3] = {{a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}};
  for (uint64_t off : {0u, 2u, 4u, 10u, 25u}) {
    SCOPED_TRACE("offset " + std::to_string(off));
    const uint64_t len = 30 - off;
    Guarded from_one(len), from_three(len);
    copy_from_iov(&single, 1, off, from_one.mem.data(), len);
    copy_from_iov(three, 3, off, from_three.mem.data(), len);
    EXPECT_EQ(from_one.bytes(), std::vector<uint8_t>(whole.begin() + off, whole.end()));
    EXPECT_EQ(from_three.bytes(), from_one.bytes());
    EXPECT_TRUE(from_one.guard_intact() && from_three.guard_intact());
  }
  uint8_t untouched = kGuard;  // nothing to copy: nothing written
  copy_from_iov(&single, 1, 30, &untouched, 0);
  EXPECT_EQ(untouched, kGuard);
}

// The short copies (util::copy_small, through copy_bytes, which copy_to_iov and copy_from_iov
// use for one buffer): every length up to past kSmallCopyMaxBytes, at every alignment of
// source and destination within 16 bytes, copies exactly the bytes asked for and writes
// nothing before or after them. Each source is a copy that ends where the bytes to copy end,
// so a read past them is out of bounds for AddressSanitizer (meson -Db_sanitize=address).
TEST(Iov, ShortCopiesMoveExactlyTheirBytesAtEveryLengthAndAlignment) {
  const std::vector<uint8_t> pat = pattern(util::kSmallCopyMaxBytes + 32);
  for (size_t n = 0; n <= util::kSmallCopyMaxBytes + 16; ++n)
    for (size_t so = 0; so < 16; ++so)
      for (size_t dof = 0; dof < 16; ++dof) {
        const std::vector<uint8_t> src(pat.begin(), pat.begin() + so + n);
        std::vector<uint8_t> dst(16 + n + 16, kGuard);
        util::copy_bytes(dst.data() + dof, src.data() + so, n);
        for (size_t i = 0; i < dst.size(); ++i) {
          const bool inside = i >= dof && i < dof + n;
          const uint8_t want = inside ? src[so + i - dof] : kGuard;
          if (dst[i] != want) {
            ADD_FAILURE() << "length " << n << " source offset " << so << " destination offset "
                          << dof << ": byte " << i << " is " << int(dst[i]) << ", not "
                          << int(want);
            return;
          }
        }
      }
}

// Through the iov: a one-entry list and a message of each short length land in place, with
// the entry's bytes after them untouched (a posted receive larger than the message).
TEST(Iov, ShortMessagesLandInALargerBufferAndLeaveItsRest) {
  const std::vector<uint8_t> src = pattern(util::kSmallCopyMaxBytes + 8);
  for (size_t n = 0; n <= util::kSmallCopyMaxBytes + 8; ++n) {
    SCOPED_TRACE("length " + std::to_string(n));
    Guarded buf(util::kSmallCopyMaxBytes + 16);
    iovec one = buf.iov();
    copy_to_iov(&one, 1, 3, src.data(), n);
    for (size_t i = 0; i < buf.len; ++i)
      ASSERT_EQ(buf.mem[i], i >= 3 && i < 3 + n ? src[i - 3] : 0) << i;
    EXPECT_TRUE(buf.guard_intact());
    std::vector<uint8_t> back(n + 1, kGuard);
    copy_from_iov(&one, 1, 3, back.data(), n);
    EXPECT_TRUE(std::equal(back.begin(), back.begin() + n, src.begin()));
    EXPECT_EQ(back[n], kGuard);
  }
}

}  // namespace
}  // namespace pollfab::transport
