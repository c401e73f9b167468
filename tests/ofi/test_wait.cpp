// Wait objects (fi_cq(3), fi_cntr(3), fi_eq(3) wait_obj; fi_poll(3) fi_trywait; fi_control(3)
// FI_GETWAIT / FI_GETWAITOBJ) through the public API on the provider under test: blocking
// reads that sleep and wake on the peer's send, an application's own poll(2) on the FI_GETWAIT
// descriptor after fi_trywait, fi_cq_signal, a CQ closed under a blocked reader, the mutex/cond
// object, and the error codes. The peer is a second domain (its own port) driven by a thread,
// so a sleeping reader is woken by the network, not by its own calls.
#include <poll.h>
#include <rdma/fi_eq.h>
#include <sys/resource.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "tests/ofi/node_fixture.hpp"

namespace pollfab::ofitest {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A node on the provider's first (manual-progress) RDM info, and its send helper.
struct WaitNode : Node {
  explicit WaitNode(fi_wait_obj kind) : Node(info(), kind) {}
  static fi_info* info() {
    static InfoPtr i = get_info(FI_MSG);
    return i.get();
  }
};

double thread_cpu_ms() { return cpu_ms(RUSAGE_THREAD); }

// A blocked fi_cq_sread sleeps (little CPU) and wakes on the peer's send; fi_cntr_wait too.
TEST(OfiWait, SreadSleepsAndWakesOnThePeersSend) {
  for (fi_wait_obj kind : {FI_WAIT_FD, FI_WAIT_UNSPEC, FI_WAIT_MUTEX_COND}) {
    WaitNode rx(kind), tx(FI_WAIT_NONE);
    const fi_addr_t to_rx = tx.insert(rx);
    rx.insert(tx);
    char buf[64];
    fi_context rctx;
    ASSERT_EQ(fi_recv(rx.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, &rctx), 0);
    // Nothing comes: the timeout, without burning the CPU.
    const double cpu0 = thread_cpu_ms();
    auto t0 = Clock::now();
    fi_cq_entry e;
    EXPECT_EQ(fi_cq_sread(rx.cq, &e, 1, nullptr, 500), -FI_EAGAIN);
    const double waited_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    EXPECT_GE(waited_ms, 490.0);
    EXPECT_LT(thread_cpu_ms() - cpu0, 50.0) << "kind " << kind;  // < 10% of the wait
    // The peer sends after 200 ms: the sleeper wakes with the completion.
    std::thread peer([&] {
      std::this_thread::sleep_for(200ms);
      tx.send_and_wait(to_rx);
    });
    t0 = Clock::now();
    ASSERT_EQ(fi_cq_sread(rx.cq, &e, 1, nullptr, 5000), 1) << "kind " << kind;
    EXPECT_EQ(e.op_context, &rctx);
    EXPECT_LT(Clock::now() - t0, 2s);
    peer.join();
    // The counter: one more message wakes fi_cntr_wait for 2.
    ASSERT_EQ(fi_recv(rx.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, &rctx), 0);
    std::thread peer2([&] {
      std::this_thread::sleep_for(100ms);
      tx.send_and_wait(to_rx);
    });
    EXPECT_EQ(fi_cntr_wait(rx.cntr, 2, 5000), 0);
    EXPECT_EQ(fi_cntr_read(rx.cntr), 2u);
    peer2.join();
    EXPECT_EQ(fi_cntr_wait(rx.cntr, 3, 100), -FI_ETIMEDOUT);
  }
}

// Both sides block in fi_cq_sread for every message of a ping-pong: no completion is lost
// between a sleeper's last check and its sleep (each round trip must complete).
TEST(OfiWait, PingPongWithBothSidesInSread) {
  WaitNode a(FI_WAIT_UNSPEC), b(FI_WAIT_UNSPEC);
  const fi_addr_t to_b = a.insert(b), to_a = b.insert(a);
  constexpr int kRounds = 300;
  auto side = [](WaitNode& n, fi_addr_t peer, bool first, std::atomic<int>& done) {
    char buf[8] = {}, msg[8] = "ping";
    fi_context rctx, sctx;
    for (int i = 0; i < kRounds; ++i) {
      if (fi_recv(n.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, &rctx)) return;
      if (first && fi_send(n.ep, msg, sizeof msg, nullptr, peer, &sctx)) return;
      int want = first ? 2 : 1;  // the send's and the receive's completions
      while (want > 0) {
        fi_cq_entry e;
        ssize_t r = fi_cq_sread(n.cq, &e, 1, nullptr, 2000);
        if (r != 1) return;  // a lost completion: the round never finishes
        --want;
      }
      if (!first) {
        if (fi_send(n.ep, msg, sizeof msg, nullptr, peer, &sctx)) return;
        fi_cq_entry e;
        if (fi_cq_sread(n.cq, &e, 1, nullptr, 2000) != 1) return;
      }
      done = i + 1;
    }
  };
  std::atomic<int> done_a{0}, done_b{0};
  std::thread tb([&] { side(b, to_a, false, done_b); });
  side(a, to_b, true, done_a);
  tb.join();
  EXPECT_EQ(done_a.load(), kRounds);
  EXPECT_EQ(done_b.load(), kRounds);
}

// The application's own poll(2) on FI_GETWAIT's descriptor, after fi_trywait (fi_poll(3)).
TEST(OfiWait, TrywaitThenPollTheFdWakesOnThePeersSend) {
  WaitNode rx(FI_WAIT_FD), tx(FI_WAIT_NONE);
  const fi_addr_t to_rx = tx.insert(rx);
  rx.insert(tx);
  fi_wait_obj kind = FI_WAIT_NONE;
  ASSERT_EQ(fi_control(&rx.cq->fid, FI_GETWAITOBJ, &kind), 0);
  EXPECT_EQ(kind, FI_WAIT_FD);
  int fd = -1;
  ASSERT_EQ(fi_control(&rx.cq->fid, FI_GETWAIT, &fd), 0);
  ASSERT_GE(fd, 0);
  char buf[64];
  fi_context rctx;
  ASSERT_EQ(fi_recv(rx.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, &rctx), 0);
  fid* fids[] = {&rx.cq->fid};
  // Safe to block: nothing queued.
  int tries = 0;
  fi_cq_entry e;
  while (fi_trywait(rx.fabric, fids, 1) == -FI_EAGAIN && tries++ < 1000) fi_cq_read(rx.cq, &e, 1);
  ASSERT_LT(tries, 1000);
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 200), 0);  // nothing yet: the descriptor stays quiet
  std::thread peer([&] {
    std::this_thread::sleep_for(100ms);
    tx.send_and_wait(to_rx);
  });
  const auto t0 = Clock::now();
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  EXPECT_LT(Clock::now() - t0, 2s);
  ssize_t n = 0;
  const auto end = Clock::now() + 5s;
  while ((n = fi_cq_read(rx.cq, &e, 1)) == -FI_EAGAIN && Clock::now() < end) {
  }
  EXPECT_EQ(n, 1);
  EXPECT_EQ(e.op_context, &rctx);
  peer.join();
  // An entry queued: fi_trywait says read first.
  ASSERT_EQ(fi_cq_signal(rx.cq), 0);  // (a signal is an event for fi_trywait too)
  EXPECT_EQ(fi_trywait(rx.fabric, fids, 1), -FI_EAGAIN);
  EXPECT_EQ(fi_cq_sread(rx.cq, &e, 1, nullptr, 0), -FI_EAGAIN);  // the signal is consumed
}

// Sends posted back to back leave together at the next progress call (docs/performance.md);
// fi_trywait must not let the application sleep while they wait for it.
TEST(OfiWait, TrywaitRefusesWhilePostedSendsWaitToLeave) {
  WaitNode rx(FI_WAIT_NONE), tx(FI_WAIT_FD);
  const fi_addr_t to_rx = tx.insert(rx);
  rx.insert(tx);
  // Five: the first leaves at once, the second and third together once the third joined the
  // second's packet (as many messages as the packets ahead of it: docs/performance.md item
  // 72), and the last two wait in one packet.
  constexpr int kN = 5;
  char in[kN][16], out[kN][16];
  fi_context rctx[kN], sctx[kN];
  for (int i = 0; i < kN; ++i) {
    std::memset(out[i], 'a' + i, sizeof out[i]);
    ASSERT_EQ(fi_recv(rx.ep, in[i], sizeof in[i], nullptr, FI_ADDR_UNSPEC, &rctx[i]), 0);
  }
  fid* fids[] = {&tx.cq->fid};
  fi_cq_entry e;
  // A progress call just before the sends: the liveness assist, which runs a round when the
  // application has made none since its last check (posts are not progress calls), then
  // stays out of the next microseconds. Without it, the assist's round could land between the
  // last send and fi_trywait and send the queued packets, and fi_trywait would rightly say 0
  // (seen once, in a full test.sh run).
  fi_cq_read(tx.cq, &e, 0);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(fi_send(tx.ep, out[i], sizeof out[i], nullptr, to_rx, &sctx[i]), 0);
  // The last two wait for a call: not safe to block yet.
  EXPECT_EQ(fi_trywait(tx.fabric, fids, 1), -FI_EAGAIN);
  int tries = 0;
  while (fi_trywait(tx.fabric, fids, 1) == -FI_EAGAIN && tries++ < 1000) fi_cq_read(tx.cq, &e, 1);
  ASSERT_LT(tries, 1000);
  // The sender sleeps now; the receiver (this thread, polling) gets all five.
  int got = 0;
  const auto end = Clock::now() + 5s;
  while (got < kN && Clock::now() < end)
    if (fi_cq_read(rx.cq, &e, 1) == 1) ++got;
  EXPECT_EQ(got, kN);
  for (int i = 0; i < kN; ++i) EXPECT_EQ(in[i][0], 'a' + i);
}

TEST(OfiWait, SignalWakesAndCloseCancelsABlockedReader) {
  WaitNode n(FI_WAIT_FD);
  std::atomic<ssize_t> got{1};
  std::thread reader([&] {
    fi_cq_entry e;
    got = fi_cq_sread(n.cq, &e, 1, nullptr, -1);
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(got.load(), 1);  // still blocked
  ASSERT_EQ(fi_cq_signal(n.cq), 0);
  reader.join();
  EXPECT_EQ(got.load(), -FI_EAGAIN);
  // A CQ nobody is bound to, closed while a reader blocks on it: the reader returns.
  fi_cq_attr ca{};
  ca.wait_obj = FI_WAIT_FD;
  fid_cq* cq = nullptr;
  ASSERT_EQ(fi_cq_open(n.domain, &ca, &cq, nullptr), 0);
  got = 1;
  std::atomic<bool> in{false};
  std::thread blocked([&] {
    fi_cq_entry e;
    in = true;
    got = fi_cq_sread(cq, &e, 1, nullptr, -1);
  });
  while (!in) std::this_thread::yield();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(fi_close(&cq->fid), 0);
  blocked.join();
  EXPECT_EQ(got.load(), -FI_ECANCELED);
}

TEST(OfiWait, MutexCondAndEqAndTheErrorCodes) {
  WaitNode mc(FI_WAIT_MUTEX_COND);
  fi_mutex_cond m{};
  ASSERT_EQ(fi_control(&mc.cq->fid, FI_GETWAIT, &m), 0);
  ASSERT_NE(m.mutex, nullptr);
  ASSERT_NE(m.cond, nullptr);
  fid* fids[] = {&mc.cq->fid};
  ASSERT_EQ(fi_trywait(mc.fabric, fids, 1), 0);
  std::thread signaller([&] {
    std::this_thread::sleep_for(100ms);
    fi_cq_signal(mc.cq);
  });
  timespec until{};
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 5;
  pthread_mutex_lock(m.mutex);
  int r = pthread_cond_timedwait(m.cond, m.mutex, &until);
  pthread_mutex_unlock(m.mutex);
  EXPECT_EQ(r, 0);  // broadcast, not the timeout
  signaller.join();

  // Mixed kinds in one fi_trywait, and objects without a native wait object.
  WaitNode fd(FI_WAIT_FD), none(FI_WAIT_NONE), yield(FI_WAIT_YIELD);
  fid* mixed[] = {&mc.cq->fid, &fd.cq->fid};
  EXPECT_EQ(fi_trywait(fd.fabric, mixed, 2), -FI_EINVAL);
  fid* no_wait[] = {&none.cq->fid};
  EXPECT_EQ(fi_trywait(none.fabric, no_wait, 1), -FI_EINVAL);
  fid* y[] = {&yield.cntr->fid};
  EXPECT_EQ(fi_trywait(yield.fabric, y, 1), -FI_EINVAL);
  int fdv = -1;
  EXPECT_EQ(fi_control(&none.cq->fid, FI_GETWAIT, &fdv), -FI_ENODATA);
  EXPECT_EQ(fi_trywait(fd.fabric, nullptr, 1), -FI_EINVAL);
  fi_cq_attr set{};
  set.wait_obj = FI_WAIT_SET;  // without a wait set
  fid_cq* bad = nullptr;
  EXPECT_EQ(fi_cq_open(fd.domain, &set, &bad, nullptr), -FI_EINVAL);

  // EQ: FI_WAIT_FD; fi_trywait, then the descriptor wakes on fi_eq_write from another thread.
  fi_eq_attr ea{};
  ea.wait_obj = FI_WAIT_FD;
  fid_eq* eq = nullptr;
  ASSERT_EQ(fi_eq_open(fd.fabric, &ea, &eq, nullptr), 0);
  int eqfd = -1;
  ASSERT_EQ(fi_control(&eq->fid, FI_GETWAIT, &eqfd), 0);
  fid* eqs[] = {&eq->fid};
  ASSERT_EQ(fi_trywait(fd.fabric, eqs, 1), 0);
  std::thread writer([&] {
    std::this_thread::sleep_for(100ms);
    fi_eq_entry ent{};
    fi_eq_write(eq, FI_NOTIFY, &ent, sizeof ent, 0);
  });
  pollfd p{eqfd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 5000), 1);
  writer.join();
  EXPECT_EQ(fi_trywait(fd.fabric, eqs, 1), -FI_EAGAIN);  // the event is queued
  uint32_t ev = 0;
  fi_eq_entry ent{};
  EXPECT_EQ(fi_eq_sread(eq, &ev, &ent, sizeof ent, 1000, 0), ssize_t(sizeof ent));
  EXPECT_EQ(ev, uint32_t(FI_NOTIFY));
  EXPECT_EQ(fi_eq_sread(eq, &ev, &ent, sizeof ent, 100, 0), -FI_EAGAIN);
  fi_close(&eq->fid);
}

}  // namespace
}  // namespace pollfab::ofitest
