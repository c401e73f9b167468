#include "lib/core/errors.hpp"

#include <rdma/fi_errno.h>

#include <climits>
#include <cstring>

namespace pollfab::core {
namespace {

// libfabric 1.17 src/fabric.c errstr[], indexed by code - FI_ERRNO_OFFSET.
constexpr const char* kFiErrStr[] = {
    "Unspecified error",                                 // FI_EOTHER       256
    "Provided buffer is too small",                      // FI_ETOOSMALL    257
    "Operation not permitted in current state",          // FI_EOPBADSTATE  258
    "Error available",                                   // FI_EAVAIL       259
    "Flags not supported",                               // FI_EBADFLAGS    260
    "Missing or unavailable event queue",                // FI_ENOEQ        261
    "Invalid resource domain",                           // FI_EDOMAIN      262
    "Missing or unavailable completion queue",           // FI_ENOCQ        263
    "CRC error",                                         // FI_ECRC         264
    "Truncation error",                                  // FI_ETRUNC       265
    "Required key not available",                        // FI_ENOKEY       266
    "Missing or unavailable address vector",             // FI_ENOAV        267
    "Queue has been overrun",                            // FI_EOVERRUN     268
    "Receiver not ready, no receive buffers available",  // FI_ENORX        269
};
static_assert(sizeof(kFiErrStr) / sizeof(kFiErrStr[0]) == FI_ERRNO_MAX - FI_ERRNO_OFFSET,
              "errstr table must cover FI_ERRNO_OFFSET..FI_ERRNO_MAX-1 of rdma/fi_errno.h");

// The POSIX-valued codes rdma/fi_errno.h (1.17) declares (FI_EWOULDBLOCK == FI_EAGAIN).
constexpr int kPosixFiCodes[] = {
    FI_EPERM,      FI_ENOENT,       FI_EINTR,       FI_EIO,          FI_E2BIG,
    FI_EBADF,      FI_EAGAIN,       FI_ENOMEM,      FI_EACCES,       FI_EFAULT,
    FI_EBUSY,      FI_ENODEV,       FI_EINVAL,      FI_EMFILE,       FI_ENOSPC,
    FI_ENOSYS,     FI_EWOULDBLOCK,  FI_ENOMSG,      FI_ENODATA,      FI_EOVERFLOW,
    FI_EMSGSIZE,   FI_ENOPROTOOPT,  FI_EOPNOTSUPP,  FI_EADDRINUSE,   FI_EADDRNOTAVAIL,
    FI_ENETDOWN,   FI_ENETUNREACH,  FI_ECONNABORTED, FI_ECONNRESET,  FI_ENOBUFS,
    FI_EISCONN,    FI_ENOTCONN,     FI_ESHUTDOWN,   FI_ETIMEDOUT,    FI_ECONNREFUSED,
    FI_EHOSTDOWN,  FI_EHOSTUNREACH, FI_EALREADY,    FI_EINPROGRESS,  FI_EREMOTEIO,
    FI_ECANCELED,  FI_EKEYREJECTED,
};

// Status -> FI_E*, indexed by the enumerator (util::Status order).
constexpr int kStatusErrno[] = {
    0,               // Ok
    FI_EINPROGRESS,  // InProgress
    FI_EAGAIN,       // NoResource
    FI_EINVAL,       // Invalid
    FI_EMSGSIZE,     // TooBig
    FI_ENOENT,       // NotFound
    FI_ENOMEM,       // NoMemory
    FI_ETRUNC,       // Truncated
    FI_ECANCELED,    // Canceled
    FI_ETIMEDOUT,    // TimedOut
    FI_EIO,          // IoError
    FI_EOPNOTSUPP,   // NotSupported
    FI_EBUSY,        // Busy
    FI_EACCES,       // Permission
    FI_ENODEV,       // NoDevice
    FI_ENOMSG,       // NoMessage
    FI_ENOTCONN,     // NotConnected
};
static_assert(sizeof(kStatusErrno) / sizeof(kStatusErrno[0]) == util::kStatusCount,
              "util::Status changed: update kStatusErrno in lib/core/errors.cpp");

}  // namespace

int fi_errno_of(util::Status s) noexcept {
  const auto i = static_cast<int>(s);
  return i >= 0 && i < util::kStatusCount ? kStatusErrno[i] : FI_EOTHER;
}

const char* strerror_fi(int errnum) noexcept {
  if (errnum == INT_MIN) return strerror(errnum);  // reference: -INT_MIN wraps to INT_MIN
  if (errnum < 0) errnum = -errnum;
  if (errnum < FI_ERRNO_OFFSET) return strerror(errnum);
  if (errnum < FI_ERRNO_MAX) return kFiErrStr[errnum - FI_ERRNO_OFFSET];
  return kFiErrStr[FI_EOTHER - FI_ERRNO_OFFSET];
}

bool is_fi_errno(int code) noexcept {
  if (code == INT_MIN || code == 0) return false;
  if (code < 0) code = -code;
  if (code >= FI_ERRNO_OFFSET) return code < FI_ERRNO_MAX;
  for (int c : kPosixFiCodes)
    if (c == code) return true;
  return false;
}

int errno_to_fi(int e) noexcept {
  if (e == INT_MIN) return -FI_EOTHER;
  return e < 0 ? e : -e;
}

const char* prov_strerror(int prov_errno, char* buf, size_t len) noexcept {
  return prov_strerror(nullptr, prov_errno, buf, len);
}

const char* prov_strerror(ProvErrnoText text, int prov_errno, char* buf, size_t len) noexcept {
  const char* s = text ? text(prov_errno) : nullptr;
  if (!s) s = strerror_fi(prov_errno < 0 ? -prov_errno : prov_errno);
  if (!buf || !len) return s;
  size_t n = strnlen(s, len - 1);
  memcpy(buf, s, n);
  buf[n] = 0;
  return buf;
}

}  // namespace pollfab::core
