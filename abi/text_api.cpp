// fi_strerror, fi_tostr, fi_tostr_r (fi_errno(3), fabric(3)).
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "abi/export.hpp"
#include "lib/core/errors.hpp"
#include "lib/core/tostr.hpp"

using namespace pollfab;

PF_EXPORT const char* fi_strerror(int errnum) { return core::strerror_fi(errnum); }

PF_EXPORT char* fi_tostr(const void* data, enum fi_type datatype) {
  return core::tostr(data, datatype);
}

PF_EXPORT char* fi_tostr_r(char* buf, size_t len, const void* data, enum fi_type datatype) {
  return core::tostr_r(buf, len, data, datatype);
}
