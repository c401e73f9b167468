// The scatter/gather copies (transport/iov.hpp): one buffer (the common case,
// inlined) and the walk over several entries give the same bytes, start at the
// byte offset asked for, and clip at the list's end.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "transport/iov.hpp"

namespace pollfab::transport {
namespace {

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), uint8_t(1));
  return v;
}

TEST(Iov, CopiesIntoOneBufferOrSeveralAtAnOffsetAndClipAtTheEnd) {
  const std::vector<uint8_t> src = pattern(40);
  for (uint64_t off : {0u, 3u, 9u, 21u})
    for (uint64_t len :
         {30 - off, uint64_t(40)}) { // fits exactly; clipped to the 30 bytes
      SCOPED_TRACE("offset " + std::to_string(off) + " length " +
                   std::to_string(len));
      std::vector<uint8_t> one(30, 0);
      iovec single{one.data(), one.size()};
      copy_to_iov(&single, 1, off, src.data(), len);
      std::vector<uint8_t> a(4, 0), b(7, 0), c(19, 0);
      iovec three[3] = {
          {a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}};
      copy_to_iov(three, 3, off, src.data(), len);
      std::vector<uint8_t> joined(a);
      joined.insert(joined.end(), b.begin(), b.end());
      joined.insert(joined.end(), c.begin(), c.end());
      EXPECT_EQ(joined, one);
      for (uint64_t i = 0; i < 30; ++i)
        EXPECT_EQ(one[i], i < off ? 0 : src[i - off]) << i;
    }
}

TEST(Iov, CopiesOutOfOneBufferOrSeveralFromAnOffset) {
  std::vector<uint8_t> whole = pattern(30);
  std::vector<uint8_t> a(whole.begin(), whole.begin() + 4),
      b(whole.begin() + 4, whole.begin() + 11),
      c(whole.begin() + 11, whole.end());
  iovec single{whole.data(), whole.size()};
  iovec three[3] = {
      {a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}};
  for (uint64_t off : {0u, 2u, 4u, 10u, 25u}) {
    SCOPED_TRACE("offset " + std::to_string(off));
    const uint64_t len = 30 - off;
    std::vector<uint8_t> from_one(len, 0), from_three(len, 0);
    copy_from_iov(&single, 1, off, from_one.data(), len);
    copy_from_iov(three, 3, off, from_three.data(), len);
    EXPECT_EQ(from_one, std::vector<uint8_t>(whole.begin() + off, whole.end()));
    EXPECT_EQ(from_three, from_one);
  }
  uint8_t untouched = 0xee; // nothing to copy: nothing written
  copy_from_iov(&single, 1, 30, &untouched, 0);
  EXPECT_EQ(untouched, 0xee);
}

} // namespace
} // namespace pollfab::transport
