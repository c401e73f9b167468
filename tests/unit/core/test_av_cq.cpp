// Provider-neutral AV (fi_av(3)) and CQ (fi_cq(3)), including error paths.
#include <gtest/gtest.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "lib/core/av.hpp"
#include "lib/core/cq.hpp"
#include "lib/core/eq.hpp"
#include "lib/util/clock.hpp"

using namespace pollfab::core;

namespace {

struct Owner final : Object {
  int close() override { return refs() ? -FI_EBUSY : 0; }
};

// 8-byte names, valid when the first byte is 0xAA.
struct Fmt final : AddressFormat {
  size_t len() const noexcept override { return 8; }
  bool valid(const void* a, size_t l) const noexcept override {
    return l == 8 && static_cast<const uint8_t*>(a)[0] == 0xAA;
  }
  std::string str(const void* a, size_t) const override {
    return "fake://" + std::to_string(static_cast<const uint8_t*>(a)[1]);
  }
};

// A CQ of `size` entries in format fmt, api 1.17, no wait object (closed by fi_close).
Cq* open_cq(Object& owner, fi_cq_format fmt, size_t size, Progressable* progress = nullptr,
            bool consumers_may_race = false) {
  fi_cq_attr attr{};
  attr.format = fmt;
  attr.size = size;
  return new Cq(&owner, progress, attr, FI_VERSION(1, 17), consumers_may_race, nullptr);
}

struct CountingProgress final : Progressable {
  int calls = 0;
  void progress() noexcept override { ++calls; }
};

}  // namespace

TEST(Av, InsertLookupRemoveAndErrors) {
  Owner owner;
  Fmt fmt;
  fi_av_attr attr{};
  attr.type = FI_AV_UNSPEC;
  ASSERT_EQ(Av::validate(&attr), 0);
  auto* av = new Av(&owner, fmt, &attr, nullptr);
  EXPECT_EQ(av->type(), FI_AV_TABLE);
  fid_av* f = av->fid();
  uint8_t names[3][8] = {{0xAA, 1}, {0xBB, 2}, {0xAA, 3}};
  fi_addr_t addrs[3];
  int errs[3];
  EXPECT_EQ(fi_av_insert(f, names, 3, addrs, FI_SYNC_ERR, errs), 2);
  EXPECT_EQ(addrs[0], 0u);
  EXPECT_EQ(addrs[1], FI_ADDR_NOTAVAIL);
  EXPECT_EQ(errs[1], -FI_EINVAL);
  EXPECT_EQ(addrs[2], 1u);
  fi_addr_t again;
  EXPECT_EQ(fi_av_insert(f, names[2], 1, &again, 0, nullptr), 1);
  EXPECT_EQ(again, 1u);  // the same name maps to the same fi_addr
  EXPECT_EQ(av->reverse(names[2]), 1u);

  uint8_t out[8] = {};
  size_t len = 4;  // too small: copies what fits, reports the real length
  EXPECT_EQ(fi_av_lookup(f, 1, out, &len), 0);
  EXPECT_EQ(len, 8u);
  EXPECT_EQ(out[0], 0xAA);
  len = sizeof out;
  EXPECT_EQ(fi_av_lookup(f, 7, out, &len), -FI_EINVAL);

  char buf[64];
  size_t blen = sizeof buf;
  EXPECT_STREQ(fi_av_straddr(f, names[0], buf, &blen), "fake://1");

  uint64_t gen = av->generation();
  fi_addr_t bad = 42;
  EXPECT_EQ(fi_av_remove(f, &bad, 1, 0), -FI_EINVAL);
  EXPECT_EQ(fi_av_remove(f, &addrs[0], 1, 0), 0);
  EXPECT_GT(av->generation(), gen);
  uint8_t tmp[8];
  EXPECT_FALSE(av->entry(0, tmp, sizeof tmp));
  EXPECT_TRUE(av->entry(1, tmp, sizeof tmp));
  EXPECT_FALSE(av->entry(1, tmp, 4));  // buffer too small
  EXPECT_EQ(fi_av_remove(f, &addrs[0], 1, 0), -FI_EINVAL);  // already gone
  EXPECT_EQ(fi_av_insert(f, nullptr, 1, addrs, 0, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_close(&f->fid), 0);
  EXPECT_EQ(owner.refs(), 0);
}

TEST(Av, AttributeErrorsAndEqEvents) {
  fi_av_attr attr{};
  attr.type = static_cast<fi_av_type>(77);
  EXPECT_EQ(Av::validate(&attr), -FI_EINVAL);
  attr.type = FI_AV_MAP;
  attr.rx_ctx_bits = 2;
  EXPECT_EQ(Av::validate(&attr), -FI_ENOSYS);
  attr.rx_ctx_bits = 0;
  EXPECT_EQ(Av::validate(nullptr), -FI_EINVAL);

  Owner owner;
  Fmt fmt;
  auto* av = new Av(&owner, fmt, &attr, nullptr);
  auto* eq = new Eq(nullptr, nullptr, nullptr);
  ASSERT_EQ(fi_av_bind(av->fid(), &eq->fid()->fid, 0), 0);
  EXPECT_EQ(fi_close(&eq->fid()->fid), -FI_EBUSY);  // bound: still in use
  uint8_t name[8] = {0xAA, 9};
  fi_addr_t a;
  int ctx;
  EXPECT_EQ(fi_av_insert(av->fid(), name, 1, &a, 0, &ctx), 0);  // async: reported on the EQ
  uint32_t ev;
  fi_eq_entry entry{};
  ASSERT_EQ(fi_eq_read(eq->fid(), &ev, &entry, sizeof entry, 0), ssize_t(sizeof entry));
  EXPECT_EQ(ev, static_cast<uint32_t>(FI_AV_COMPLETE));
  EXPECT_EQ(entry.data, 1u);
  EXPECT_EQ(entry.context, &ctx);
  EXPECT_EQ(fi_close(&av->fid()->fid), 0);
  EXPECT_EQ(fi_close(&eq->fid()->fid), 0);
}

TEST(Cq, FormatsAndSourceAddresses) {
  Owner owner;
  CountingProgress prog;
  for (fi_cq_format fmt : {FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_DATA,
                           FI_CQ_FORMAT_TAGGED, FI_CQ_FORMAT_UNSPEC}) {
    fi_cq_attr attr{};
    attr.format = fmt;
    attr.size = 4;
    ASSERT_EQ(Cq::validate(&attr), 0);
    auto* cq = new Cq(&owner, &prog, attr, FI_VERSION(1, 17), false, nullptr);
    int ctx;
    char data[4];
    cq->push(&ctx, FI_RECV | FI_TAGGED, 4, data, 7, 99, 3);
    fi_cq_tagged_entry e[2]{};
    fi_addr_t src[2];
    ASSERT_EQ(fi_cq_readfrom(cq->fid(), e, 2, src), 1);
    EXPECT_EQ(e[0].op_context, &ctx);
    EXPECT_EQ(src[0], 3u);
    if (fmt == FI_CQ_FORMAT_TAGGED) {
      EXPECT_EQ(e[0].tag, 99u);
      EXPECT_EQ(e[0].data, 7u);
      EXPECT_EQ(e[0].len, 4u);
    }
    EXPECT_EQ(fi_cq_read(cq->fid(), e, 1), -FI_EAGAIN);
    EXPECT_EQ(fi_close(&cq->fid()->fid), 0);
  }
  EXPECT_GT(prog.calls, 0);  // manual progress: reads drive the domain
}

// A read takes what the ring holds in one batch: in each format exactly the format's fields,
// at the format's stride, never more entries than asked for (what lies past them in the
// caller's buffer is untouched), the sources in order; the rest stays queued.
TEST(Cq, BatchReadsWriteEachFormatsFieldsAndNoMoreThanAskedFor) {
  Owner owner;
  for (fi_cq_format fmt : {FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_DATA,
                           FI_CQ_FORMAT_TAGGED}) {
    SCOPED_TRACE("format " + std::to_string(fmt));
    Cq* cq = open_cq(owner, fmt, 8);
    char data[3];
    for (uintptr_t i = 1; i <= 3; ++i)
      cq->push(reinterpret_cast<void*>(i), FI_RECV | FI_TAGGED, 10 * i, &data[i - 1], 100 + i,
               1000 + i, 20 + i);
    const size_t stride = fmt == FI_CQ_FORMAT_CONTEXT ? sizeof(fi_cq_entry)
                          : fmt == FI_CQ_FORMAT_MSG   ? sizeof(fi_cq_msg_entry)
                          : fmt == FI_CQ_FORMAT_DATA  ? sizeof(fi_cq_data_entry)
                                                      : sizeof(fi_cq_tagged_entry);
    std::vector<uint8_t> buf(3 * stride, 0xee);
    fi_addr_t src[3] = {7, 7, 7};
    ASSERT_EQ(fi_cq_readfrom(cq->fid(), buf.data(), 2, src), 2);
    for (uintptr_t i = 0; i < 2; ++i) {
      fi_cq_tagged_entry want{reinterpret_cast<void*>(i + 1), FI_RECV | FI_TAGGED, 10 * (i + 1),
                              &data[i], 100 + i + 1, 1000 + i + 1};
      EXPECT_EQ(std::memcmp(buf.data() + i * stride, &want, stride), 0) << "entry " << i;
      EXPECT_EQ(src[i], 21 + i);
    }
    EXPECT_EQ(src[2], 7u);
    EXPECT_TRUE(std::all_of(buf.begin() + 2 * stride, buf.end(), [](uint8_t b) { return b == 0xee; }));
    ASSERT_EQ(fi_cq_read(cq->fid(), buf.data(), 3), 1);  // the third, left queued
    EXPECT_EQ(*reinterpret_cast<void**>(buf.data()), reinterpret_cast<void*>(3));
    EXPECT_EQ(fi_close(&cq->fid()->fid), 0);
  }
}

// A read that the queued completions can fill is served from them without progress; progress
// runs when they cannot (or for a read of 0 entries, the idiom for a progress call). A reader
// taking fewer completions per call than a round delivers would otherwise fall ever further
// behind (its posted receives run out: the unexpected path).
TEST(Cq, QueuedCompletionsAreServedBeforeProgressPullsMore) {
  Owner owner;
  CountingProgress prog;
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_CONTEXT;
  attr.size = 8;
  auto* cq = new Cq(&owner, &prog, attr, FI_VERSION(1, 17), false, nullptr);
  for (uintptr_t i = 1; i <= 4; ++i)
    cq->push(reinterpret_cast<void*>(i), FI_RECV, 0, nullptr, 0, 0, FI_ADDR_NOTAVAIL);
  fi_cq_entry e[4];
  ASSERT_EQ(fi_cq_read(cq->fid(), e, 2), 2);
  EXPECT_EQ(prog.calls, 0);
  ASSERT_EQ(fi_cq_read(cq->fid(), e, 2), 2);
  EXPECT_EQ(e[1].op_context, reinterpret_cast<void*>(4));
  EXPECT_EQ(prog.calls, 0);
  EXPECT_EQ(fi_cq_read(cq->fid(), e, 2), -FI_EAGAIN);
  EXPECT_EQ(prog.calls, 1);  // nothing queued: progress
  cq->push(reinterpret_cast<void*>(5), FI_RECV, 0, nullptr, 0, 0, FI_ADDR_NOTAVAIL);
  ASSERT_EQ(fi_cq_read(cq->fid(), e, 4), 1);
  EXPECT_EQ(prog.calls, 2);  // fewer queued than asked for: progress first
  EXPECT_EQ(fi_cq_read(cq->fid(), nullptr, 0), -FI_EAGAIN);
  EXPECT_EQ(prog.calls, 3);  // a read of 0 entries is a progress call
  EXPECT_EQ(fi_close(&cq->fid()->fid), 0);
}

TEST(Cq, OverflowKeepsOrderAndErrorsComeFirst) {
  Owner owner;
  Cq* cq = open_cq(owner, FI_CQ_FORMAT_CONTEXT, 2, nullptr, true);
  for (uintptr_t i = 1; i <= 5; ++i)
    cq->push(reinterpret_cast<void*>(i), FI_SEND, 0, nullptr, 0, 0, FI_ADDR_NOTAVAIL);
  fi_cq_err_entry err{};
  err.op_context = reinterpret_cast<void*>(99);
  err.err = FI_ETRUNC;
  err.olen = 10;
  cq->push_error(err);
  fi_cq_entry e[8];
  EXPECT_EQ(fi_cq_read(cq->fid(), e, 8), -FI_EAVAIL);
  fi_cq_err_entry got{};
  ASSERT_EQ(fi_cq_readerr(cq->fid(), &got, 0), 1);
  EXPECT_EQ(got.err, FI_ETRUNC);
  EXPECT_EQ(got.olen, 10u);
  EXPECT_EQ(fi_cq_readerr(cq->fid(), &got, 0), -FI_EAGAIN);
  ASSERT_EQ(fi_cq_read(cq->fid(), e, 3), 3);  // the ring, then the overflow, in order
  for (uintptr_t i = 0; i < 3; ++i) EXPECT_EQ(e[i].op_context, reinterpret_cast<void*>(i + 1));
  ASSERT_EQ(fi_cq_read(cq->fid(), e, 8), 2);
  EXPECT_EQ(e[0].op_context, reinterpret_cast<void*>(4));
  EXPECT_EQ(e[1].op_context, reinterpret_cast<void*>(5));
  EXPECT_EQ(fi_cq_read(cq->fid(), e, 8), -FI_EAGAIN);
  EXPECT_STRNE(fi_cq_strerror(cq->fid(), FI_ETRUNC, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(fi_close(&cq->fid()->fid), 0);
}

// A provider's burst (Cq::burst_room / burst_slot / burst_commit): entries written in place
// are read in order with those pushed before and after, across the ring's wrap; a burst the
// ring has no room for, or one behind queued overflow, is refused (the provider pushes).
TEST(Cq, BurstsKeepOrderAcrossTheWrapAndDeferToTheOverflow) {
  Owner owner;
  Cq* cq = open_cq(owner, FI_CQ_FORMAT_DATA, 4);
  auto burst = [&](uintptr_t first, uint32_t n) {
    if (!cq->burst_room(n)) return false;
    for (uint32_t i = 0; i < n; ++i)
      *cq->burst_slot(i) = {reinterpret_cast<void*>(first + i), FI_RECV | FI_MSG, 10 + first + i,
                            nullptr, 0, 0, FI_ADDR_NOTAVAIL};
    cq->burst_commit(n);
    return true;
  };
  fi_cq_data_entry e[8];
  cq->push(reinterpret_cast<void*>(1), FI_SEND | FI_MSG, 0, nullptr, 0, 0, FI_ADDR_NOTAVAIL);
  ASSERT_TRUE(burst(2, 2));
  EXPECT_FALSE(burst(4, 2));  // one slot left of four
  ASSERT_EQ(fi_cq_read(cq->fid(), e, 2), 2);
  ASSERT_TRUE(burst(4, 3));  // wraps round the ring's end
  ASSERT_EQ(fi_cq_read(cq->fid(), e + 2, 8), 4);
  for (uintptr_t i = 0; i < 6; ++i) EXPECT_EQ(e[i].op_context, reinterpret_cast<void*>(i + 1));
  for (uintptr_t i = 1; i < 6; ++i) EXPECT_EQ(e[i].len, 10 + i + 1);
  EXPECT_EQ(e[3].flags, FI_RECV | FI_MSG);
  EXPECT_TRUE(burst(7, 0));  // nothing to publish
  EXPECT_EQ(fi_cq_read(cq->fid(), e, 8), -FI_EAGAIN);
  for (uintptr_t i = 10; i < 16; ++i)  // four in the ring, two overflow
    cq->push(reinterpret_cast<void*>(i), FI_SEND, 0, nullptr, 0, 0, FI_ADDR_NOTAVAIL);
  ASSERT_EQ(fi_cq_read(cq->fid(), e, 1), 1);
  EXPECT_FALSE(burst(20, 1));  // room in the ring, but it would pass the overflow
  ASSERT_EQ(fi_cq_read(cq->fid(), e, 8), 5);
  EXPECT_EQ(e[4].op_context, reinterpret_cast<void*>(15));
  ASSERT_TRUE(burst(20, 1));
  ASSERT_EQ(fi_cq_read(cq->fid(), e, 8), 1);
  EXPECT_EQ(e[0].op_context, reinterpret_cast<void*>(20));
  EXPECT_EQ(fi_close(&cq->fid()->fid), 0);
}

// err_data is copied at push_error: a provider may pass a buffer on its stack (the packet
// endpoint's FI_SOURCE_ERR address), gone by the time the application reads the error.
TEST(Cq, ErrorDataIsCopiedWhenQueued) {
  Owner owner;
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_CONTEXT;
  auto* cq = new Cq(&owner, nullptr, attr, FI_VERSION(1, 17), false, nullptr);
  uint8_t addr[24];
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < sizeof addr; ++i) addr[i] = uint8_t(i + 1 + round);
    fi_cq_err_entry err{};
    err.err = FI_EADDRNOTAVAIL;
    err.err_data = addr;
    err.err_data_size = sizeof addr;
    cq->push_error(err);
  }
  std::memset(addr, 0xab, sizeof addr);  // the provider's buffer is reused
  for (int round = 0; round < 2; ++round) {
    fi_cq_err_entry got{};
    if (round == 0) {  // no buffer given: err_data points at the CQ's copy
      ASSERT_EQ(fi_cq_readerr(cq->fid(), &got, 0), 1);
    } else {  // a buffer given: the data is copied into it
      static uint8_t mine[64];
      got.err_data = mine;
      got.err_data_size = sizeof mine;
      ASSERT_EQ(fi_cq_readerr(cq->fid(), &got, 0), 1);
      EXPECT_EQ(got.err_data, mine);
    }
    EXPECT_EQ(got.err, FI_EADDRNOTAVAIL);
    ASSERT_EQ(got.err_data_size, sizeof addr);
    ASSERT_NE(got.err_data, nullptr);
    for (size_t i = 0; i < sizeof addr; ++i)
      EXPECT_EQ(static_cast<const uint8_t*>(got.err_data)[i], uint8_t(i + 1 + round)) << i;
  }
  EXPECT_EQ(fi_close(&cq->fid()->fid), 0);
}

TEST(Cq, OldApiErrorLayoutAndSreadTimeout) {
  Owner owner;
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_CONTEXT;
  attr.wait_obj = FI_WAIT_UNSPEC;
  auto* cq = new Cq(&owner, nullptr, attr, FI_VERSION(1, 4), false, nullptr);
  fi_cq_err_entry err{};
  err.err = FI_EIO;
  cq->push_error(err);
  fi_cq_err_entry got;
  std::memset(&got, 0xee, sizeof got);
  ASSERT_EQ(fi_cq_readerr(cq->fid(), &got, 0), 1);
  EXPECT_EQ(got.err, FI_EIO);
  // 1.0 layout: nothing is written past err_data.
  EXPECT_EQ(got.err_data_size, static_cast<size_t>(0xeeeeeeeeeeeeeeeeull));
  fi_cq_entry e;
  uint64_t t0 = pollfab::util::monotonic_ns();
  EXPECT_EQ(fi_cq_sread(cq->fid(), &e, 1, nullptr, 20), -FI_EAGAIN);
  EXPECT_GE(pollfab::util::monotonic_ns() - t0, 19'000'000u);
  EXPECT_EQ(fi_cq_read(cq->fid(), nullptr, 1), -FI_EINVAL);
  EXPECT_EQ(fi_close(&cq->fid()->fid), 0);
}

TEST(Cq, AttributeErrors) {
  fi_cq_attr attr{};
  attr.format = static_cast<fi_cq_format>(99);
  EXPECT_EQ(Cq::validate(&attr), -FI_ENOSYS);
  attr.format = FI_CQ_FORMAT_MSG;
  attr.wait_obj = FI_WAIT_SET;  // without a wait set
  EXPECT_EQ(Cq::validate(&attr), -FI_EINVAL);
  attr.wait_obj = FI_WAIT_POLLFD;
  EXPECT_EQ(Cq::validate(&attr), -FI_ENOSYS);
  attr.wait_obj = FI_WAIT_NONE;
  attr.flags = 1ull << 40;
  EXPECT_EQ(Cq::validate(&attr), -FI_EINVAL);
  EXPECT_EQ(Cq::validate(nullptr), -FI_EINVAL);
}
