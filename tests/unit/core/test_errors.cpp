// Tests for pollfab::core::strerror_fi / is_fi_errno / errno_to_fi.
// Expected strings were checked against Debian's libfabric 1.17 (fi_strerror via dlopen).
#include "lib/core/errors.hpp"

#include <gtest/gtest.h>
#include <rdma/fi_errno.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace pc = pollfab::core;

TEST(StrerrorFi, SystemRangeIsLibcStrerror) {
  for (int e = 0; e < FI_ERRNO_OFFSET; ++e) {
    std::string libc = strerror(e);
    EXPECT_EQ(libc, pc::strerror_fi(e)) << e;
  }
  EXPECT_STREQ("Success", pc::strerror_fi(0));
  EXPECT_STREQ("Operation not permitted", pc::strerror_fi(FI_EPERM));
  EXPECT_STREQ("Resource temporarily unavailable", pc::strerror_fi(FI_EAGAIN));
  EXPECT_STREQ("Unknown error 255", pc::strerror_fi(255));
}

TEST(StrerrorFi, NegativeIsNegated) {
  EXPECT_STREQ(pc::strerror_fi(FI_EAGAIN), pc::strerror_fi(-FI_EAGAIN));
  EXPECT_STREQ("Resource temporarily unavailable", pc::strerror_fi(-FI_EAGAIN));
  EXPECT_STREQ("Truncation error", pc::strerror_fi(-FI_ETRUNC));
  EXPECT_STREQ("Unspecified error", pc::strerror_fi(-FI_EOTHER));
  EXPECT_STREQ("Unspecified error", pc::strerror_fi(-1000));
  EXPECT_STREQ("Unspecified error", pc::strerror_fi(-INT_MAX));
}

TEST(StrerrorFi, OfiCodesTable) {
  struct { int code; const char* text; } cases[] = {
      {FI_EOTHER, "Unspecified error"},
      {FI_ETOOSMALL, "Provided buffer is too small"},
      {FI_EOPBADSTATE, "Operation not permitted in current state"},
      {FI_EAVAIL, "Error available"},
      {FI_EBADFLAGS, "Flags not supported"},
      {FI_ENOEQ, "Missing or unavailable event queue"},
      {FI_EDOMAIN, "Invalid resource domain"},
      {FI_ENOCQ, "Missing or unavailable completion queue"},
      {FI_ECRC, "CRC error"},
      {FI_ETRUNC, "Truncation error"},
      {FI_ENOKEY, "Required key not available"},
      {FI_ENOAV, "Missing or unavailable address vector"},
      {FI_EOVERRUN, "Queue has been overrun"},
      {FI_ENORX, "Receiver not ready, no receive buffers available"},
  };
  for (const auto& c : cases) {
    EXPECT_STREQ(c.text, pc::strerror_fi(c.code)) << c.code;
    EXPECT_STREQ(c.text, pc::strerror_fi(-c.code)) << c.code;
  }
}

TEST(StrerrorFi, UnknownCodesAreUnspecified) {
  EXPECT_STREQ("Unspecified error", pc::strerror_fi(FI_ERRNO_MAX));  // 270 (FI_ENOMR in 1.18+)
  EXPECT_STREQ("Unspecified error", pc::strerror_fi(271));
  EXPECT_STREQ("Unspecified error", pc::strerror_fi(300));
  EXPECT_STREQ("Unspecified error", pc::strerror_fi(INT_MAX));
}

TEST(StrerrorFi, IntMinMatchesReferenceWrap) {
  EXPECT_STREQ("Unknown error -2147483648", pc::strerror_fi(INT_MIN));
}

TEST(StrerrorFi, NeverNullAcrossThreads) {
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([t] {
      for (int i = -400; i < 400; ++i) {
        const char* s = pc::strerror_fi(i * (t + 1));
        ASSERT_NE(nullptr, s);
        ASSERT_NE('\0', s[0]);
      }
    });
  for (auto& th : ts) th.join();
}

TEST(IsFiErrno, KnownAndUnknown) {
  EXPECT_FALSE(pc::is_fi_errno(0));
  EXPECT_TRUE(pc::is_fi_errno(FI_EAGAIN));
  EXPECT_TRUE(pc::is_fi_errno(-FI_EAGAIN));
  EXPECT_TRUE(pc::is_fi_errno(FI_EKEYREJECTED));
  EXPECT_TRUE(pc::is_fi_errno(-FI_ECANCELED));
  EXPECT_TRUE(pc::is_fi_errno(FI_EOTHER));
  EXPECT_TRUE(pc::is_fi_errno(-FI_ENORX));
  EXPECT_FALSE(pc::is_fi_errno(FI_ERRNO_MAX));
  EXPECT_FALSE(pc::is_fi_errno(EEXIST));
  EXPECT_FALSE(pc::is_fi_errno(EPIPE));
  EXPECT_FALSE(pc::is_fi_errno(255));
  EXPECT_FALSE(pc::is_fi_errno(INT_MIN));
}

TEST(ErrnoToFi, NegatesAndPassesThrough) {
  EXPECT_EQ(0, pc::errno_to_fi(0));
  EXPECT_EQ(-FI_EAGAIN, pc::errno_to_fi(EAGAIN));
  EXPECT_EQ(-FI_EAGAIN, pc::errno_to_fi(-EAGAIN));
  EXPECT_EQ(-FI_ECONNREFUSED, pc::errno_to_fi(ECONNREFUSED));
  EXPECT_EQ(-EEXIST, pc::errno_to_fi(EEXIST));
  EXPECT_EQ(-FI_ETRUNC, pc::errno_to_fi(FI_ETRUNC));
  EXPECT_EQ(-FI_EOTHER, pc::errno_to_fi(INT_MIN));
}

// core::fi_errno_of: the one Status -> FI_E* table. Every enumerator maps to a positive code
// that rdma/fi_errno.h declares (Ok to 0), no two errors share a code, and the ones the
// providers rely on keep their meaning.
TEST(FiErrnoOf, EveryStatusHasItsOwnPositiveOfiCode) {
  using pollfab::util::Status;
  EXPECT_EQ(pc::fi_errno_of(Status::Ok), 0);
  std::vector<int> seen;
  for (int i = 1; i < pollfab::util::kStatusCount; ++i) {
    const auto s = static_cast<Status>(i);
    const int e = pc::fi_errno_of(s);
    EXPECT_GT(e, 0) << pollfab::util::to_string(s);
    EXPECT_TRUE(pc::is_fi_errno(e)) << pollfab::util::to_string(s) << " -> " << e;
    EXPECT_STRNE(pc::strerror_fi(e), "Unspecified error") << pollfab::util::to_string(s);
    for (int prev : seen) EXPECT_NE(prev, e) << pollfab::util::to_string(s);
    seen.push_back(e);
  }
  EXPECT_EQ(pc::fi_errno_of(Status::NoResource), FI_EAGAIN);
  EXPECT_EQ(pc::fi_errno_of(Status::Invalid), FI_EINVAL);
  EXPECT_EQ(pc::fi_errno_of(Status::TooBig), FI_EMSGSIZE);
  EXPECT_EQ(pc::fi_errno_of(Status::Truncated), FI_ETRUNC);
  EXPECT_EQ(pc::fi_errno_of(Status::Canceled), FI_ECANCELED);
  EXPECT_EQ(pc::fi_errno_of(Status::TimedOut), FI_ETIMEDOUT);
  EXPECT_EQ(pc::fi_errno_of(Status::IoError), FI_EIO);
  EXPECT_EQ(pc::fi_errno_of(Status::Permission), FI_EACCES);
  EXPECT_EQ(pc::fi_errno_of(Status::NoDevice), FI_ENODEV);
  EXPECT_EQ(pc::fi_errno_of(Status::NoMessage), FI_ENOMSG);
  EXPECT_EQ(pc::fi_errno_of(static_cast<Status>(pollfab::util::kStatusCount)), FI_EOTHER);
  EXPECT_EQ(pc::fi_errno_of(static_cast<Status>(-1)), FI_EOTHER);
}
