// Remote atomic operations at the target (fi_atomic(3)): which (operation, datatype, kind)
// triples are valid, element sizes, and applying one to target memory. The numbering of
// AtomicOp and AtomicType is libfabric's (enum fi_op, enum fi_datatype, 1.17) so the wire
// carries the same codes; the provider checks that with static_asserts. transport/ knows no
// libfabric header.
// Valid triples (as libfabric's util provider, prov/util/src/util_atomic.c):
//   plain (fi_atomic): MIN, MAX on integers and reals; SUM, PROD, LOR, LAND, LXOR on every
//     type; BOR, BAND, BXOR on integers; ATOMIC_WRITE on every type.
//   fetch (fi_fetch_atomic): the plain ones, plus ATOMIC_READ on every type.
//   compare (fi_compare_atomic): CSWAP, CSWAP_NE on every type; CSWAP_LE/LT/GE/GT on integers
//     and reals; MSWAP on integers.
// Semantics (d = target element, s = operand, c = compare; the previous d is returned for
// fetch and compare): MIN d = min(d, s); MAX; SUM d += s; PROD d *= s; LOR/LAND/LXOR logical
// (non-zero is true, the result 1 or 0); BOR/BAND/BXOR bitwise; ATOMIC_WRITE d = s;
// ATOMIC_READ no change; CSWAP d = s if c == d; CSWAP_NE if c != d; CSWAP_LE if c <= d;
// CSWAP_LT if c < d; CSWAP_GE if c >= d; CSWAP_GT if c > d; MSWAP d = (s & c) | (d & ~c).
// Thread-safety: pure functions; atomicity comes from the engine's serialisation (every
// initiator's request is applied by the one thread that owns the target endpoint).
#pragma once
#include <cstddef>
#include <cstdint>

namespace pollfab::transport {

enum class AtomicOp : uint8_t {
  Min, Max, Sum, Prod, Lor, Land, Bor, Band, Lxor, Bxor, Read, Write,
  Cswap, CswapNe, CswapLe, CswapLt, CswapGe, CswapGt, Mswap,
  Count
};
enum class AtomicType : uint8_t {
  Int8, Uint8, Int16, Uint16, Int32, Uint32, Int64, Uint64, Float, Double,
  FloatComplex, DoubleComplex, LongDouble, LongDoubleComplex,
  Count
};
enum class AtomicKind : uint8_t { Plain = 0, Fetch = 1, Compare = 2 };

// Bytes of one element; 0 for an unknown type.
size_t atomic_size(AtomicType t) noexcept;
// True if the triple is valid (see above); false for unknown codes.
bool atomic_valid(AtomicOp op, AtomicType t, AtomicKind kind) noexcept;
// Applies a valid triple to count elements at target (no alignment needed). operand: count
// elements (ignored by ATOMIC_READ); compare: count elements (compare kind only); old: where
// the previous values go (fetch and compare kinds; may be null otherwise).
void atomic_apply(AtomicOp op, AtomicType t, uint8_t* target, const uint8_t* operand,
                  const uint8_t* compare, uint8_t* old, uint32_t count) noexcept;

}  // namespace pollfab::transport
