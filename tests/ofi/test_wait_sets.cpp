// Wait sets and poll sets (fi_poll(3)) through the public API on the provider under test, under
// FI_PROGRESS_MANUAL with the liveness assist off, so only the set's own calls move packets:
// a wait set over two CQs and a counter of one domain plus a CQ of a second domain, woken by a
// peer's sends (fi_wait, FI_GETWAIT + fi_trywait + poll(2)), sleeping while idle; a poll set
// over CQs and a counter that reports exactly the objects with news; and the error codes.
#include <poll.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "tests/ofi/node_fixture.hpp"

namespace pollfab::ofitest {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The liveness assist off for one test: nothing but the application's calls progresses.
struct NoAssist {
  std::string var = std::string("FI_") + (std::string(test_provider()) == "dpdk" ? "DPDK" : "UDP") +
                    "_TRANSPORT_ASSIST_INTERVAL_US";
  NoAssist() { setenv(var.c_str(), "0", 1); }
  ~NoAssist() { unsetenv(var.c_str()); }
};

fi_info* rdm_info() {
  static InfoPtr i = get_info(FI_MSG, FI_AV_MAP, FI_THREAD_DOMAIN, 0, FI_FORMAT_UNSPEC,
                              FI_PROGRESS_MANUAL);
  return i.get();
}

// One domain with two endpoints: ep[k] reports to cq[k]; ep[1]'s receives also count on cntr.
// The CQs and the counter are bound to a wait set (ws non-null) or have no wait object.
struct Host {
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_cq* cq[2] = {};
  fid_cntr* cntr = nullptr;
  fid_ep* ep[2] = {};
  std::vector<uint8_t> name[2];
  int cq_ctx[2] = {}, cntr_ctx = 0;  // the fid contexts fi_poll hands back

  Host(fid_fabric* fab, fid_wait* ws) : fabric(fab) {
    EXPECT_EQ(fi_domain(fabric, rdm_info(), &domain, nullptr), 0);
    fi_av_attr aa{};
    aa.type = FI_AV_MAP;
    EXPECT_EQ(fi_av_open(domain, &aa, &av, nullptr), 0);
    for (int k = 0; k < 2; ++k) {
      fi_cq_attr ca{};
      ca.format = FI_CQ_FORMAT_CONTEXT;
      ca.wait_obj = ws ? FI_WAIT_SET : FI_WAIT_NONE;
      ca.wait_set = ws;
      EXPECT_EQ(fi_cq_open(domain, &ca, &cq[k], &cq_ctx[k]), 0);
      EXPECT_EQ(fi_endpoint(domain, rdm_info(), &ep[k], nullptr), 0);
      EXPECT_EQ(fi_ep_bind(ep[k], &av->fid, 0), 0);
      EXPECT_EQ(fi_ep_bind(ep[k], &cq[k]->fid, FI_TRANSMIT | FI_RECV), 0);
    }
    fi_cntr_attr na{};
    na.events = FI_CNTR_EVENTS_COMP;
    na.wait_obj = ws ? FI_WAIT_SET : FI_WAIT_NONE;
    na.wait_set = ws;
    EXPECT_EQ(fi_cntr_open(domain, &na, &cntr, &cntr_ctx), 0);
    EXPECT_EQ(fi_ep_bind(ep[1], &cntr->fid, FI_RECV), 0);
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(fi_enable(ep[k]), 0);
      name[k].resize(64);
      size_t len = name[k].size();
      EXPECT_EQ(fi_getname(&ep[k]->fid, name[k].data(), &len), 0);
      name[k].resize(len);
    }
  }
  ~Host() {
    for (fid* f : {&ep[0]->fid, &ep[1]->fid, &cq[0]->fid, &cq[1]->fid, &cntr->fid, &av->fid,
                   &domain->fid})
      fi_close(f);
  }
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;
};

// A send running on a thread of its own.
struct Later {
  std::thread t;
  std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
  // Joins, while driving the receiving domain (through its counter) so its ACKs go out.
  void join_progressing(fid_cntr* receiver) {
    while (!done->load()) fi_cntr_read(receiver);
    t.join();
  }
};

// A peer on a fabric of its own; sends from a thread after a delay.
struct Peer : Node {
  Peer() : Node(rdm_info(), FI_WAIT_NONE) {}
  fi_addr_t insert_name(const std::vector<uint8_t>& n) {
    fi_addr_t a = FI_ADDR_NOTAVAIL;
    EXPECT_EQ(fi_av_insert(av, n.data(), 1, &a, 0, nullptr), 1);
    return a;
  }
  Later send_later(fi_addr_t dest, std::chrono::milliseconds delay) {
    Later l;
    l.t = std::thread([this, dest, delay, done = l.done] {
      std::this_thread::sleep_for(delay);
      send_and_wait(dest);
      done->store(true);
    });
    return l;
  }
};

void post_recv(fid_ep* ep, char* buf, fi_context* ctx) {
  ASSERT_EQ(fi_recv(ep, buf, 64, nullptr, FI_ADDR_UNSPEC, ctx), 0);
}

double thread_cpu_ms() { return cpu_ms(RUSAGE_THREAD); }

// A fabric on the test provider and an FI_WAIT_FD wait set on it.
void open_fabric_and_fd_set(fid_fabric*& fabric, fid_wait*& ws) {
  ASSERT_EQ(fi_fabric(rdm_info()->fabric_attr, &fabric, nullptr), 0);
  fi_wait_attr wa{};
  wa.wait_obj = FI_WAIT_FD;
  ASSERT_EQ(fi_wait_open(fabric, &wa, &ws), 0);
}

TEST(OfiWaitSet, OneWaitCoversCqsAndCountersOfTwoDomains) {
  NoAssist no_assist;
  fid_fabric* fabric = nullptr;
  fid_wait* ws = nullptr;
  ASSERT_NO_FATAL_FAILURE(open_fabric_and_fd_set(fabric, ws));
  {
    Host a(fabric, ws), b(fabric, ws);  // two domains (two ports) in one set
    Peer peer;
    const fi_addr_t to_a0 = peer.insert_name(a.name[0]), to_a1 = peer.insert_name(a.name[1]);
    const fi_addr_t to_b1 = peer.insert_name(b.name[1]);
    static char bufs[3][64];
    static fi_context ctx[3];
    post_recv(a.ep[0], bufs[0], &ctx[0]);
    post_recv(a.ep[1], bufs[1], &ctx[1]);
    post_recv(b.ep[1], bufs[2], &ctx[2]);

    // Nothing happens: 0 ms is a check, 300 ms a sleep that costs little CPU.
    EXPECT_EQ(fi_wait(ws, 0), -FI_ETIMEDOUT);
    const double cpu0 = thread_cpu_ms();
    const auto t0 = Clock::now();
    EXPECT_EQ(fi_wait(ws, 300), -FI_ETIMEDOUT);
    EXPECT_GE(Clock::now() - t0, 290ms);
    EXPECT_LT(thread_cpu_ms() - cpu0, 60.0);  // under 20% of the wait

    // Each message wakes the wait; the set's own progress delivered it (nobody else polls).
    struct Case { fi_addr_t to; fid_cq* cq; void* ctx; fid_cntr* cntr; };
    for (const Case& c : {Case{to_a1, a.cq[1], &ctx[1], a.cntr}, Case{to_a0, a.cq[0], &ctx[0], a.cntr},
                          Case{to_b1, b.cq[1], &ctx[2], b.cntr}}) {
      Later s = peer.send_later(c.to, 100ms);
      int r;
      const auto end = Clock::now() + 10s;
      fi_cq_entry e{};
      ssize_t n = -FI_EAGAIN;
      do {
        r = fi_wait(ws, 5000);
        if (r == 0) n = fi_cq_read(c.cq, &e, 1);
      } while (n == -FI_EAGAIN && (r == 0 || r == -FI_ETIMEDOUT) && Clock::now() < end);
      s.join_progressing(c.cntr);
      ASSERT_EQ(n, 1);
      EXPECT_EQ(e.op_context, c.ctx);
    }
    EXPECT_EQ(fi_cntr_read(a.cntr), 1u);
    EXPECT_EQ(fi_cntr_read(b.cntr), 1u);

    EXPECT_EQ(fi_close(&ws->fid), -FI_EBUSY);  // objects are bound
  }
  EXPECT_EQ(fi_close(&ws->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), 0);
}

// The application's own poll(2) on the set's descriptor after fi_trywait (default config: on a
// port without a descriptor the liveness assist's progress is what wakes the sleeper).
TEST(OfiWaitSet, NativeWaitOnTheSetsDescriptor) {
  fid_fabric* fabric = nullptr;
  fid_wait* ws = nullptr;
  ASSERT_NO_FATAL_FAILURE(open_fabric_and_fd_set(fabric, ws));
  {
    Host a(fabric, ws);
    Peer peer;
    const fi_addr_t to_a0 = peer.insert_name(a.name[0]);
    static char bufs[1][64];
    static fi_context ctx[1];
    // The application's own poll(2) on the set's descriptor, after fi_trywait.
    int fd = -1, cq_fd = -2;
    ASSERT_EQ(fi_control(&ws->fid, FI_GETWAIT, &fd), 0);
    ASSERT_EQ(fi_control(&a.cq[0]->fid, FI_GETWAIT, &cq_fd), 0);  // a member's is the set's
    EXPECT_EQ(cq_fd, fd);
    fi_wait_obj obj = FI_WAIT_NONE;
    EXPECT_EQ(fi_control(&a.cntr->fid, FI_GETWAITOBJ, &obj), 0);
    EXPECT_EQ(obj, FI_WAIT_FD);
    fid* set_fid[] = {&ws->fid};
    post_recv(a.ep[0], bufs[0], &ctx[0]);
    int tr = -FI_EAGAIN;
    for (int i = 0; i < 100 && tr == -FI_EAGAIN; ++i) tr = fi_trywait(fabric, set_fid, 1);
    ASSERT_EQ(tr, 0);
    Later s = peer.send_later(to_a0, 100ms);
    pollfd p{fd, POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 5000), 1);
    fi_cq_entry e{};
    ssize_t n = -FI_EAGAIN;
    for (const auto end = Clock::now() + 10s; n == -FI_EAGAIN && Clock::now() < end;)
      n = fi_cq_read(a.cq[0], &e, 1);
    s.join_progressing(a.cntr);
    ASSERT_EQ(n, 1);
    EXPECT_EQ(e.op_context, &ctx[0]);
  }
  EXPECT_EQ(fi_close(&ws->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), 0);
}

TEST(OfiWaitSet, ErrorsAndCloseUnderAWaiter) {
  fid_fabric* fabric = nullptr;
  ASSERT_EQ(fi_fabric(rdm_info()->fabric_attr, &fabric, nullptr), 0);
  fi_wait_attr wa{};
  fid_wait* ws = nullptr;
  wa.wait_obj = FI_WAIT_NONE;
  EXPECT_EQ(fi_wait_open(fabric, &wa, &ws), -FI_EINVAL);
  wa.wait_obj = FI_WAIT_SET;
  EXPECT_EQ(fi_wait_open(fabric, &wa, &ws), -FI_ENOSYS);
  wa.wait_obj = FI_WAIT_FD;
  wa.flags = 1;
  EXPECT_EQ(fi_wait_open(fabric, &wa, &ws), -FI_EINVAL);
  EXPECT_EQ(fi_wait_open(fabric, nullptr, &ws), -FI_EINVAL);
  wa.flags = 0;
  ASSERT_EQ(fi_wait_open(fabric, &wa, &ws), 0);

  // A wait set that is not one.
  fid_domain* domain = nullptr;
  ASSERT_EQ(fi_domain(fabric, rdm_info(), &domain, nullptr), 0);
  fi_cq_attr ca{};
  ca.wait_obj = FI_WAIT_NONE;
  fid_cq* cq = nullptr;
  ASSERT_EQ(fi_cq_open(domain, &ca, &cq, nullptr), 0);
  fi_cq_attr bad{};
  bad.wait_obj = FI_WAIT_SET;
  bad.wait_set = reinterpret_cast<fid_wait*>(cq);
  fid_cq* cq2 = nullptr;
  EXPECT_EQ(fi_cq_open(domain, &bad, &cq2, nullptr), -FI_EINVAL);
  fi_cntr_attr na{};
  na.events = FI_CNTR_EVENTS_COMP;
  na.wait_obj = FI_WAIT_SET;
  fid_cntr* cntr = nullptr;
  EXPECT_EQ(fi_cntr_open(domain, &na, &cntr, nullptr), -FI_EINVAL);  // no set
  fi_eq_attr ea{};
  ea.wait_obj = FI_WAIT_SET;
  ea.wait_set = ws;
  fid_eq* eq = nullptr;
  ASSERT_EQ(fi_eq_open(fabric, &ea, &eq, nullptr), 0);  // an EQ in the set
  // fi_trywait: a set with an EQ event queued says -FI_EAGAIN; a YIELD set mixed with it -EINVAL.
  fi_eq_entry ent{};
  EXPECT_EQ(fi_eq_write(eq, FI_NOTIFY, &ent, sizeof ent, 0), ssize_t(sizeof ent));
  fid* set_fid[] = {&ws->fid};
  EXPECT_EQ(fi_trywait(fabric, set_fid, 1), -FI_EAGAIN);
  EXPECT_EQ(fi_wait(ws, 1000), 0);  // the event
  uint32_t ev = 0;
  EXPECT_EQ(fi_eq_read(eq, &ev, &ent, sizeof ent, 0), ssize_t(sizeof ent));
  EXPECT_EQ(fi_trywait(fabric, set_fid, 1), 0);
  fi_wait_attr ya{};
  ya.wait_obj = FI_WAIT_YIELD;
  fid_wait* ys = nullptr;
  ASSERT_EQ(fi_wait_open(fabric, &ya, &ys), 0);
  fid* mixed[] = {&ws->fid, &ys->fid};
  EXPECT_EQ(fi_trywait(fabric, mixed, 2), -FI_EINVAL);
  EXPECT_EQ(fi_wait(ys, 20), -FI_ETIMEDOUT);
  EXPECT_EQ(fi_close(&ys->fid), 0);

  // fi_eq_write from another thread wakes fi_wait.
  std::thread writer([&] {
    std::this_thread::sleep_for(100ms);
    fi_eq_write(eq, FI_NOTIFY, &ent, sizeof ent, 0);
  });
  EXPECT_EQ(fi_wait(ws, 5000), 0);
  writer.join();
  EXPECT_EQ(fi_close(&eq->fid), 0);

  // Closing the set while a thread waits on it: the waiter returns -FI_ECANCELED.
  std::atomic<int> got{1};
  std::thread waiter([&] { got = fi_wait(ws, -1); });
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(fi_close(&ws->fid), 0);
  waiter.join();
  EXPECT_EQ(got.load(), -FI_ECANCELED);
  fi_close(&cq->fid);
  fi_close(&domain->fid);
  fi_close(&fabric->fid);
}

// fi_poll alone drives progress (manual, no assist) and names exactly the objects with news.
TEST(OfiPollSet, PollDrivesProgressAndReportsObjectsWithEvents) {
  NoAssist no_assist;
  fid_fabric* fabric = nullptr;
  ASSERT_EQ(fi_fabric(rdm_info()->fabric_attr, &fabric, nullptr), 0);
  {
    Host h(fabric, nullptr);
    Peer peer;
    const fi_addr_t to0 = peer.insert_name(h.name[0]), to1 = peer.insert_name(h.name[1]);
    fid_poll* ps = nullptr;
    fi_poll_attr pa{};
    pa.flags = 1;
    EXPECT_EQ(fi_poll_open(h.domain, &pa, &ps), -FI_EINVAL);
    pa.flags = 0;
    ASSERT_EQ(fi_poll_open(h.domain, &pa, &ps), 0);
    for (fid* f : {&h.cq[0]->fid, &h.cq[1]->fid, &h.cntr->fid}) EXPECT_EQ(fi_poll_add(ps, f, 0), 0);
    EXPECT_EQ(fi_poll_add(ps, &h.cq[0]->fid, 0), -FI_EALREADY);
    EXPECT_EQ(fi_poll_add(ps, &h.av->fid, 0), -FI_EINVAL);
    EXPECT_EQ(fi_close(&h.cq[0]->fid), -FI_EBUSY);  // a member

    void* got[4] = {};
    EXPECT_EQ(fi_poll(ps, got, 4), 0);
    static char bufs[2][64];
    static fi_context ctx[2];
    post_recv(h.ep[0], bufs[0], &ctx[0]);
    post_recv(h.ep[1], bufs[1], &ctx[1]);

    // A message to ep[1]: its CQ and the counter have news, cq[0] none.
    Later s = peer.send_later(to1, 50ms);
    int n = 0;
    for (const auto end = Clock::now() + 10s; n == 0 && Clock::now() < end;) n = fi_poll(ps, got, 4);
    ASSERT_EQ(n, 2);
    EXPECT_EQ(got[0], &h.cq_ctx[1]);
    EXPECT_EQ(got[1], &h.cntr_ctx);
    s.join_progressing(h.cntr);
    // The counter's change was reported once; the CQ keeps being named until it is read.
    n = fi_poll(ps, got, 4);
    ASSERT_EQ(n, 1);
    EXPECT_EQ(got[0], &h.cq_ctx[1]);
    fi_cq_entry e{};
    ASSERT_EQ(fi_cq_read(h.cq[1], &e, 1), 1);
    EXPECT_EQ(e.op_context, &ctx[1]);
    EXPECT_EQ(fi_poll(ps, got, 4), 0);
    // fi_cntr_add moves the checkpoint: no news from it.
    EXPECT_EQ(fi_cntr_add(h.cntr, 5), 0);
    EXPECT_EQ(fi_poll(ps, got, 4), 0);

    // After fi_poll_del, cq[1] is no longer named; a message to ep[0] is, with count 1.
    EXPECT_EQ(fi_poll_del(ps, &h.cq[1]->fid, 0), 0);
    EXPECT_EQ(fi_poll_del(ps, &h.cq[1]->fid, 0), -FI_ENOENT);
    Later s2 = peer.send_later(to0, 50ms);
    n = 0;
    for (const auto end = Clock::now() + 10s; n == 0 && Clock::now() < end;) n = fi_poll(ps, got, 1);
    s2.join_progressing(h.cntr);
    ASSERT_EQ(n, 1);
    EXPECT_EQ(got[0], &h.cq_ctx[0]);
    ASSERT_EQ(fi_cq_read(h.cq[0], &e, 1), 1);
    EXPECT_EQ(e.op_context, &ctx[0]);
    EXPECT_EQ(fi_poll(ps, nullptr, 1), -FI_EINVAL);
    EXPECT_EQ(fi_close(&ps->fid), 0);  // releases cq[0] and the counter
  }
  EXPECT_EQ(fi_close(&fabric->fid), 0);
}

}  // namespace
}  // namespace pollfab::ofitest
