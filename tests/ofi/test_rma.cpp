// fi_rma(3), fi_atomic(3), fi_mr(3) and fi_cntr(3) through the public API (pollfab's drop-in):
// writes and reads with counters on both sides (FI_WRITE/FI_READ at the initiator,
// FI_REMOTE_WRITE/FI_REMOTE_READ at the target, and fi_mr_bind's FI_RMA_EVENT counters), remote
// CQ data, key/range/access errors as error completions and counter errors with target memory
// untouched, atomics (fi_atomic, fi_fetch_atomic, fi_compare_atomic and the query calls),
// offset addressing (mr_mode 0) and FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, fi_cntr_wait with a
// timeout, fi_cntr_adderr / fi_cntr_seterr.
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <sys/mman.h>

#include <cstring>

#include "tests/ofi/ofi_fixture.hpp"

namespace pollfab::ofitest {
namespace {

constexpr uint64_t kCaps = FI_MSG | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ |
                           FI_REMOTE_WRITE | FI_RMA_EVENT | FI_LOCAL_COMM | FI_REMOTE_COMM;

fid_cntr* open_cntr(Ofi& f) {
  fi_cntr_attr attr{};
  attr.events = FI_CNTR_EVENTS_COMP;
  fid_cntr* c = nullptr;
  EXPECT_EQ(fi_cntr_open(f.domain(), &attr, &c, nullptr), 0);
  return c;
}

struct Counters {
  fid_cntr* write = nullptr;
  fid_cntr* read = nullptr;
  fid_cntr* rwrite = nullptr;
  fid_cntr* rread = nullptr;
  void close() {
    for (fid_cntr* c : {write, read, rwrite, rread})
      if (c) fi_close(&c->fid);
  }
};

fid_mr* reg(Ofi& f, void* buf, size_t len, uint64_t access, uint64_t key) {
  fid_mr* mr = nullptr;
  EXPECT_EQ(fi_mr_reg(f.domain(), buf, len, access, 0, key, 0, &mr, nullptr), 0);
  return mr;
}

// Remote address of byte off of a region: an offset, or a virtual address under FI_MR_VIRT_ADDR.
uint64_t raddr(Ofi& f, const void* base, size_t off) {
  return (f.info()->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
             ? reinterpret_cast<uint64_t>(base) + off
             : off;
}

class OfiRma : public ::testing::TestWithParam<int> {};  // param: hinted mr_mode

TEST_P(OfiRma, WriteReadWithCountersOnBothSides) {
  Ofi f(kCaps, FI_AV_MAP, FI_THREAD_DOMAIN, GetParam());
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f.info()->tx_attr->rma_iov_limit, 1u);
  // The domain works in the mode the hints asked for (what raddr() relies on).
  EXPECT_EQ(f.info()->domain_attr->mr_mode & (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY),
            GetParam() & (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY));
  Counters ic, tc;
  ic.write = open_cntr(f);
  ic.read = open_cntr(f);
  tc.rwrite = open_cntr(f);
  tc.rread = open_cntr(f);
  Ep& init = f.add_ep(0, [&](fid_ep* ep) {
    EXPECT_EQ(fi_ep_bind(ep, &ic.write->fid, FI_WRITE), 0);
    EXPECT_EQ(fi_ep_bind(ep, &ic.read->fid, FI_READ), 0);
  });
  Ep& tgt = f.add_ep(0, [&](fid_ep* ep) {
    EXPECT_EQ(fi_ep_bind(ep, &tc.rwrite->fid, FI_REMOTE_WRITE), 0);
    EXPECT_EQ(fi_ep_bind(ep, &tc.rread->fid, FI_REMOTE_READ), 0);
  });
  std::vector<uint8_t> region(1 << 20, 0);
  fid_mr* mr = reg(f, region.data(), region.size(), FI_REMOTE_READ | FI_REMOTE_WRITE, 0x1234);
  fid_cntr* mr_cntr = open_cntr(f);
  ASSERT_EQ(fi_mr_bind(mr, &mr_cntr->fid, FI_REMOTE_WRITE), 0);  // FI_RMA_EVENT
  const uint64_t key = fi_mr_key(mr);
  if (!(f.info()->domain_attr->mr_mode & FI_MR_PROV_KEY)) {
    EXPECT_EQ(key, 0x1234u);
  }

  std::vector<uint8_t> src(300'000), back(300'000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i * 7 + 1);
  fi_context wctx, rctx;
  ASSERT_EQ(fi_write(init.ep, src.data(), src.size(), nullptr, tgt.self,
                     raddr(f, region.data(), 100), key, &wctx), 0);
  ASSERT_EQ(fi_cntr_wait(ic.write, 1, 10000), 0);
  fi_cq_tagged_entry e;
  ASSERT_EQ(Ofi::wait(init.cq, e), 1);
  EXPECT_EQ(e.op_context, &wctx);
  EXPECT_EQ(e.flags, FI_RMA | FI_WRITE);
  EXPECT_EQ(std::memcmp(region.data() + 100, src.data(), src.size()), 0);
  ASSERT_EQ(fi_read(init.ep, back.data(), back.size(), nullptr, tgt.self,
                    raddr(f, region.data(), 100), key, &rctx), 0);
  ASSERT_EQ(Ofi::wait(init.cq, e), 1);
  EXPECT_EQ(e.flags, FI_RMA | FI_READ);
  EXPECT_EQ(back, src);
  EXPECT_EQ(fi_cntr_read(ic.read), 1u);
  // The target's counters move as its engine serves (driven by the target's progress).
  EXPECT_EQ(fi_cntr_wait(tc.rwrite, 1, 10000), 0);
  EXPECT_EQ(fi_cntr_wait(tc.rread, 1, 10000), 0);
  EXPECT_EQ(fi_cntr_read(mr_cntr), 1u);  // the region's own counter: the write only

  // Remote CQ data: the target's CQ reports it, and consumes no receive.
  ASSERT_EQ(fi_writedata(init.ep, src.data(), 8, nullptr, 0xabcdef, tgt.self,
                         raddr(f, region.data(), 0), key, &wctx), 0);
  ASSERT_EQ(Ofi::wait(init.cq, e), 1);
  ASSERT_EQ(Ofi::wait(tgt.cq, e), 1);
  EXPECT_EQ(e.flags, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
  EXPECT_EQ(e.data, 0xabcdefu);
  // An inject write: no completion, but the counter counts it.
  ASSERT_EQ(fi_inject_write(init.ep, src.data(), 16, tgt.self, raddr(f, region.data(), 0), key), 0);
  ASSERT_EQ(fi_cntr_wait(ic.write, 3, 10000), 0);
  EXPECT_TRUE(Ofi::quiet(init.cq));
  EXPECT_EQ(fi_close(&mr->fid), 0);
  fi_close(&mr_cntr->fid);
  f.close_eps();
  ic.close();
  tc.close();
}

// Registering memory that is not mapped is refused (a remote access to it would fault).
TEST_P(OfiRma, RegisteringUnmappedMemoryIsEfault) {
  Ofi f(kCaps, FI_AV_MAP, FI_THREAD_DOMAIN, GetParam());
  ASSERT_TRUE(f.ok());
  void* p = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  munmap(p, 1 << 20);
  fid_mr* mr = nullptr;
  EXPECT_EQ(fi_mr_reg(f.domain(), p, 1 << 20, FI_REMOTE_WRITE, 0, 7, 0, &mr, nullptr), -FI_EFAULT);
  static char ok[64];
  ASSERT_EQ(fi_mr_reg(f.domain(), ok, sizeof ok, FI_REMOTE_WRITE, 0, 7, 0, &mr, nullptr), 0);
  fi_close(&mr->fid);
}

TEST_P(OfiRma, BadKeyRangeAndAccessAreErrorCompletionsAndTouchNothing) {
  Ofi f(kCaps, FI_AV_MAP, FI_THREAD_DOMAIN, GetParam());
  ASSERT_TRUE(f.ok());
  Counters ic;
  ic.write = open_cntr(f);
  Ep& init = f.add_ep(0, [&](fid_ep* ep) { EXPECT_EQ(fi_ep_bind(ep, &ic.write->fid, FI_WRITE), 0); });
  Ep& tgt = f.add_ep();
  std::vector<uint8_t> ro(4096, 0x5a);
  fid_mr* mr = reg(f, ro.data(), ro.size(), FI_REMOTE_READ, 7);
  const uint64_t key = fi_mr_key(mr);
  uint8_t src[64] = {1};
  struct {
    uint64_t key, off;
    int err;
  } cases[] = {{key + 1000, 0, FI_EINVAL}, {key, 0, FI_EACCES}, {key, 4090, FI_EACCES}};
  for (auto& c : cases) {
    fi_context ctx;
    ASSERT_EQ(fi_write(init.ep, src, sizeof src, nullptr, tgt.self, raddr(f, ro.data(), c.off),
                       c.key, &ctx), 0);
    fi_cq_tagged_entry e;
    fi_cq_err_entry err{};
    ASSERT_EQ(Ofi::wait(init.cq, e, &err), -FI_EAVAIL);
    EXPECT_EQ(err.err, c.err);
    EXPECT_EQ(err.op_context, &ctx);
    EXPECT_EQ(err.flags, FI_RMA | FI_WRITE);
  }
  EXPECT_EQ(fi_cntr_readerr(ic.write), 3u);  // the counter's error count (fi_cntr(3))
  EXPECT_EQ(fi_cntr_read(ic.write), 0u);
  for (uint8_t b : ro) ASSERT_EQ(b, 0x5a);
  // Call-time refusals.
  fi_context ctx;
  EXPECT_EQ(fi_write(init.ep, src, sizeof src, nullptr, 999, 0, key, &ctx), -FI_EINVAL);
  uint64_t v = 1;
  EXPECT_EQ(fi_atomic(init.ep, &v, 1, nullptr, tgt.self, 0, key, FI_DOUBLE, FI_BOR, &ctx),
            -FI_EOPNOTSUPP);
  fi_close(&mr->fid);
  f.close_eps();
  ic.close();
}

TEST_P(OfiRma, AtomicsAndTheirQueries) {
  Ofi f(kCaps, FI_AV_MAP, FI_THREAD_DOMAIN, GetParam());
  ASSERT_TRUE(f.ok());
  Ep& init = f.add_ep();
  Ep& tgt = f.add_ep();
  size_t count = 0;
  EXPECT_EQ(fi_atomicvalid(init.ep, FI_UINT64, FI_SUM, &count), 0);
  EXPECT_GE(count, 1u);
  EXPECT_EQ(fi_fetch_atomicvalid(init.ep, FI_UINT64, FI_ATOMIC_READ, &count), 0);
  EXPECT_EQ(fi_atomicvalid(init.ep, FI_UINT64, FI_ATOMIC_READ, &count), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_compare_atomicvalid(init.ep, FI_UINT32, FI_CSWAP, &count), 0);
  EXPECT_EQ(fi_compare_atomicvalid(init.ep, FI_FLOAT, FI_MSWAP, &count), -FI_EOPNOTSUPP);
  fi_atomic_attr attr{};
  EXPECT_EQ(fi_query_atomic(f.domain(), FI_DOUBLE_COMPLEX, FI_PROD, &attr, 0), 0);
  EXPECT_EQ(attr.size, 16u);
  EXPECT_GE(attr.count, 1u);
  EXPECT_EQ(fi_query_atomic(f.domain(), FI_DOUBLE, FI_BAND, &attr, FI_FETCH_ATOMIC), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_query_atomic(f.domain(), FI_INT128, FI_SUM, &attr, 0), -FI_EOPNOTSUPP);

  uint64_t cells[4] = {10, 20, 30, 40};
  fid_mr* mr = reg(f, cells, sizeof cells, FI_REMOTE_READ | FI_REMOTE_WRITE, 3);
  const uint64_t key = fi_mr_key(mr);
  fi_context ctx;
  fi_cq_tagged_entry e;
  uint64_t add[2] = {1, 2};
  ASSERT_EQ(fi_atomic(init.ep, add, 2, nullptr, tgt.self, raddr(f, cells, 0), key, FI_UINT64,
                      FI_SUM, &ctx), 0);
  ASSERT_EQ(Ofi::wait(init.cq, e), 1);
  EXPECT_EQ(e.flags, FI_ATOMIC | FI_WRITE);
  EXPECT_EQ(cells[0], 11u);
  EXPECT_EQ(cells[1], 22u);
  uint64_t swap = 99, old = 0;
  ASSERT_EQ(fi_fetch_atomic(init.ep, &swap, 1, nullptr, &old, nullptr, tgt.self,
                            raddr(f, cells, 16), key, FI_UINT64, FI_ATOMIC_WRITE, &ctx), 0);
  ASSERT_EQ(Ofi::wait(init.cq, e), 1);
  EXPECT_EQ(e.flags, FI_ATOMIC | FI_READ);
  EXPECT_EQ(old, 30u);
  EXPECT_EQ(cells[2], 99u);
  uint64_t cmp = 40, desired = 7, prev = 0;
  ASSERT_EQ(fi_compare_atomic(init.ep, &desired, 1, nullptr, &cmp, nullptr, &prev, nullptr,
                              tgt.self, raddr(f, cells, 24), key, FI_UINT64, FI_CSWAP, &ctx), 0);
  ASSERT_EQ(Ofi::wait(init.cq, e), 1);
  EXPECT_EQ(prev, 40u);
  EXPECT_EQ(cells[3], 7u);
  uint64_t got = 0;  // ATOMIC_READ takes no operand
  ASSERT_EQ(fi_fetch_atomic(init.ep, nullptr, 1, nullptr, &got, nullptr, tgt.self,
                            raddr(f, cells, 8), key, FI_UINT64, FI_ATOMIC_READ, &ctx), 0);
  ASSERT_EQ(Ofi::wait(init.cq, e), 1);
  EXPECT_EQ(got, 22u);
  fi_close(&mr->fid);
}

INSTANTIATE_TEST_SUITE_P(MrMode, OfiRma,
                         ::testing::Values(0, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY),
                         [](const auto& i) { return i.param ? "VirtAddrProvKey" : "Offsets"; });

TEST(OfiCntr, WaitTimesOutAndErrorsCanBeSetAndAdded) {
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  fid_cntr* c = open_cntr(f);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(fi_cntr_wait(c, 1, 50), -FI_ETIMEDOUT);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(50));
  EXPECT_EQ(fi_cntr_add(c, 2), 0);
  EXPECT_EQ(fi_cntr_wait(c, 2, 50), 0);
  EXPECT_EQ(fi_cntr_adderr(c, 3), 0);
  EXPECT_EQ(fi_cntr_readerr(c), 3u);
  EXPECT_EQ(fi_cntr_seterr(c, 1), 0);
  EXPECT_EQ(fi_cntr_readerr(c), 1u);
  EXPECT_EQ(fi_cntr_set(c, 0), 0);
  EXPECT_EQ(fi_cntr_read(c), 0u);
  fi_close(&c->fid);
}

}  // namespace
}  // namespace pollfab::ofitest
