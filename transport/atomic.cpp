#include "transport/atomic.hpp"

#include <complex>
#include <cstring>
#include <type_traits>

namespace pollfab::transport {

namespace {

template <class T> struct is_complex : std::false_type {};
template <class T> struct is_complex<std::complex<T>> : std::true_type {};

template <class T>
T load(const uint8_t* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
bool truth(const T& v) noexcept {
  return v != T{};
}

// The new value of d, or false if the element is left as it is.
template <class T>
bool compute(AtomicOp op, const T& d, const T& s, const T& c, T& out) noexcept {
  constexpr bool kInt = std::is_integral_v<T>;
  constexpr bool kOrdered = !is_complex<T>::value;
  switch (op) {
    case AtomicOp::Min:
      if constexpr (kOrdered) { out = s < d ? s : d; return true; }
      break;
    case AtomicOp::Max:
      if constexpr (kOrdered) { out = s > d ? s : d; return true; }
      break;
    case AtomicOp::Sum: out = d + s; return true;
    case AtomicOp::Prod: out = d * s; return true;
    case AtomicOp::Lor: out = T(truth(d) || truth(s) ? 1 : 0); return true;
    case AtomicOp::Land: out = T(truth(d) && truth(s) ? 1 : 0); return true;
    case AtomicOp::Lxor: out = T(truth(d) != truth(s) ? 1 : 0); return true;
    case AtomicOp::Bor:
      if constexpr (kInt) { out = T(d | s); return true; }
      break;
    case AtomicOp::Band:
      if constexpr (kInt) { out = T(d & s); return true; }
      break;
    case AtomicOp::Bxor:
      if constexpr (kInt) { out = T(d ^ s); return true; }
      break;
    case AtomicOp::Read: return false;
    case AtomicOp::Write: out = s; return true;
    case AtomicOp::Cswap: out = s; return c == d;
    case AtomicOp::CswapNe: out = s; return c != d;
    case AtomicOp::CswapLe:
      if constexpr (kOrdered) { out = s; return c <= d; }
      break;
    case AtomicOp::CswapLt:
      if constexpr (kOrdered) { out = s; return c < d; }
      break;
    case AtomicOp::CswapGe:
      if constexpr (kOrdered) { out = s; return c >= d; }
      break;
    case AtomicOp::CswapGt:
      if constexpr (kOrdered) { out = s; return c > d; }
      break;
    case AtomicOp::Mswap:
      if constexpr (kInt) { out = T((s & c) | (d & ~c)); return true; }
      break;
    case AtomicOp::Count: break;
  }
  return false;
}

template <class T>
void apply_all(AtomicOp op, uint8_t* target, const uint8_t* operand, const uint8_t* compare,
               uint8_t* old, uint32_t count) noexcept {
  for (uint32_t i = 0; i < count; ++i) {
    const size_t off = size_t(i) * sizeof(T);
    const T d = load<T>(target + off);
    const T s = operand && op != AtomicOp::Read ? load<T>(operand + off) : T{};
    const T c = compare ? load<T>(compare + off) : T{};
    if (old) std::memcpy(old + off, &d, sizeof d);
    T out{};
    if (compute(op, d, s, c, out)) std::memcpy(target + off, &out, sizeof out);
  }
}

template <class F>
auto dispatch(AtomicType t, F&& f) noexcept {
  switch (t) {
    case AtomicType::Int8: return f(int8_t{});
    case AtomicType::Uint8: return f(uint8_t{});
    case AtomicType::Int16: return f(int16_t{});
    case AtomicType::Uint16: return f(uint16_t{});
    case AtomicType::Int32: return f(int32_t{});
    case AtomicType::Uint32: return f(uint32_t{});
    case AtomicType::Int64: return f(int64_t{});
    case AtomicType::Uint64: return f(uint64_t{});
    case AtomicType::Float: return f(float{});
    case AtomicType::Double: return f(double{});
    case AtomicType::FloatComplex: return f(std::complex<float>{});
    case AtomicType::DoubleComplex: return f(std::complex<double>{});
    case AtomicType::LongDouble: return f(static_cast<long double>(0));
    case AtomicType::LongDoubleComplex:
    case AtomicType::Count: break;
  }
  return f(std::complex<long double>{});
}

bool is_int(AtomicType t) noexcept { return t <= AtomicType::Uint64; }
bool is_complex_type(AtomicType t) noexcept {
  return t == AtomicType::FloatComplex || t == AtomicType::DoubleComplex ||
         t == AtomicType::LongDoubleComplex;
}

}  // namespace

size_t atomic_size(AtomicType t) noexcept {
  if (t >= AtomicType::Count) return 0;
  return dispatch(t, [](auto v) { return sizeof v; });
}

bool atomic_valid(AtomicOp op, AtomicType t, AtomicKind kind) noexcept {
  if (op >= AtomicOp::Count || t >= AtomicType::Count) return false;
  const bool integer = is_int(t), ordered = !is_complex_type(t);
  switch (kind) {
    case AtomicKind::Plain:
    case AtomicKind::Fetch:
      switch (op) {
        case AtomicOp::Min: case AtomicOp::Max: return ordered;
        case AtomicOp::Sum: case AtomicOp::Prod: case AtomicOp::Lor: case AtomicOp::Land:
        case AtomicOp::Lxor: case AtomicOp::Write: return true;
        case AtomicOp::Bor: case AtomicOp::Band: case AtomicOp::Bxor: return integer;
        case AtomicOp::Read: return kind == AtomicKind::Fetch;
        default: return false;
      }
    case AtomicKind::Compare:
      switch (op) {
        case AtomicOp::Cswap: case AtomicOp::CswapNe: return true;
        case AtomicOp::CswapLe: case AtomicOp::CswapLt: case AtomicOp::CswapGe:
        case AtomicOp::CswapGt: return ordered;
        case AtomicOp::Mswap: return integer;
        default: return false;
      }
  }
  return false;
}

void atomic_apply(AtomicOp op, AtomicType t, uint8_t* target, const uint8_t* operand,
                  const uint8_t* compare, uint8_t* old, uint32_t count) noexcept {
  if (t >= AtomicType::Count) return;
  dispatch(t, [&](auto v) {
    apply_all<decltype(v)>(op, target, operand, compare, old, count);
    return 0;
  });
}

}  // namespace pollfab::transport
