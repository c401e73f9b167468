// Status codes shared by the layers below the OFI shim (no OFI types here).
//
// The transport and glue layers return a Status; the layers that speak OFI turn it into an
// FI_E* code with core::fi_errno_of() (lib/core/errors.hpp), the one table for every layer.
// Back-pressure is a code (NoResource), never a spin.
#pragma once
#include <cstdint>

namespace pollfab::util {

enum class Status : int32_t {
  Ok = 0,
  InProgress,    // accepted; completes later (FI_EINPROGRESS where a code is needed)
  NoResource,    // transient: queue, window or pool full; retry after progress (-FI_EAGAIN)
  Invalid,       // bad argument (-FI_EINVAL)
  TooBig,        // length exceeds a limit (-FI_EMSGSIZE)
  NotFound,      // unknown peer, key or object (-FI_ENOENT)
  NoMemory,      // allocation failed (-FI_ENOMEM)
  Truncated,     // receive buffer too small (-FI_ETRUNC)
  Canceled,      // operation canceled (-FI_ECANCELED)
  TimedOut,      // peer unresponsive (-FI_ETIMEDOUT)
  IoError,       // device or link failure (-FI_EIO)
  NotSupported,  // (-FI_EOPNOTSUPP)
  Busy,          // object in use (-FI_EBUSY)
  Permission,    // privileges missing (-FI_EACCES)
  NoDevice,      // device missing (-FI_ENODEV)
  NoMessage,     // no matching message (FI_PEEK miss, -FI_ENOMSG)
  NotConnected,  // no connection (FI_EP_MSG before connect or after shutdown, -FI_ENOTCONN)
  // Add new codes above this line, and to core::fi_errno_of's table.
};

// Number of Status enumerators (they are 0 .. kStatusCount - 1).
inline constexpr int kStatusCount = static_cast<int>(Status::NotConnected) + 1;

constexpr const char* to_string(Status s) noexcept {
  switch (s) {
    case Status::Ok: return "ok";
    case Status::InProgress: return "in progress";
    case Status::NoResource: return "no resource";
    case Status::Invalid: return "invalid argument";
    case Status::TooBig: return "too big";
    case Status::NotFound: return "not found";
    case Status::NoMemory: return "out of memory";
    case Status::Truncated: return "truncated";
    case Status::Canceled: return "canceled";
    case Status::TimedOut: return "timed out";
    case Status::IoError: return "I/O error";
    case Status::NotSupported: return "not supported";
    case Status::Busy: return "busy";
    case Status::Permission: return "permission denied";
    case Status::NoDevice: return "no such device";
    case Status::NoMessage: return "no matching message";
    case Status::NotConnected: return "not connected";
  }
  return "unknown";
}

}  // namespace pollfab::util
