// RMA and atomics in the engine (transport/rma.cpp) over the in-memory link, with and without
// faults: writes and reads of every size class land byte-exact; remote CQ data; key, range and
// access checks refuse a request without touching target memory and fail the initiator's
// operation with the reason; every valid (op, datatype, kind) atomic against a reference
// computation written independently here; call-time refusals; a dead peer fails what waits.
#include <gtest/gtest.h>

#include <complex>
#include <map>
#include <random>

#include "tests/unit/transport/harness.hpp"

namespace pollfab::transport::test {
namespace {

using util::Status;

MemLinkConfig faults(uint64_t seed) {
  MemLinkConfig lc;
  lc.fault_ab = {0.05, 0.02, 0.05, 0.0, seed};
  lc.fault_ba = {0.05, 0.02, 0.05, 0.0, seed * 7 + 1};
  return lc;
}

RmaOp make_rma(RmaKind kind, PeerId peer, void* buf, size_t len, uint64_t key, uint64_t addr) {
  RmaOp op;
  op.kind = kind;
  op.peer = peer;
  op.iov[0] = {buf, len};
  op.iov_count = 1;
  op.key = key;
  op.addr = addr;
  op.flags = kOpCompletion;
  return op;
}

// Runs until a's sink has n completions; returns the last.
Completion wait_a(Pair& t, size_t n) {
  EXPECT_TRUE(t.run_until([&] { return t.sink_a.comps.size() >= n; }));
  return t.sink_a.comps.empty() ? Completion{} : t.sink_a.comps.back();
}

class RmaTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    t = std::make_unique<Pair>(GetParam() ? faults(11) : MemLinkConfig{});
    t->b->set_mr_lookup(&mrs);
  }
  std::unique_ptr<Pair> t;
  TestMrs mrs;
};

TEST_P(RmaTest, WritesAndReadsOfEverySizeClassAreByteExact) {
  auto& r = mrs.regions[42];
  r.bytes.assign(3 << 20, 0);
  r.access = kAccessRemoteRead | kAccessRemoteWrite;
  size_t n = 0;
  for (size_t len : {size_t(0), size_t(1), size_t(1400), size_t(1500), size_t(100'000), size_t(2'500'000)}) {
    std::vector<uint8_t> src(len), back(len + 8, 0xcc);
    fill_xorshift(src.data(), len, len + 3);
    const uint64_t off = 13;
    ASSERT_EQ(t->a->rma(make_rma(RmaKind::Write, t->a_to_b, src.data(), len, 42, off)), Status::Ok);
    Completion c = wait_a(*t, ++n);
    EXPECT_EQ(c.status, Status::Ok);
    EXPECT_EQ(c.flags, kCompRma | kCompWrite);
    EXPECT_EQ(c.len, len);
    EXPECT_TRUE(std::equal(src.begin(), src.end(), r.bytes.begin() + off)) << len;
    ASSERT_EQ(t->a->rma(make_rma(RmaKind::Read, t->a_to_b, back.data(), len, 42, off)), Status::Ok);
    c = wait_a(*t, ++n);
    EXPECT_EQ(c.status, Status::Ok);
    EXPECT_EQ(c.flags, kCompRma | kCompRead);
    EXPECT_TRUE(std::equal(src.begin(), src.end(), back.begin())) << len;
    EXPECT_EQ(back[len], 0xcc);  // nothing past the destination
  }
  EXPECT_EQ(r.writes, 6u);
  EXPECT_EQ(r.reads, 6u);
  // The target saw each as a remote event (counters), with no CQ entry.
  size_t remote = 0;
  for (const Completion& c : t->sink_b.comps) {
    EXPECT_FALSE(c.cq_entry);
    remote += (c.flags & (kCompRemoteRead | kCompRemoteWrite)) != 0;
  }
  EXPECT_EQ(remote, 12u);
  EXPECT_EQ(t->a->sends_in_use(), 0u);
  // The target's last answer is released once the initiator acknowledges it.
  EXPECT_TRUE(t->run_until([&] { return t->b->sends_in_use() == 0; }));
}

TEST_P(RmaTest, WriteWithRemoteCqDataAndInject) {
  auto& r = mrs.regions[7];
  r.bytes.assign(64, 0);
  r.access = kAccessRemoteWrite;
  uint8_t v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  RmaOp op = make_rma(RmaKind::Write, t->a_to_b, v, sizeof v, 7, 8);
  op.flags = kOpInject | kOpCqData;  // no completion asked: only the target reports
  op.cq_data = 0xfeedface;
  ASSERT_EQ(t->a->rma(op), Status::Ok);
  std::memset(v, 0, sizeof v);  // injected: the buffer is free at once
  ASSERT_TRUE(t->run_until([&] { return !t->sink_b.comps.empty() && !t->sink_a.comps.empty(); }));
  const Completion& rc = t->sink_b.comps.back();
  EXPECT_TRUE(rc.cq_entry);
  EXPECT_EQ(rc.flags, kCompRma | kCompRemoteWrite | kCompRemoteCqData);
  EXPECT_EQ(rc.cq_data, 0xfeedfaceu);
  EXPECT_EQ(rc.len, 8u);
  EXPECT_EQ(rc.peer, t->b_to_a);
  EXPECT_FALSE(t->sink_a.comps.back().cq_entry);  // counted, no entry
  EXPECT_EQ(r.bytes[8], 1);
  EXPECT_EQ(r.bytes[15], 8);
}

TEST_P(RmaTest, BadKeyRangeOrAccessFailsTheOperationAndTouchesNothing) {
  auto& ro = mrs.regions[1];
  ro.bytes.assign(4096, 0x5a);
  ro.access = kAccessRemoteRead;
  std::vector<uint8_t> src(3000, 0x11), dst(3000);
  struct Case {
    RmaKind kind;
    uint64_t key, addr;
    Status want;
  } cases[] = {
      {RmaKind::Write, 99, 0, Status::Invalid},       // no such key: FI_EINVAL
      {RmaKind::Write, 1, 0, Status::Permission},     // read-only region: FI_EACCES
      {RmaKind::Read, 1, 2000, Status::Permission},   // past the end
      {RmaKind::Read, 1, ~0ull - 10, Status::Permission},  // address wraps
  };
  size_t n = 0;
  for (const Case& c : cases) {
    ASSERT_EQ(t->a->rma(make_rma(c.kind, t->a_to_b, c.kind == RmaKind::Write ? src.data() : dst.data(),
                                 3000, c.key, c.addr)),
              Status::Ok);
    Completion got = wait_a(*t, ++n);
    EXPECT_EQ(got.status, c.want);
    EXPECT_TRUE(got.cq_entry);
  }
  for (uint8_t b : ro.bytes) ASSERT_EQ(b, 0x5a);
  EXPECT_EQ(ro.reads + ro.writes, 0u);
  EXPECT_EQ(t->b->stats().rma_rejected, 4u);
  // An atomic on the read-only region: refused too.
  uint64_t one = 1;
  RmaOp at = make_rma(RmaKind::Atomic, t->a_to_b, &one, 8, 1, 0);
  at.atomic_op = AtomicOp::Sum;
  at.datatype = AtomicType::Uint64;
  at.count = 1;
  ASSERT_EQ(t->a->rma(at), Status::Ok);
  EXPECT_EQ(wait_a(*t, ++n).status, Status::Permission);
  EXPECT_EQ(ro.bytes[0], 0x5a);
}

INSTANTIATE_TEST_SUITE_P(Link, RmaTest, ::testing::Values(false, true),
                         [](const auto& i) { return i.param ? "Lossy" : "Clean"; });

TEST(Rma, CallTimeRefusals) {
  Pair t;
  uint64_t v = 0, r = 0;
  RmaOp op = make_rma(RmaKind::Atomic, t.a_to_b, &v, 8, 1, 0);
  op.count = 1;
  op.atomic_op = AtomicOp::Bor;
  op.datatype = AtomicType::Double;  // bitwise on a real
  EXPECT_EQ(t.a->rma(op), Status::NotSupported);
  op.atomic_op = AtomicOp::Read;  // ATOMIC_READ is a fetch only
  op.datatype = AtomicType::Uint64;
  EXPECT_EQ(t.a->rma(op), Status::NotSupported);
  op.atomic_op = AtomicOp::Sum;
  op.count = 2;  // 16 bytes of operand wanted, 8 given
  EXPECT_EQ(t.a->rma(op), Status::Invalid);
  op.count = 1;
  op.kind = RmaKind::FetchAtomic;  // no result buffer
  EXPECT_EQ(t.a->rma(op), Status::Invalid);
  op.result[0] = {&r, 8};
  op.result_count = 1;
  op.count = 100;  // 800 bytes > kMaxAtomicBytes
  EXPECT_EQ(t.a->rma(op), Status::TooBig);
  RmaOp rd = make_rma(RmaKind::Read, t.a_to_b, &v, 8, 1, 0);
  rd.flags |= kOpInject;
  EXPECT_EQ(t.a->rma(rd), Status::Invalid);
  rd.flags = 0;
  rd.peer = 77;
  EXPECT_EQ(t.a->rma(rd), Status::Invalid);
  EXPECT_EQ(t.a->sends_in_use(), 0u);
}

TEST(Rma, ADeadPeerFailsOperationsWaitingForAnAnswer) {
  EngineConfig ca;
  ca.peer_timeout_ns = 50'000'000;
  Pair t({}, ca);
  TestMrs mrs;
  t.b->set_mr_lookup(&mrs);
  auto& r = mrs.regions[3];
  r.bytes.assign(1 << 20, 0);
  r.access = kAccessRemoteRead;
  std::vector<uint8_t> dst(1 << 20);
  t.b.reset();  // the target goes away before answering
  ASSERT_EQ(t.a->rma(make_rma(RmaKind::Read, t.a_to_b, dst.data(), dst.size(), 3, 0)), Status::Ok);
  bool done = false;
  for (int i = 0; i < 100000 && !done; ++i) {
    PacketBuf bufs[32];
    uint16_t n;
    while ((n = t.link.b().rx_burst(bufs, 32)) > 0) t.link.b().free(bufs, n);  // nobody home
    while ((n = t.link.a().rx_burst(bufs, 32)) > 0)
      for (uint16_t k = 0; k < n; ++k) t.a->on_packet(bufs[k]);
    t.a->progress();
    done = !t.sink_a.comps.empty();
    uint64_t next = std::min(t.link.next_delivery_ns(), t.a->next_deadline_ns());
    t.clock.set(std::max(next == UINT64_MAX ? t.clock.now_ns() + 1'000'000 : next, t.clock.now_ns() + 1));
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(t.sink_a.comps[0].status, Status::TimedOut);
  EXPECT_EQ(t.sink_a.comps[0].flags, kCompRma | kCompRead);
}

// ---- atomics against a reference ----

template <class T> struct IsComplex : std::false_type {};
template <class T> struct IsComplex<std::complex<T>> : std::true_type {};

// The reference: fi_atomic(3)'s definitions, one element at a time.
template <class T>
T reference(AtomicOp op, T d, T s, T c) {
  auto b = [](const T& v) { return v != T{}; };
  if constexpr (!IsComplex<T>::value) {
    switch (op) {
      case AtomicOp::Min: return std::min(d, s);
      case AtomicOp::Max: return std::max(d, s);
      case AtomicOp::CswapLe: return c <= d ? s : d;
      case AtomicOp::CswapLt: return c < d ? s : d;
      case AtomicOp::CswapGe: return c >= d ? s : d;
      case AtomicOp::CswapGt: return c > d ? s : d;
      default: break;
    }
  }
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case AtomicOp::Bor: return T(d | s);
      case AtomicOp::Band: return T(d & s);
      case AtomicOp::Bxor: return T(d ^ s);
      case AtomicOp::Mswap: return T((s & c) | (d & ~c));
      default: break;
    }
  }
  switch (op) {
    case AtomicOp::Sum: return d + s;
    case AtomicOp::Prod: return d * s;
    case AtomicOp::Lor: return (b(d) || b(s)) ? T(1) : T(0);
    case AtomicOp::Land: return (b(d) && b(s)) ? T(1) : T(0);
    case AtomicOp::Lxor: return (b(d) != b(s)) ? T(1) : T(0);
    case AtomicOp::Read: return d;
    case AtomicOp::Write: return s;
    case AtomicOp::Cswap: return c == d ? s : d;
    case AtomicOp::CswapNe: return c != d ? s : d;
    default: ADD_FAILURE() << "no reference for op " << int(op); return d;
  }
}

template <class T>
T random_value(std::mt19937_64& g, int i) {
  if constexpr (IsComplex<T>::value) {
    using R = typename T::value_type;
    return T(R(int(g() % 7) - 3), R(int(g() % 5) - 2));
  } else if constexpr (std::is_floating_point_v<T>) {
    return T(int(g() % 9) - 4) / T(2);
  } else {
    return i == 0 ? T(0) : T(g());  // a zero now and then for the logical ops
  }
}

template <class T>
void check_triple(Pair& t, TestMrs& mrs, AtomicOp op, AtomicType type, RmaKind kind, size_t& n,
                  std::mt19937_64& g) {
  constexpr uint32_t kCount = 4;
  T target[kCount], operand[kCount], compare[kCount], result[kCount], want[kCount];
  for (uint32_t i = 0; i < kCount; ++i) {
    target[i] = random_value<T>(g, int(i));
    operand[i] = random_value<T>(g, int(i) + 1);
    compare[i] = i % 2 ? target[i] : random_value<T>(g, int(i) + 2);  // equal half the time
    want[i] = reference<T>(op, target[i], operand[i], compare[i]);
  }
  auto& r = mrs.regions[5];
  r.bytes.assign(sizeof target + 16, 0);
  std::memcpy(r.bytes.data() + 16, target, sizeof target);
  RmaOp a = make_rma(kind, t.a_to_b, operand, sizeof operand, 5, 16);
  a.atomic_op = op;
  a.datatype = type;
  a.count = kCount;
  if (kind == RmaKind::CompareAtomic) {
    a.compare[0] = {compare, sizeof compare};
    a.compare_count = 1;
  }
  if (kind != RmaKind::Atomic) {
    a.result[0] = {result, sizeof result};
    a.result_count = 1;
  }
  ASSERT_EQ(t.a->rma(a), Status::Ok) << int(op) << "/" << int(type);
  Completion c = wait_a(t, ++n);
  ASSERT_EQ(c.status, Status::Ok) << int(op) << "/" << int(type);
  EXPECT_EQ(c.flags, kCompAtomic | (kind == RmaKind::Atomic ? kCompWrite : kCompRead));
  for (uint32_t i = 0; i < kCount; ++i) {
    T got;
    std::memcpy(&got, r.bytes.data() + 16 + i * sizeof(T), sizeof got);
    EXPECT_TRUE(got == want[i]) << "op " << int(op) << " type " << int(type) << " kind "
                                << int(kind) << " element " << i;
    if (kind != RmaKind::Atomic) {
      EXPECT_TRUE(result[i] == target[i]) << "fetched value, op " << int(op) << " type " << int(type);
    }
  }
}

TEST(RmaAtomics, EveryValidTripleMatchesTheReferenceOverALossyLink) {
  Pair t(faults(5));
  TestMrs mrs;
  t.b->set_mr_lookup(&mrs);
  mrs.regions[5].access = kAccessRemoteRead | kAccessRemoteWrite;
  std::mt19937_64 g(99);
  size_t n = 0, valid = 0;
  for (int k = 0; k < 3; ++k) {
    const RmaKind kind = k == 0 ? RmaKind::Atomic : k == 1 ? RmaKind::FetchAtomic : RmaKind::CompareAtomic;
    const AtomicKind ak = k == 0 ? AtomicKind::Plain : k == 1 ? AtomicKind::Fetch : AtomicKind::Compare;
    for (int o = 0; o < int(AtomicOp::Count); ++o) {
      for (int d = 0; d < int(AtomicType::Count); ++d) {
        const auto op = AtomicOp(o);
        const auto type = AtomicType(d);
        if (!atomic_valid(op, type, ak)) continue;
        ++valid;
        switch (type) {
          case AtomicType::Int8: check_triple<int8_t>(t, mrs, op, type, kind, n, g); break;
          case AtomicType::Uint8: check_triple<uint8_t>(t, mrs, op, type, kind, n, g); break;
          case AtomicType::Int16: check_triple<int16_t>(t, mrs, op, type, kind, n, g); break;
          case AtomicType::Uint16: check_triple<uint16_t>(t, mrs, op, type, kind, n, g); break;
          case AtomicType::Int32: check_triple<int32_t>(t, mrs, op, type, kind, n, g); break;
          case AtomicType::Uint32: check_triple<uint32_t>(t, mrs, op, type, kind, n, g); break;
          case AtomicType::Int64: check_triple<int64_t>(t, mrs, op, type, kind, n, g); break;
          case AtomicType::Uint64: check_triple<uint64_t>(t, mrs, op, type, kind, n, g); break;
          case AtomicType::Float: check_triple<float>(t, mrs, op, type, kind, n, g); break;
          case AtomicType::Double: check_triple<double>(t, mrs, op, type, kind, n, g); break;
          case AtomicType::FloatComplex: check_triple<std::complex<float>>(t, mrs, op, type, kind, n, g); break;
          case AtomicType::DoubleComplex: check_triple<std::complex<double>>(t, mrs, op, type, kind, n, g); break;
          case AtomicType::LongDouble: check_triple<long double>(t, mrs, op, type, kind, n, g); break;
          case AtomicType::LongDoubleComplex: check_triple<std::complex<long double>>(t, mrs, op, type, kind, n, g); break;
          default: break;
        }
      }
    }
  }
  // 14 types: plain 10 ops (MIN/MAX 11 types, SUM/PROD/LOR/LAND/LXOR/WRITE 14, BOR/BAND/BXOR 8)
  // = 2*11 + 6*14 + 3*8 = 130; fetch adds ATOMIC_READ on 14 = 144; compare CSWAP/NE 14 each,
  // LE/LT/GE/GT 11 each, MSWAP 8 = 80.
  EXPECT_EQ(valid, 130u + 144u + 80u);
  EXPECT_EQ(t.b->stats().atomic_served, valid);
}

}  // namespace
}  // namespace pollfab::transport::test
