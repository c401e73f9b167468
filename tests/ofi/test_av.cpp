// Address vectors (fi_av(3)) and sources (fi_cq(3)): FI_AV_TABLE indexes, fi_av_remove of a
// peer with a send in flight (the send completes; the removed address is refused afterwards),
// FI_SOURCE_ERR for a sender the AV does not know (an FI_EADDRNOTAVAIL error entry whose
// err_data is the sender's name, which fi_av_insert then accepts).
#include <cstring>
#include <string>
#include <vector>

#include "tests/ofi/ofi_fixture.hpp"

namespace pollfab::ofitest {
namespace {

constexpr uint64_t kCaps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV | FI_LOCAL_COMM |
                           FI_REMOTE_COMM | FI_SOURCE | FI_SOURCE_ERR;

TEST(OfiAv, TableAddressesAreIndexesAndSourcesReportThem) {
  Ofi f(kCaps, FI_AV_TABLE);
  ASSERT_TRUE(f.ok());
  Ep& a = f.add_ep();
  Ep& b = f.add_ep();
  EXPECT_EQ(a.self, 0u);
  EXPECT_EQ(b.self, 1u);
  char buf[16] = {};
  fi_context rc, sc;
  ASSERT_EQ(fi_trecv(b.ep, buf, sizeof buf, nullptr, 0 /* a, directed */, 1, 0, &rc), 0);
  ASSERT_EQ(fi_tsend(a.ep, "table", 5, nullptr, 1, 1, &sc), 0);
  fi_cq_tagged_entry e;
  fi_addr_t src = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(Ofi::wait(b.cq, e, nullptr, &src), 1);
  EXPECT_EQ(src, 0u);
  EXPECT_EQ(std::string(buf, 5), "table");
  ASSERT_EQ(Ofi::wait(a.cq, e), 1);
}

TEST(OfiAv, RemovingAPeerWithASendInFlightCompletesItThenRefusesTheAddress) {
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  Ep& s = f.add_ep();
  Ep& r = f.add_ep();
  std::vector<char> big(1 << 20, 'z'), in(1 << 20);
  fi_context sc, rc;
  ASSERT_EQ(fi_trecv(r.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, 2, 0, &rc), 0);
  ASSERT_EQ(fi_tsend(s.ep, big.data(), big.size(), nullptr, r.self, 2, &sc), 0);
  fi_addr_t gone = r.self;
  ASSERT_EQ(fi_av_remove(f.av(), &gone, 1, 0), 0);  // while the megabyte is on its way
  fi_cq_tagged_entry e;
  ASSERT_EQ(Ofi::wait(s.cq, e), 1);
  EXPECT_EQ(e.op_context, &sc);
  ASSERT_EQ(Ofi::wait(r.cq, e), 1);
  EXPECT_EQ(e.len, big.size());
  EXPECT_EQ(in, big);
  EXPECT_EQ(fi_tsend(s.ep, "x", 1, nullptr, gone, 2, &sc), -FI_EINVAL);
}

// FI_SOURCE is a cost a receive, so hints that name caps get it only by asking (fi_getinfo(3)
// lets a provider leave out such a secondary cap): without it fi_cq_readfrom reports no source.
// FI_SOURCE_ERR asked alone brings FI_SOURCE with it ("must be paired with FI_SOURCE"): a known
// sender's messages then complete with their source, not as errors.
TEST(OfiAv, SourcesOnlyWhenAskedAndSourceErrAloneBringsThem) {
  constexpr uint64_t kBase = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM;
  for (const uint64_t extra : {uint64_t(0), uint64_t(FI_SOURCE_ERR)}) {
    Ofi f(kBase | extra);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(bool(f.info()->caps & FI_SOURCE), extra != 0);
    Ep& s = f.add_ep();
    Ep& r = f.add_ep();
    char buf[8] = {};
    fi_context rc, sc;
    ASSERT_EQ(fi_trecv(r.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 4, 0, &rc), 0);
    ASSERT_EQ(fi_tsend(s.ep, "src", 3, nullptr, r.self, 4, &sc), 0);
    fi_cq_tagged_entry e;
    fi_addr_t src = 12345;
    ASSERT_EQ(Ofi::wait(r.cq, e, nullptr, &src), 1);  // not an error entry
    EXPECT_EQ(e.op_context, &rc);
    EXPECT_EQ(src, extra ? s.self : FI_ADDR_NOTAVAIL);
    ASSERT_EQ(Ofi::wait(s.cq, e), 1);
  }
}

TEST(OfiAv, AnUnknownSenderIsASourceErrorWithItsName) {
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f.info()->caps & FI_SOURCE_ERR);
  Ep& s = f.add_ep();
  Ep& r = f.add_ep();
  fi_addr_t old = s.self;
  ASSERT_EQ(fi_av_remove(f.av(), &old, 1, 0), 0);  // r no longer knows s
  char buf[8] = {};
  fi_context rc, sc;
  ASSERT_EQ(fi_trecv(r.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 3, 0, &rc), 0);
  ASSERT_EQ(fi_tsend(s.ep, "who", 3, nullptr, r.self, 3, &sc), 0);
  fi_cq_tagged_entry e;
  fi_cq_err_entry err{};
  ASSERT_EQ(Ofi::wait(r.cq, e, &err), -FI_EAVAIL);
  EXPECT_EQ(err.err, FI_EADDRNOTAVAIL);
  EXPECT_EQ(err.op_context, &rc);
  EXPECT_EQ(err.len, 3u);
  EXPECT_EQ(std::string(buf, 3), "who");  // the data was received
  ASSERT_EQ(err.err_data_size, s.name.size());
  std::vector<uint8_t> sender(static_cast<uint8_t*>(err.err_data),
                              static_cast<uint8_t*>(err.err_data) + err.err_data_size);
  // verbs: the sender's name as a UD packet shows it has no service (bytes 10-11 of the name,
  // providers/packet/name.hpp); everything else is the name fi_getname gave.
  std::vector<uint8_t> want = s.name;
  if (std::string(test_provider()) == "verbs") want[10] = want[11] = 0;
  EXPECT_EQ(sender, want);
  fi_addr_t back = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(f.av(), err.err_data, 1, &back, 0, nullptr), 1);
  ASSERT_EQ(fi_trecv(r.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 3, 0, &rc), 0);
  ASSERT_EQ(fi_tsend(s.ep, "me", 2, nullptr, r.self, 3, &sc), 0);
  fi_addr_t src = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(Ofi::wait(r.cq, e, nullptr, &src), 1);
  EXPECT_EQ(src, back);
}

// An info written by hand with FI_SOURCE_ERR but not FI_SOURCE (fi_getinfo never gives one):
// FI_SOURCE_ERR acts only with FI_SOURCE, so an unknown sender's messages complete as usual,
// without their source, not as error entries: into a plain receive (a packet's burst of
// completions) and into a multi-recv buffer (a slice's completion, one at a time).
TEST(OfiAv, SourceErrWithoutSourceInAHandWrittenInfoReportsNoError) {
  Ofi f(kCaps | FI_MULTI_RECV);
  ASSERT_TRUE(f.ok());
  f.info()->caps &= ~FI_SOURCE;
  Ep& s = f.add_ep();
  Ep& r = f.add_ep();
  fi_addr_t old = s.self;
  ASSERT_EQ(fi_av_remove(f.av(), &old, 1, 0), 0);  // r no longer knows s
  char buf[8] = {};
  char multi[256] = {};
  fi_context rc, mc, sc[2];
  ASSERT_EQ(fi_trecv(r.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 6, 0, &rc), 0);
  iovec iov{multi, sizeof multi};
  fi_msg mm{&iov, nullptr, 1, FI_ADDR_UNSPEC, &mc, 0};
  ASSERT_EQ(fi_recvmsg(r.ep, &mm, FI_MULTI_RECV), 0);
  ASSERT_EQ(fi_tsend(s.ep, "anon", 4, nullptr, r.self, 6, &sc[0]), 0);
  ASSERT_EQ(fi_send(s.ep, "slice", 5, nullptr, r.self, &sc[1]), 0);
  for (int i = 0; i < 2; ++i) {
    fi_cq_tagged_entry e;
    fi_addr_t src = 12345;
    ASSERT_EQ(Ofi::wait(r.cq, e, nullptr, &src), 1);  // not an error entry
    EXPECT_EQ(src, FI_ADDR_NOTAVAIL);
    if (e.op_context == &rc) {
      EXPECT_EQ(std::string(buf, 4), "anon");
    } else {
      EXPECT_EQ(e.op_context, &mc);
      EXPECT_EQ(std::string(static_cast<char*>(e.buf), e.len), "slice");
    }
  }
  fi_cq_tagged_entry e;
  for (int i = 0; i < 2; ++i) ASSERT_EQ(Ofi::wait(s.cq, e), 1);
}

// Small sends posted back to back share a packet (a bundle: the first leaves at once, the five
// behind it together), and a packet's receive completions reach the CQ as one burst: from a
// sender the AV does not know, each message of the burst is its own FI_EADDRNOTAVAIL error
// entry, in order, its data received, its err_data the sender's name; once the sender is
// inserted, the same burst completes with the source. (The test relies on that bundling, which
// the OFI API cannot show: when written, a probe in on_recvs_completed saw a burst of five,
// and dropping one error entry of it failed the test.)
TEST(OfiAv, AnUnknownSendersBundleIsOneSourceErrorPerMessageInOrder) {
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  Ep& s = f.add_ep();
  Ep& r = f.add_ep();
  fi_addr_t old = s.self;
  ASSERT_EQ(fi_av_remove(f.av(), &old, 1, 0), 0);
  constexpr int kN = 6;
  char buf[kN][4] = {};
  fi_context rc[kN], sc[kN];
  const char* const msg[kN] = {"m0", "m1", "m2", "m3", "m4", "m5"};
  const auto post_and_send = [&] {
    for (int i = 0; i < kN; ++i)
      ASSERT_EQ(fi_trecv(r.ep, buf[i], sizeof buf[i], nullptr, FI_ADDR_UNSPEC, 5, 0, &rc[i]), 0);
    for (int i = 0; i < kN; ++i)  // no progress in between: one packet after the first
      ASSERT_EQ(fi_tsend(s.ep, msg[i], 2, nullptr, r.self, 5, &sc[i]), 0);
  };
  ASSERT_NO_FATAL_FAILURE(post_and_send());
  fi_cq_tagged_entry e;
  // verbs: the sender's name as a UD packet shows it has no service (bytes 10-11 of the name).
  std::vector<uint8_t> want = s.name;
  if (std::string(test_provider()) == "verbs") want[10] = want[11] = 0;
  for (int i = 0; i < kN; ++i) {
    SCOPED_TRACE("message " + std::to_string(i));
    fi_cq_err_entry err{};
    ASSERT_EQ(Ofi::wait(r.cq, e, &err), -FI_EAVAIL);
    EXPECT_EQ(err.err, FI_EADDRNOTAVAIL);
    EXPECT_EQ(err.op_context, &rc[i]);
    EXPECT_EQ(err.len, 2u);
    EXPECT_EQ(std::string(buf[i], 2), msg[i]);
    EXPECT_EQ(err.tag, 5u);
    ASSERT_EQ(err.err_data_size, want.size());
    EXPECT_EQ(std::vector<uint8_t>(static_cast<uint8_t*>(err.err_data),
                                   static_cast<uint8_t*>(err.err_data) + err.err_data_size),
              want);
  }
  EXPECT_TRUE(Ofi::quiet(r.cq));  // one entry a message, no more
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(Ofi::wait(s.cq, e), 1);
    EXPECT_EQ(e.op_context, &sc[i]);
  }
  fi_addr_t back = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(f.av(), want.data(), 1, &back, 0, nullptr), 1);
  std::memset(buf, 0, sizeof buf);
  ASSERT_NO_FATAL_FAILURE(post_and_send());
  for (int i = 0; i < kN; ++i) {
    SCOPED_TRACE("known, message " + std::to_string(i));
    fi_addr_t src = FI_ADDR_NOTAVAIL;
    ASSERT_EQ(Ofi::wait(r.cq, e, nullptr, &src), 1);
    EXPECT_EQ(e.op_context, &rc[i]);
    EXPECT_EQ(src, back);
    EXPECT_EQ(std::string(buf[i], 2), msg[i]);
  }
  for (int i = 0; i < kN; ++i) ASSERT_EQ(Ofi::wait(s.cq, e), 1);
}

// The one-buffer calls (fi_send, fi_inject, fi_senddata, fi_tsend, fi_recv, fi_trecv) take a
// shorter path into the provider than their iovec forms: they refuse the same bad input, and
// a refused call leaves nothing behind (the next good call completes as usual).
TEST(OfiAv, OneBufferCallsRefuseAnAddressTheAvDoesNotHoldAsTheIovecCallsDo) {
  Ofi f(kCaps);
  ASSERT_TRUE(f.ok());
  Ep& a = f.add_ep();
  Ep& b = f.add_ep();
  const fi_addr_t nowhere = 1000;  // never inserted
  char out[4] = "abc", in[4] = {};
  iovec iov{out, 3};
  void* desc = nullptr;
  fi_context c;
  EXPECT_EQ(fi_send(a.ep, out, 3, nullptr, nowhere, &c), -FI_EINVAL);
  EXPECT_EQ(fi_sendv(a.ep, &iov, &desc, 1, nowhere, &c), -FI_EINVAL);
  EXPECT_EQ(fi_inject(a.ep, out, 3, nowhere), -FI_EINVAL);
  EXPECT_EQ(fi_senddata(a.ep, out, 3, nullptr, 7, nowhere, &c), -FI_EINVAL);
  EXPECT_EQ(fi_tsend(a.ep, out, 3, nullptr, nowhere, 5, &c), -FI_EINVAL);
  EXPECT_EQ(fi_tinject(a.ep, out, 3, nowhere, 5), -FI_EINVAL);
  iovec riov{in, sizeof in};
  EXPECT_EQ(fi_trecv(b.ep, in, sizeof in, nullptr, nowhere, 5, 0, &c), -FI_EINVAL);  // directed
  EXPECT_EQ(fi_trecvv(b.ep, &riov, &desc, 1, nowhere, 5, 0, &c), -FI_EINVAL);
  EXPECT_EQ(fi_recv(b.ep, in, sizeof in, nullptr, nowhere, &c), -FI_EINVAL);
  fi_context sc, rc;
  ASSERT_EQ(fi_trecv(b.ep, in, sizeof in, nullptr, a.self, 5, 0, &rc), 0);
  ASSERT_EQ(fi_tsend(a.ep, out, 3, nullptr, b.self, 5, &sc), 0);
  fi_cq_tagged_entry e;
  ASSERT_EQ(Ofi::wait(b.cq, e), 1);
  EXPECT_EQ(e.op_context, &rc);
  EXPECT_EQ(e.len, 3u);
  EXPECT_STREQ(in, "abc");
  ASSERT_EQ(Ofi::wait(a.cq, e), 1);
  EXPECT_EQ(e.op_context, &sc);
  EXPECT_TRUE(Ofi::quiet(a.cq));  // the refused sends left no completion
  // Before fi_enable: -FI_EOPBADSTATE from every one of them, as from the iovec forms.
  f.add_ep(0, [&](fid_ep* ep) {
    EXPECT_EQ(fi_send(ep, out, 3, nullptr, a.self, &c), -FI_EOPBADSTATE);
    EXPECT_EQ(fi_sendv(ep, &iov, &desc, 1, a.self, &c), -FI_EOPBADSTATE);
    EXPECT_EQ(fi_inject(ep, out, 3, a.self), -FI_EOPBADSTATE);
    EXPECT_EQ(fi_tsend(ep, out, 3, nullptr, a.self, 5, &c), -FI_EOPBADSTATE);
    EXPECT_EQ(fi_recv(ep, in, sizeof in, nullptr, FI_ADDR_UNSPEC, &c), -FI_EOPBADSTATE);
    EXPECT_EQ(fi_trecv(ep, in, sizeof in, nullptr, FI_ADDR_UNSPEC, 5, 0, &c), -FI_EOPBADSTATE);
    EXPECT_EQ(fi_trecvv(ep, &riov, &desc, 1, FI_ADDR_UNSPEC, 5, 0, &c), -FI_EOPBADSTATE);
  });
}

}  // namespace
}  // namespace pollfab::ofitest
