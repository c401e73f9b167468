// A blocked server sleeps and the peer's send wakes it (issue 11, acceptance 4): a server
// thread blocked 5 s in fi_cq_sread on an FI_WAIT_FD CQ, and one blocked in epoll_wait on the
// FI_GETWAIT descriptor after fi_trywait, do not spin (the whole process, from /proc/self/stat,
// the library's own threads included, uses under kSpinFraction of one CPU: a poller uses all of
// it), and each of 20 sends wakes it with its completion, not its timeout. The CPU share and
// the wake-up delay (median, max) are printed, not asserted: they are measurements, and on a
// shared VM they move with the host (3% and 0.1-0.5 ms seen on one machine, 6% on another). Runs on the provider under test (udp in a
// namespace; dpdk on memif in the testbed): in one process (the peer a second domain; on dpdk
// both share the host's port, so the peer's progress delivers) and, for the real wake-up from
// the port, as two processes (OfiWaitCpuRemote, tests/integration/wait_cpu.sh).
#include <rdma/fi_eq.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/ofi/node_fixture.hpp"

namespace pollfab::ofitest {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The process's CPU time (user + system, every thread) in ms, from /proc/self/stat.
double proc_cpu_ms() {
  std::ifstream f("/proc/self/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::istringstream in(s.substr(s.rfind(')') + 2));  // fields from 3 (state) on
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return double(utime + stime) * 1000.0 / double(sysconf(_SC_CLK_TCK));
}

fi_info* rdm_info() {
  static InfoPtr i = get_info(FI_MSG);
  return i.get();
}

enum class How { Sread, Epoll };

// A waiter that uses this share of one CPU or more is polling, not sleeping. Sleeping waiters
// measured 3-7% here (the liveness assist's 500 us cadence while a sleeper is armed, on a VM
// where each timer wake-up costs a VM exit); a poller measures 100%.
constexpr double kSpinFraction = 0.25;

// Waits for one completion on rx's CQ the way `how` says; returns the read's result.
ssize_t wait_one(Node& rx, How how, int timeout_ms, fi_cq_entry& e) {
  if (how == How::Sread) return fi_cq_sread(rx.cq, &e, 1, nullptr, timeout_ms);
  int fd = -1;
  if (fi_control(&rx.cq->fid, FI_GETWAIT, &fd) != 0) return -FI_EOTHER;
  fid* fids[] = {&rx.cq->fid};
  const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    ssize_t n = fi_cq_read(rx.cq, &e, 1);
    if (n != -FI_EAGAIN) return n;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    if (left.count() <= 0) return -FI_EAGAIN;
    if (fi_trywait(rx.fabric, fids, 1) == 0) {
      epoll_event ev;
      epoll_wait(fd, &ev, 1, int(left.count()));
    }
  }
}

void blocked_server(How how) {
  // The peer blocks for its own completions too: a busy-polling peer on a 2-CPU machine holds
  // the CPU that the kernel's (synchronous) socket wake-up puts the server on, for up to a
  // scheduler tick (docs/progress.md).
  Node rx(rdm_info(), FI_WAIT_FD), tx(rdm_info(), FI_WAIT_FD);
  const fi_addr_t to_rx = tx.insert(rx);
  rx.insert(tx);
  const char* what = how == How::Sread ? "fi_cq_sread" : "epoll after fi_trywait";
  static char buf[64];
  static fi_context rctx;

  // 5 s with nothing to receive.
  ASSERT_EQ(fi_recv(rx.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, &rctx), 0);
  const double cpu0 = proc_cpu_ms();
  const auto t0 = Clock::now();
  fi_cq_entry e{};
  EXPECT_EQ(wait_one(rx, how, 5000, e), -FI_EAGAIN);
  const double wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const double cpu = proc_cpu_ms() - cpu0;
  std::printf("%s %s: blocked %.0f ms, process CPU %.1f ms (%.2f%% of one CPU)\n", test_provider(),
              what, wall_ms, cpu, 100.0 * cpu / wall_ms);
  EXPECT_GE(wall_ms, 4990.0);
  EXPECT_LT(cpu, kSpinFraction * wall_ms) << what << ": spinning, not sleeping";

  // 20 sends, each 20 ms after the server went to sleep: how long from fi_send to its wake-up.
  std::vector<double> wake_us;
  for (int i = 0; i < 20; ++i) {
    std::atomic<int64_t> sent_ns{0};
    std::thread peer([&] {
      std::this_thread::sleep_for(20ms);
      sent_ns = Clock::now().time_since_epoch().count();
      tx.send_and_wait(to_rx, 8, /*block=*/true);
    });
    const ssize_t n = wait_one(rx, how, 5000, e);
    const int64_t woke_ns = Clock::now().time_since_epoch().count();
    peer.join();
    ASSERT_EQ(n, 1) << what << " send " << i;
    wake_us.push_back(double(woke_ns - sent_ns.load()) / 1000.0);
    ASSERT_EQ(fi_recv(rx.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, &rctx), 0);
  }
  std::sort(wake_us.begin(), wake_us.end());
  const double median = wake_us[wake_us.size() / 2];
  std::printf("%s %s: wake-up after the peer's send: median %.0f us, max %.0f us\n",
              test_provider(), what, median, wake_us.back());
}

TEST(OfiWaitCpu, ASreadBlockedFiveSecondsSleepsAndTheSendWakesIt) {
  blocked_server(How::Sread);
}

TEST(OfiWaitCpu, AnEpollOnTheWaitFdSleepsAndTheSendWakesIt) {
  blocked_server(How::Epoll);
}

// ---- Two processes (tests/integration/wait_cpu.sh): the server and its peer on separate ports
// (dpdk: testbed hosts a and b over memif; udp: two sockets), so the server's wake-up comes
// from its own port, not from the peer's progress in the same process. Disabled in the plain
// run; the script runs them with --gtest_also_run_disabled_tests, PF_WAIT_DIR set to a
// directory both see (names and go-ahead files) and each side's filter.

std::string wait_dir() {
  const char* d = std::getenv("PF_WAIT_DIR");
  return d ? d : "";
}

void put_file(const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string tmp = wait_dir() + "/." + name;
  std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                             std::streamsize(bytes.size()));
  std::rename(tmp.c_str(), (wait_dir() + "/" + name).c_str());
}

// Waits up to 60 s for the file; returns its bytes (empty: it never came).
std::vector<uint8_t> get_file(const std::string& name) {
  const std::string path = wait_dir() + "/" + name;
  for (const auto end = Clock::now() + 60s; Clock::now() < end; std::this_thread::sleep_for(5ms)) {
    std::ifstream f(path, std::ios::binary);
    if (f) return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  return {};
}

int64_t mono_ns() {  // CLOCK_MONOTONIC is the same clock in every network namespace
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

constexpr int kWakes = 20;

TEST(OfiWaitCpuRemote, DISABLED_Server) {
  ASSERT_FALSE(wait_dir().empty());
  Node rx(rdm_info(), FI_WAIT_FD);
  put_file("server.name", rx.name);
  const std::vector<uint8_t> peer = get_file("client.name");
  ASSERT_FALSE(peer.empty());
  fi_addr_t from = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(rx.av, peer.data(), 1, &from, 0, nullptr), 1);
  static int64_t stamp;
  static fi_context rctx;
  for (How how : {How::Sread, How::Epoll}) {
    const char* what = how == How::Sread ? "fi_cq_sread" : "epoll after fi_trywait";
    const std::string k = how == How::Sread ? "0" : "1";
    ASSERT_EQ(fi_recv(rx.ep, &stamp, sizeof stamp, nullptr, FI_ADDR_UNSPEC, &rctx), 0);
    const double cpu0 = proc_cpu_ms();
    const auto t0 = Clock::now();
    fi_cq_entry e{};
    EXPECT_EQ(wait_one(rx, how, 5000, e), -FI_EAGAIN);  // the peer waits for go.k
    const double wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    const double cpu = proc_cpu_ms() - cpu0;
    std::printf("%s %s, peer in another process: blocked %.0f ms, process CPU %.1f ms (%.2f%% of one CPU)\n",
                test_provider(), what, wall_ms, cpu, 100.0 * cpu / wall_ms);
    EXPECT_GE(wall_ms, 4990.0);
    EXPECT_LT(cpu, kSpinFraction * wall_ms) << what << ": spinning, not sleeping";
    put_file("go." + k, {1});
    std::vector<double> wake_us;
    for (int i = 0; i < kWakes; ++i) {
      const ssize_t n = wait_one(rx, how, 10000, e);
      const int64_t woke = mono_ns();
      ASSERT_EQ(n, 1) << what << " message " << i;
      wake_us.push_back(double(woke - stamp) / 1000.0);  // stamp: the peer's clock at fi_send
      ASSERT_EQ(fi_recv(rx.ep, &stamp, sizeof stamp, nullptr, FI_ADDR_UNSPEC, &rctx), 0);
    }
    std::sort(wake_us.begin(), wake_us.end());
    const double median = wake_us[wake_us.size() / 2];
    std::printf("%s %s, peer in another process: wake-up after its send: median %.0f us, max %.0f us\n",
                test_provider(), what, median, wake_us.back());
    get_file("done." + k);  // the peer has its last completion (our ACK went out)
  }
  // Leave the last posted receive: closing cancels it.
}

TEST(OfiWaitCpuRemote, DISABLED_Client) {
  ASSERT_FALSE(wait_dir().empty());
  Node tx(rdm_info(), FI_WAIT_FD);
  const std::vector<uint8_t> peer = get_file("server.name");
  ASSERT_FALSE(peer.empty());
  fi_addr_t to = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(tx.av, peer.data(), 1, &to, 0, nullptr), 1);
  put_file("client.name", tx.name);
  static int64_t stamp;
  static fi_context sctx;
  for (const std::string k : {"0", "1"}) {
    ASSERT_FALSE(get_file("go." + k).empty());
    for (int i = 0; i < kWakes; ++i) {
      std::this_thread::sleep_for(20ms);  // the server is asleep again
      stamp = mono_ns();
      ssize_t r;
      do r = fi_send(tx.ep, &stamp, sizeof stamp, nullptr, to, &sctx);
      while (r == -FI_EAGAIN);
      ASSERT_EQ(r, 0);
      fi_cq_entry e{};
      ASSERT_EQ(fi_cq_sread(tx.cq, &e, 1, nullptr, 10000), 1) << "send " << i;
    }
    put_file("done." + k, {1});
  }
}

}  // namespace
}  // namespace pollfab::ofitest
