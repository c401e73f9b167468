// fi_getopt / fi_setopt (fi_endpoint(3)) for options whose value is a size_t
// (FI_OPT_MIN_MULTI_RECV, FI_OPT_CM_DATA_SIZE): the buffer rules in one place.
#pragma once
#include <rdma/fi_errno.h>

#include <cstddef>
#include <cstring>

namespace pollfab::core {

// Copies v to val. Returns 0, -FI_EINVAL (val or len null) or -FI_ETOOSMALL (*len is less than
// sizeof(size_t); *len is set to it). On success *len = sizeof(size_t).
inline int get_size_option(size_t v, void* val, size_t* len) noexcept {
  if (!val || !len) return -FI_EINVAL;
  if (*len < sizeof(size_t)) {
    *len = sizeof(size_t);
    return -FI_ETOOSMALL;
  }
  std::memcpy(val, &v, sizeof(size_t));
  *len = sizeof(size_t);
  return 0;
}

// Reads a size_t option value into v. Returns 0 or -FI_EINVAL (val null, len not sizeof(size_t)).
inline int set_size_option(size_t& v, const void* val, size_t len) noexcept {
  if (!val || len != sizeof(size_t)) return -FI_EINVAL;
  std::memcpy(&v, val, sizeof(size_t));
  return 0;
}

}  // namespace pollfab::core
