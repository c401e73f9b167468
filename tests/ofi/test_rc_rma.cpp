// verbs RC, one-sided (fi_rma(3), fi_atomic(3), fi_mr(3)): RDMA READ / WRITE / WRITE with
// immediate data and the remote access errors, the device's atomics against a model and what
// they refuse, and the registration cache. The application: tests/ofi/rc_fixture.hpp.
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include <random>

#include "tests/ofi/rc_fixture.hpp"
#include "tests/ofi/rdma_resources.hpp"

namespace pollfab::ofitest {
namespace {

// RDMA WRITE, READ and WRITE with immediate data (fi_writedata consumes a posted receive:
// FI_RX_CQ_DATA); then a bad key and an access beyond the region, each on a fresh connection:
// the initiator's completion is FI_EACCES with the verbs status, both sides get FI_SHUTDOWN.
TEST(OfiRc, RmaWriteReadWritedataAndRemoteAccessErrors) {
  REQUIRE_RC();
  const uint64_t caps = FI_MSG | FI_RMA;
  {
    Rc r(caps);
    EXPECT_TRUE(r.info()->rx_attr->mode & FI_RX_CQ_DATA);
    const sockaddr_in to = r.listen();
    fi_context rctx[2], sctx[3];
    ASSERT_TRUE(r.connect(to, 64, &rctx[0], FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE));
    char* remote = r.server.buf.data();
    const uint64_t addr = reinterpret_cast<uintptr_t>(remote);
    const uint64_t key = fi_mr_key(r.server.mr);
    for (size_t i = 0; i < 8192; ++i) r.client.buf[i] = char(i * 13 + 1);
    ASSERT_EQ(fi_write(r.client.ep, r.client.buf.data(), 8192, r.client.desc(), 0, addr + 1024,
                       key, &sctx[0]), 0);
    fi_cq_data_entry e{};
    ASSERT_EQ(wait_cq(r.client.cq, e), 1);
    EXPECT_EQ(e.op_context, &sctx[0]);
    EXPECT_EQ(e.flags & (FI_RMA | FI_WRITE), FI_RMA | FI_WRITE);
    EXPECT_EQ(std::memcmp(remote + 1024, r.client.buf.data(), 8192), 0);
    // Read it back into another part of the client's buffer.
    ASSERT_EQ(fi_read(r.client.ep, r.client.buf.data() + 16384, 8192, r.client.desc(), 0,
                      addr + 1024, key, &sctx[1]), 0);
    ASSERT_EQ(wait_cq(r.client.cq, e), 1);
    EXPECT_EQ(e.op_context, &sctx[1]);
    EXPECT_EQ(e.flags & (FI_RMA | FI_READ), FI_RMA | FI_READ);
    EXPECT_EQ(std::memcmp(r.client.buf.data() + 16384, r.client.buf.data(), 8192), 0);
    // writedata: the server's posted receive (rctx[0]) reports the data, not bytes.
    ASSERT_EQ(fi_writedata(r.client.ep, r.client.buf.data(), 512, r.client.desc(), 0x5eed, 0,
                           addr + 40000, key, &sctx[2]), 0);
    ASSERT_EQ(wait_cq(r.server.cq, e), 1);
    EXPECT_EQ(e.op_context, &rctx[0]);
    EXPECT_EQ(e.flags & (FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA),
              FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
    EXPECT_EQ(e.data, 0x5eedu);
    EXPECT_EQ(std::memcmp(remote + 40000, r.client.buf.data(), 512), 0);
    ASSERT_EQ(wait_cq(r.client.cq, e), 1);
    // Two remote segments in one call are refused.
    fi_rma_iov riov[2] = {{addr, 8, key}, {addr + 8, 8, key}};
    iovec iov{r.client.buf.data(), 16};
    void* d = r.client.desc();
    fi_msg_rma msg{&iov, &d, 1, 0, riov, 2, nullptr, 0};
    EXPECT_EQ(fi_writemsg(r.client.ep, &msg, 0), -FI_EINVAL);
  }
  {
    // An application that does not take FI_RX_CQ_DATA cannot write with CQ data.
    fi_info* hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_MSG;
    hints->caps = caps;
    hints->domain_attr->mr_mode = kRcMrMode;
    hints->fabric_attr->prov_name = strdup(test_provider());
    fi_info* info = nullptr;
    ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info), 0);
    fi_freeinfo(hints);
    EXPECT_FALSE(info->rx_attr->mode & FI_RX_CQ_DATA);
    fid_fabric* fab = nullptr;
    fid_domain* dom = nullptr;
    fid_ep* ep = nullptr;
    fid_cq* cq = nullptr;
    ASSERT_EQ(fi_fabric(info->fabric_attr, &fab, nullptr), 0);
    ASSERT_EQ(fi_domain(fab, info, &dom, nullptr), 0);
    fi_cq_attr ca{};
    ASSERT_EQ(fi_cq_open(dom, &ca, &cq, nullptr), 0);
    ASSERT_EQ(fi_endpoint(dom, info, &ep, nullptr), 0);
    ASSERT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
    ASSERT_EQ(fi_enable(ep), 0);
    char b[8] = {};
    EXPECT_EQ(fi_writedata(ep, b, 8, nullptr, 1, 0, 0, 0, nullptr), -FI_EOPNOTSUPP);
    fi_close(&ep->fid);
    fi_close(&cq->fid);
    fi_close(&dom->fid);
    fi_close(&fab->fid);
    fi_freeinfo(info);
  }
  for (int bad = 0; bad < 2; ++bad) {
    Rc r(caps);
    const sockaddr_in to = r.listen();
    fi_context rctx, sctx;
    ASSERT_TRUE(r.connect(to, 64, &rctx, FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE));
    const uint64_t addr = reinterpret_cast<uintptr_t>(r.server.buf.data());
    const uint64_t key = fi_mr_key(r.server.mr);
    const char before = r.server.buf[0];
    if (bad == 0)  // a key nobody registered
      ASSERT_EQ(fi_write(r.client.ep, r.client.buf.data(), 64, r.client.desc(), 0, addr,
                         key ^ 0x5a5a00, &sctx), 0);
    else  // past the end of the region
      ASSERT_EQ(fi_read(r.client.ep, r.client.buf.data(), 4096, r.client.desc(), 0,
                        addr + r.server.buf.size() - 1024, key, &sctx), 0);
    fi_cq_data_entry e{};
    fi_cq_err_entry err{};
    ASSERT_EQ(wait_cq(r.client.cq, e, &err), -FI_EAVAIL) << "case " << bad;
    EXPECT_EQ(err.op_context, &sctx);
    EXPECT_EQ(err.err, FI_EACCES) << "case " << bad;
    EXPECT_EQ(err.prov_errno, 10) << "case " << bad;  // IBV_WC_REM_ACCESS_ERR
    EXPECT_EQ(r.server.buf[0], before);
    uint32_t event = 0;
    std::vector<uint8_t> ev;
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(r.next(event, ev), 1) << "case " << bad;
      EXPECT_EQ(event, uint32_t(FI_SHUTDOWN));
    }
  }
}

// Device atomics against a reference model: fetch-add (fi_atomic, fi_fetch_atomic, FI_ATOMIC_READ)
// and compare-swap on a 64-bit word; fi_query_atomic and fi_atomicvalid say what the device
// cannot do, and those calls are refused.
TEST(OfiRc, DeviceAtomicsAgainstAReferenceAndWhatTheyRefuse) {
  REQUIRE_RC();
  Rc r(FI_MSG | FI_RMA | FI_ATOMIC);
  ASSERT_TRUE(r.info()->caps & FI_ATOMIC);
  const sockaddr_in to = r.listen();
  fi_context rctx, sctx;
  ASSERT_TRUE(r.connect(to, 64, &rctx, FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE));
  fi_atomic_attr attr{};
  EXPECT_EQ(fi_query_atomic(r.client.domain, FI_UINT64, FI_SUM, &attr, 0), 0);
  EXPECT_EQ(attr.size, 8u);
  EXPECT_EQ(attr.count, 1u);
  EXPECT_EQ(fi_query_atomic(r.client.domain, FI_UINT64, FI_CSWAP, &attr, FI_COMPARE_ATOMIC), 0);
  EXPECT_EQ(fi_query_atomic(r.client.domain, FI_UINT32, FI_SUM, &attr, 0), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_query_atomic(r.client.domain, FI_DOUBLE, FI_SUM, &attr, FI_FETCH_ATOMIC), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_query_atomic(r.client.domain, FI_UINT64, FI_MIN, &attr, 0), -FI_EOPNOTSUPP);
  size_t count = 0;
  EXPECT_EQ(fi_atomicvalid(r.client.ep, FI_UINT64, FI_SUM, &count), 0);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(fi_compare_atomicvalid(r.client.ep, FI_INT64, FI_CSWAP, &count), 0);
  EXPECT_EQ(fi_fetch_atomicvalid(r.client.ep, FI_UINT64, FI_BAND, &count), -FI_EOPNOTSUPP);

  auto* word = reinterpret_cast<uint64_t*>(r.server.buf.data() + 256);
  *word = 100;
  uint64_t model = 100;
  const uint64_t addr = reinterpret_cast<uintptr_t>(word);
  const uint64_t key = fi_mr_key(r.server.mr);
  auto* res = reinterpret_cast<uint64_t*>(r.client.buf.data() + 1024);
  auto* operand = reinterpret_cast<uint64_t*>(r.client.buf.data() + 2048);
  fi_cq_data_entry e{};
  auto done = [&] { return wait_cq(r.client.cq, e) == 1 && e.op_context == &sctx; };
  std::mt19937_64 rng(7);
  for (int i = 0; i < 40; ++i) {
    *operand = rng() % 1000;
    switch (i % 4) {
      case 0:  // fi_atomic: add, no result
        ASSERT_EQ(fi_atomic(r.client.ep, operand, 1, nullptr, 0, addr, key, FI_UINT64, FI_SUM, &sctx), 0);
        ASSERT_TRUE(done());
        EXPECT_EQ(e.flags & (FI_ATOMIC | FI_WRITE), FI_ATOMIC | FI_WRITE);
        model += *operand;
        break;
      case 1:  // fi_fetch_atomic: add, the value before
        ASSERT_EQ(fi_fetch_atomic(r.client.ep, operand, 1, nullptr, res, r.client.desc(), 0, addr,
                                  key, FI_UINT64, FI_SUM, &sctx), 0);
        ASSERT_TRUE(done());
        EXPECT_EQ(e.flags & (FI_ATOMIC | FI_READ), FI_ATOMIC | FI_READ);
        EXPECT_EQ(*res, model);
        model += *operand;
        break;
      case 2: {  // compare-swap: matches every other time
        uint64_t cmp = (i % 8 == 2) ? model : model + 1;
        ASSERT_EQ(fi_compare_atomic(r.client.ep, operand, 1, nullptr, &cmp, nullptr, res,
                                    r.client.desc(), 0, addr, key, FI_UINT64, FI_CSWAP, &sctx), 0);
        ASSERT_TRUE(done());
        EXPECT_EQ(*res, model);
        if (cmp == model) model = *operand;
        break;
      }
      case 3:  // FI_ATOMIC_READ
        ASSERT_EQ(fi_fetch_atomic(r.client.ep, nullptr, 1, nullptr, res, r.client.desc(), 0, addr,
                                  key, FI_UINT64, FI_ATOMIC_READ, &sctx), 0);
        ASSERT_TRUE(done());
        EXPECT_EQ(*res, model);
        break;
    }
    EXPECT_EQ(*word, model) << "step " << i;
  }
  // Refused: 32-bit, two elements, a misaligned target, a result without descriptor.
  uint32_t small = 1;
  EXPECT_EQ(fi_atomic(r.client.ep, &small, 1, nullptr, 0, addr, key, FI_UINT32, FI_SUM, &sctx),
            -FI_EOPNOTSUPP);
  uint64_t two[2] = {1, 2};
  EXPECT_EQ(fi_atomic(r.client.ep, two, 2, nullptr, 0, addr, key, FI_UINT64, FI_SUM, &sctx), -FI_EINVAL);
  EXPECT_EQ(fi_atomic(r.client.ep, two, 1, nullptr, 0, addr + 4, key, FI_UINT64, FI_SUM, &sctx), -FI_EINVAL);
  EXPECT_EQ(fi_fetch_atomic(r.client.ep, two, 1, nullptr, res, nullptr, 0, addr, key, FI_UINT64,
                            FI_SUM, &sctx), -FI_EINVAL);
  EXPECT_EQ(*word, model);
}

// The registration cache: registering memory an open registration covers, with the same remote
// access, shares it (same key, one device MR), the shared key keeps working when the first
// user closes, and the device MR goes with the last one. Other memory, or other remote access
// (a close must revoke what a key allowed), registers anew.
TEST(OfiRc, RepeatedRegistrationsShareOneDeviceRegistration) {
  REQUIRE_RC();
  Rc r(FI_MSG | FI_RMA);
  const sockaddr_in to = r.listen();
  fi_context rctx, sctx;
  ASSERT_TRUE(r.connect(to, 64, &rctx, FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE));
  const long mrs = device_counts().at("mr");
  char* base = r.server.buf.data();
  fid_mr *same = nullptr, *inner = nullptr, *other = nullptr;
  ASSERT_EQ(fi_mr_reg(r.server.domain, base, r.server.buf.size(),
                      FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &same, nullptr), 0);
  ASSERT_EQ(fi_mr_reg(r.server.domain, base + 4096, 8192, FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE,
                      0, 0, 0, &inner, nullptr), 0);
  EXPECT_EQ(fi_mr_key(same), fi_mr_key(r.server.mr));
  EXPECT_EQ(fi_mr_key(inner), fi_mr_key(r.server.mr));
  EXPECT_EQ(device_counts().at("mr"), mrs) << "covered ranges must not register again";
  fid_mr* local_only = nullptr;
  ASSERT_EQ(fi_mr_reg(r.server.domain, base, 4096, FI_SEND | FI_RECV, 0, 0, 0, &local_only, nullptr), 0);
  EXPECT_NE(fi_mr_key(local_only), fi_mr_key(same));
  EXPECT_EQ(device_counts().at("mr"), mrs + 1);
  fi_close(&local_only->fid);
  EXPECT_EQ(device_counts().at("mr"), mrs);
  static char elsewhere[4096];
  ASSERT_EQ(fi_mr_reg(r.server.domain, elsewhere, sizeof elsewhere, FI_RECV, 0, 0, 0, &other, nullptr), 0);
  EXPECT_EQ(device_counts().at("mr"), mrs + 1);
  // The fixture's own registration (FI_REMOTE_READ | WRITE) closes; the shared key still works.
  const uint64_t key = fi_mr_key(same);
  fi_close(&r.server.mr->fid);
  r.server.mr = same;
  const uint64_t addr = reinterpret_cast<uintptr_t>(base + 4096);
  std::memcpy(r.client.buf.data(), "cached", 7);
  ASSERT_EQ(fi_write(r.client.ep, r.client.buf.data(), 7, r.client.desc(), 0, addr, key, &sctx), 0);
  fi_cq_data_entry e{};
  ASSERT_EQ(wait_cq(r.client.cq, e), 1);
  EXPECT_STREQ(base + 4096, "cached");
  fi_close(&inner->fid);
  fi_close(&other->fid);
  EXPECT_EQ(device_counts().at("mr"), mrs);
}

}  // namespace
}  // namespace pollfab::ofitest
