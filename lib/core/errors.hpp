// Error strings and errno helpers with libfabric 1.17 semantics (fi_strerror(3)).
//
// The C symbol fi_strerror is exported by the ABI shim (abi/), which forwards to
// strerror_fi(). Nothing here throws; every function is safe to call from C.
#pragma once
#include <cstddef>

#include "lib/util/status.hpp"

namespace pollfab::core {

// libfabric 1.17 fi_strerror(3), byte for byte:
//   * a negative errnum is negated first (fi_strerror(-FI_EAGAIN) == fi_strerror(FI_EAGAIN));
//   * 0 <= errnum < FI_ERRNO_OFFSET (256): strerror(errnum), e.g. "Success" for 0 and
//     glibc's "Unknown error 255" for codes libc does not know;
//   * FI_EOTHER (256) .. FI_ENORX (269): libfabric's own text;
//   * anything larger (including FI_ERRNO_MAX and codes of newer libfabric releases such
//     as FI_ENOMR = 270): "Unspecified error", the text of FI_EOTHER.
//   * INT_MIN cannot be negated; the reference (two's complement wrap) then calls
//     strerror(INT_MIN), and so does this ("Unknown error -2147483648" on glibc).
// Returns a pointer that is never null. Strings of libfabric codes are static; strings from
// strerror() follow libc rules (static for known codes, a thread-local buffer for unknown
// ones on glibc >= 2.32, valid until the next strerror call on that thread).
// Thread-safety: MT-safe (on glibc >= 2.32; the target is Debian 12, glibc 2.36).
const char* strerror_fi(int errnum) noexcept;

// fi_cq_strerror(3) / fi_eq_strerror(3) for pollfab's providers, whose prov_errno is a
// (positive or negative) FI_E* code: its text, copied into buf (NUL-terminated, at most len
// bytes) when buf is given, else a static string.
const char* prov_strerror(int prov_errno, char* buf, size_t len) noexcept;

// A provider whose prov_errno holds something else (verbs: a work completion status) gives
// its CQs a function that names it (Domain::prov_errno_text); null text falls back to the above.
using ProvErrnoText = const char* (*)(int prov_errno) noexcept;
// fi_cq_strerror with such a function (null: prov_strerror).
const char* prov_strerror(ProvErrnoText text, int prov_errno, char* buf, size_t len) noexcept;

// True if code (sign ignored) is an error number declared by rdma/fi_errno.h of 1.17: an
// FI_E* alias of a POSIX errno (FI_EPERM, FI_EAGAIN, ...) or FI_EOTHER..FI_ENORX.
// FI_SUCCESS (0) is not an error and yields false. Thread-safety: MT-safe (pure).
bool is_fi_errno(int code) noexcept;

// Converts a system errno (either sign: errno after a failed call, or a -errno return) to an
// OFI return code the way libfabric providers do (-errno, e.g. -ofi_sockerr()): 0 -> 0
// (FI_SUCCESS), otherwise -|e|. POSIX FI_E* codes share the errno values, so -EAGAIN is
// -FI_EAGAIN; errnos that fi_errno.h does not name (EEXIST, EPIPE, ...) pass through unchanged
// as the reference does, and fi_strerror still prints libc's text for them. INT_MIN (not
// negatable) yields -FI_EOTHER. Thread-safety: MT-safe (pure).
int errno_to_fi(int e) noexcept;

// The FI_E* code of a pollfab Status, POSITIVE (0 for Status::Ok), as fi_cq_err_entry::err and
// fi_eq_err_entry::err carry it; negate it for a return value (`return -fi_errno_of(st);`).
// The one mapping for every layer (transport results, glue failures, completion errors):
//   Ok 0, InProgress FI_EINPROGRESS, NoResource FI_EAGAIN, Invalid FI_EINVAL,
//   TooBig FI_EMSGSIZE, NotFound FI_ENOENT, NoMemory FI_ENOMEM, Truncated FI_ETRUNC,
//   Canceled FI_ECANCELED, TimedOut FI_ETIMEDOUT, IoError FI_EIO, NotSupported FI_EOPNOTSUPP,
//   Busy FI_EBUSY, Permission FI_EACCES, NoDevice FI_ENODEV, NoMessage FI_ENOMSG,
//   NotConnected FI_ENOTCONN.
// A value outside the enumeration gives FI_EOTHER. Thread-safety: MT-safe (pure).
int fi_errno_of(util::Status s) noexcept;

}  // namespace pollfab::core
