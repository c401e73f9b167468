#include "transport/wire.hpp"

namespace pollfab::transport::wire {

const char* to_string(DecodeError e) noexcept {
  switch (e) {
    case DecodeError::None: return "none";
    case DecodeError::Short: return "short";
    case DecodeError::BadMagic: return "bad_magic";
    case DecodeError::BadVersion: return "bad_version";
    case DecodeError::BadType: return "bad_type";
    case DecodeError::BadFlags: return "bad_flags";
    case DecodeError::BadLength: return "bad_length";
    case DecodeError::BadSegment: return "bad_segment";
    case DecodeError::Count: break;
  }
  return "unknown";
}

}  // namespace pollfab::transport::wire
