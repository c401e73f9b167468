// fi_rma(3) / fi_atomic(3) support shared by the transport endpoint and domain: which atomic
// (op, datatype) pairs the transport serves and how many elements one operation carries.
// transport::AtomicOp / AtomicType use libfabric's numbering (checked here).
#pragma once
#include <rdma/fi_atomic.h>

#include "transport/ops.hpp"

namespace pollfab::providers::packet {

static_assert(int(transport::AtomicOp::Mswap) == FI_MSWAP &&
              int(transport::AtomicOp::Count) == FI_ATOMIC_OP_LAST);
static_assert(int(transport::AtomicType::LongDoubleComplex) == FI_LONG_DOUBLE_COMPLEX &&
              int(transport::AtomicType::Count) == FI_DATATYPE_LAST);

// For a valid (op, dt) of kind: 0 with *size = bytes per element and *count = the most elements
// one operation carries (transport::kMaxAtomicBytes / size); -FI_EOPNOTSUPP otherwise
// (unknown op or datatype, FI_INT128/FI_UINT128, or a pair fi_atomic(3) does not define for
// the kind).
int atomic_query(fi_datatype dt, fi_op op, transport::AtomicKind kind, size_t* size,
                 size_t* count) noexcept;

}  // namespace pollfab::providers::packet
