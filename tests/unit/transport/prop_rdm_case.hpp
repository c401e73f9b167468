// RdmCase: one reliable-mode property case of test_property.cpp - two engines over a MemLink
// with fault schedules, driven by a manual clock, checked for exactly-once, intact, in-order
// delivery and for leaks.
#pragma once
#include "tests/unit/transport/prop_gen.hpp"

namespace pollfab::transport::proptest {

// ---- one reliable-mode case ----

class RdmCase {
 public:
  struct Params {
    uint64_t seed = 0;
    uint32_t window_pkts = 256;
    uint32_t reorder_window_pkts = 1024;
    uint32_t ack_coalesce = 16;
    uint64_t unexpected_budget = 64ull << 20;
    bool failure_detection = false;
    // Peer-failure mode: peer_timeout_ns is short (below some dead windows), so peers may be
    // declared dead; sends and receives may then fail with TimedOut (see run_with_failures).
    uint64_t peer_timeout_ns = 0;
    // Schedules and traffic start this long after the clock's start; run_with_failures first
    // exchanges one message each way in that time, so each engine knows its peer's epoch.
    uint64_t start_offset_ns = 0;
    uint32_t tx_size = 1024, rx_size = 1024;  // engine pools (small: NoResource paths)
    uint32_t link_buffers = 16384;            // packet pool shared by both engines
    // Zero copy: segments of at least this many bytes travel as references to the sender's
    // buffer, read at delivery; send buffers are poisoned when their send completes, so an
    // early completion shows up as corrupt data (UINT32_MAX = copy everything).
    uint32_t zero_copy_min = UINT32_MAX;
    Probs base[2];
    std::vector<WinSpec> sched[2];
    std::vector<MsgSpec> msgs[2];  // [0]: a -> b, [1]: b -> a
  };

  explicit RdmCase(const Params& p) : p_(p), t_(link_config(p), engine_config(p, 0), engine_config(p, 1)) {
    const uint64_t t0 = t_.clock.now_ns() + p.start_offset_ns;
    for (int d = 0; d < 2; ++d) {
      Dir& D = dir_[d];
      D.tx = d == 0 ? t_.a.get() : t_.b.get();
      D.rx = d == 0 ? t_.b.get() : t_.a.get();
      D.to = d == 0 ? t_.a_to_b : t_.b_to_a;
      D.from = d == 0 ? t_.b_to_a : t_.a_to_b;
      const size_t n = p_.msgs[d].size();
      D.sbuf.resize(n);
      D.rbuf.resize(n);
      D.send_state.assign(n, 0);
      D.recv_state.assign(n, 0);
      D.send_at.resize(n);
      D.recv_at.resize(n);
      uint64_t ts = t0, tr = t0;
      for (size_t i = 0; i < n; ++i) {
        D.send_at[i] = ts += p_.msgs[d][i].send_gap_ns;
        D.recv_at[i] = tr += p_.msgs[d][i].recv_gap_ns;
      }
    }
    t_.sink_a.hook = nullptr;
    t_.sink_b.hook = nullptr;
  }

  void run() {
    RC_LOG() << "fault_seed=" << p_.seed << "\n";
    const bool ok = drive([&] { return all_done(); }, 600'000ull * kMs);
    if (!ok) RC_FAIL("stalled before all messages completed\n" + describe());
    // Quiesce: the last ACKs settle, nothing in flight.
    const bool quiet = drive([&] {
      return !t_.a->busy() && !t_.b->busy() && t_.link.in_flight() == 0;
    }, 600'000ull * kMs);
    if (!quiet) RC_FAIL("did not quiesce\n" + describe());
    consume_completions();
    check_no_leaks();
    classify();
  }

  // With a short peer timeout a peer may be declared dead. Then: every send completes once,
  // Ok or TimedOut; the messages received Ok are exactly a prefix of each direction's
  // sequence, in order and intact, and include every message whose send completed Ok; the
  // other receives complete with TimedOut, or (posted after the sender was declared dead)
  // stay posted and are canceled at the end; no leaks.
  void run_with_failures() {
    RC_LOG() << "fault_seed=" << p_.seed << " peer_timeout_ns=" << p_.peer_timeout_ns << "\n";
    failures_ok_ = true;
    // Warm-up: one message each way, so that each engine learns its peer's epoch before any
    // peer is declared dead (see DISABLED_DeadPeerRevivedByItsFirstPacket for what happens
    // otherwise).
    RC_ASSERT(t_.b->recv(make_recv(warm_buf_[0], 8, kWarmUpCtx)) == Status::Ok);
    RC_ASSERT(t_.a->recv(make_recv(warm_buf_[1], 8, kWarmUpCtx)) == Status::Ok);
    RC_ASSERT(t_.a->send(make_send(t_.a_to_b, warm_buf_[2], 8, kWarmUpCtx)) == Status::Ok);
    RC_ASSERT(t_.b->send(make_send(t_.b_to_a, warm_buf_[3], 8, kWarmUpCtx)) == Status::Ok);
    if (!drive([&] { return warm_done_ == 4; }, p_.start_offset_ns))
      RC_DISCARD("warm-up exchange did not finish in time");
    auto settled = [&] {
      for (int d = 0; d < 2; ++d) {
        const Dir& D = dir_[d];
        if (D.sends_done != D.send_state.size() || D.next_recv != D.recv_state.size()) return false;
        if (D.recvs_done != D.recv_state.size() && !D.rx->peer_stats(D.from).dead) return false;
      }
      return !t_.a->busy() && !t_.b->busy() && t_.link.in_flight() == 0;
    };
    if (!drive(settled, 600'000ull * kMs)) RC_FAIL("stalled\n" + describe());
    // Let liveness resolve what is left half-way (a message half received from a peer that
    // gave up): two more timeouts of idle time.
    const uint64_t until = t_.clock.now_ns() + 2 * p_.peer_timeout_ns;
    if (!drive([&] { return t_.clock.now_ns() >= until && settled(); }, 600'000ull * kMs, until))
      RC_FAIL("stalled\n" + describe());
    canceling_ = true;
    for (int d = 0; d < 2; ++d) {
      Dir& D = dir_[d];
      for (size_t i = 0; i < D.recv_state.size(); ++i)
        if (D.recv_state[i] == 1 && !D.rx->cancel_recv(ctx(i)))
          RC_FAIL("dir " + std::to_string(d) + " recv " + std::to_string(i) +
                  " pending but not cancelable\n" + describe());
    }
    consume_completions();
    size_t drained_total = 0;
    for (int d = 0; d < 2; ++d) {
      const Dir& D = dir_[d];
      RC_ASSERT(D.recvs_done == D.recv_state.size());
      // Messages that arrived after their receives failed wait in the unexpected queue
      // (the engine revives a peer declared dead before its first packet was heard, see
      // below). They must be the messages right after the received prefix, in order, intact.
      const size_t drained = drain_unexpected(d);
      drained_total += drained;
      for (size_t i = 0; i < D.send_state.size(); ++i)
        if (D.send_state[i] == 2 && D.recv_state[i] != 2 && i >= D.next_recv_completion + drained)
          RC_FAIL("dir " + std::to_string(d) + " send " + std::to_string(i) +
                  " completed Ok but the message was not received\n" + describe());
    }
    // A peer declared dead before any packet of it arrived (remote epoch unknown) is taken
    // back by its first packet as a "new incarnation", although it is the same one.
    RC_CLASSIFY(drained_total > 0, "dead peer taken back by its first packet");
    check_no_leaks();
    RC_CLASSIFY(t_.link.window_stats(0).blackout_dropped + t_.link.window_stats(1).blackout_dropped > 0, "blackout");
    RC_CLASSIFY(t_.a->stats().peers_dead + t_.b->stats().peers_dead > 0, "a peer was declared dead");
  }

 private:
  struct Dir {
    Engine* tx = nullptr;
    Engine* rx = nullptr;
    PeerId to = kNoPeer;    // the receiver, as the sender knows it
    PeerId from = kNoPeer;  // the sender, as the receiver knows it
    std::vector<std::vector<uint8_t>> sbuf, rbuf;
    std::vector<uint8_t> send_state, recv_state;  // 0 not posted, 1 posted, 2 completed
    std::vector<uint64_t> send_at, recv_at;
    size_t next_send = 0, next_recv = 0;
    size_t sends_done = 0, recvs_done = 0;
    size_t next_recv_completion = 0;  // receive completions must come in index order
    bool send_blocked = false, recv_blocked = false;  // NoResource: retried after every step
  };

  static MemLinkConfig link_config(const Params& p) {
    MemLinkConfig lc;
    lc.max_packet_bytes = kMaxPacket;
    lc.pool_buffers = p.link_buffers;
    lc.zero_copy_min_bytes = p.zero_copy_min;
    lc.fault_ab = p.base[0].config(mix(p.seed ^ 0xab));
    lc.fault_ba = p.base[1].config(mix(p.seed ^ 0xba));
    const uint64_t t0 = ManualClock().now_ns() + p.start_offset_ns;  // the Pair's clock starts there
    lc.schedule_ab = to_schedule(p.sched[0], t0, 0);
    lc.schedule_ba = to_schedule(p.sched[1], t0, 0);
    return lc;
  }

  static EngineConfig engine_config(const Params& p, int side) {
    EngineConfig c;
    c.epoch = uint32_t(mix(p.seed + 11 + side)) | 1;  // deterministic incarnations
    c.window_pkts = p.window_pkts;
    c.reorder_window_pkts = p.reorder_window_pkts;
    c.ack_coalesce_pkts = p.ack_coalesce;
    c.max_unexpected_bytes = p.unexpected_budget;
    c.inject_size = kInjectSize;
    c.tx_size = p.tx_size;
    c.rx_size = p.rx_size;
    c.peer_timeout_ns = p.peer_timeout_ns ? p.peer_timeout_ns
                        : p.failure_detection ? EngineConfig{}.peer_timeout_ns : 0;
    // With a short peer timeout keep the RTO backoff well below it: a sender whose backed-off
    // RTO exceeds the timeout declares a live peer dead between two retransmissions.
    if (p.peer_timeout_ns) c.rto_max_ns = std::min<uint64_t>(c.rto_max_ns, p.peer_timeout_ns / 5);
    return c;
  }

  static void* ctx(size_t idx) { return reinterpret_cast<void*>(uintptr_t(idx + 1)); }
  static size_t idx_of(void* c) { return reinterpret_cast<uintptr_t>(c) - 1; }

  bool all_done() const {
    for (const Dir& D : dir_)
      if (D.sends_done != D.send_state.size() || D.recvs_done != D.recv_state.size()) return false;
    return true;
  }

  uint64_t next_post_ns() const {
    uint64_t t = UINT64_MAX;
    for (const Dir& D : dir_) {
      if (D.next_send < D.send_at.size() && !D.send_blocked) t = std::min(t, D.send_at[D.next_send]);
      if (D.next_recv < D.recv_at.size() && !D.recv_blocked) t = std::min(t, D.recv_at[D.next_recv]);
    }
    return t;
  }

  void post_due() {
    const uint64_t now = t_.clock.now_ns();
    for (int d = 0; d < 2; ++d) {
      Dir& D = dir_[d];
      const auto& msgs = p_.msgs[d];
      while (D.next_recv < msgs.size() && D.recv_at[D.next_recv] <= now) {
        const size_t i = D.next_recv;
        const MsgSpec& m = msgs[i];
        auto& buf = D.rbuf[i];
        buf.assign(size_t(m.size) + m.slack + 1, 0xEE);  // +1: never a null base
        RecvOp op;
        op.peer = m.directed ? D.from : kAnyPeer;
        op.iov_count = m.recv_iovs;
        split_iov(op.iov, m.recv_iovs, buf.data(), buf.size() - 1, mix(p_.seed ^ (i << 8) ^ 0x77 ^ d));
        op.flags = (m.completion ? kOpCompletion : 0) | (m.tagged ? kOpTagged : 0);
        op.tag = m.tag;
        op.ignore = m.ignore;
        op.context = ctx(i);
        D.recv_state[i] = 1;
        const Status st = D.rx->recv(op);
        D.recv_blocked = st == Status::NoResource;
        if (D.recv_blocked) { D.recv_state[i] = 0; break; }
        RC_ASSERT(st == Status::Ok);
        ++D.next_recv;
      }
      while (D.next_send < msgs.size() && D.send_at[D.next_send] <= now) {
        const size_t i = D.next_send;
        const MsgSpec& m = msgs[i];
        auto& buf = D.sbuf[i];
        buf.resize(size_t(m.size) + 1);
        fill(buf.data(), m.size, p_.seed, d, i);
        const bool inject = m.inject && m.size <= kInjectSize;
        SendOp op;
        op.peer = D.to;
        op.iov_count = m.send_iovs;
        split_iov(op.iov, m.send_iovs, buf.data(), m.size, mix(p_.seed ^ (i << 8) ^ 0x55 ^ d));
        op.flags = (m.completion ? kOpCompletion : 0) | (m.tagged ? kOpTagged : 0) |
                   (m.cq_data ? kOpCqData : 0) | (inject ? kOpInject : 0);
        op.tag = m.tag;
        op.cq_data = m.cq_data ? mix(i ^ 0xc0de) : 0;
        op.context = ctx(i);
        D.send_state[i] = 1;
        const Status st = D.tx->send(op);
        D.send_blocked = st == Status::NoResource;
        if (D.send_blocked) { D.send_state[i] = 0; break; }
        RC_ASSERT(st == Status::Ok);
        ++D.next_send;
        if (inject) std::memset(buf.data(), 0x5A, buf.size());  // the engine must have copied
      }
    }
  }

  // Checks completions reported since the last call (throws on violation: outside the
  // engine's noexcept callbacks).
  void consume_completions() {
    for (int side = 0; side < 2; ++side) {
      RecordingSink& sink = side == 0 ? t_.sink_a : t_.sink_b;
      for (const Completion& c : sink.comps) {
        if (c.context == kWarmUpCtx) {
          RC_ASSERT(c.status == Status::Ok);
          ++warm_done_;
          continue;
        }
        if (trace_)
          std::fprintf(stderr, "t=%lu %c: %s %zu %s len=%lu\n",
                       (unsigned long)(t_.clock.now_ns() - ManualClock().now_ns()), "ab"[side],
                       (c.flags & kCompSend) ? "send" : "recv", idx_of(c.context),
                       pollfab::util::to_string(c.status), (unsigned long)c.len);
        if (c.flags & kCompSend) on_send_completion(side == 0 ? 0 : 1, c);
        else if (c.flags & kCompRecv) on_recv_completion(side == 0 ? 1 : 0, c);
        else RC_FAIL("completion with neither send nor recv flag");
      }
      sink.comps.clear();
    }
  }

  void check_no_leaks() const {
    for (const Engine* e : {t_.a.get(), t_.b.get()}) {
      const char* n = e == t_.a.get() ? "a" : "b";
      if (e->sends_in_use() || e->recvs_in_use() || e->unexpected_in_use() || e->held_packets())
        RC_FAIL(std::string("engine ") + n + " leaks at quiescence\n" + describe());
    }
    if (t_.link.pins_in_use())
      RC_FAIL("zero-copy pins leaked: " + std::to_string(t_.link.pins_in_use()) + "\n" + describe());
    if (t_.link.buffers_in_use() != t_.a->cached_packets() + t_.b->cached_packets())
      RC_FAIL("link buffers leaked: " + std::to_string(t_.link.buffers_in_use()) + " in use\n" +
              describe());
  }

  // Receives, one by one, what waits in direction d's receiver's unexpected queue, checking
  // it is message k, k+1, ... (k = size of the received prefix). Returns how many.
  size_t drain_unexpected(int d) {
    Dir& D = dir_[d];
    RecordingSink& sink = D.rx == t_.a.get() ? t_.sink_a : t_.sink_b;
    size_t j = D.next_recv_completion, n = 0;
    for (; D.rx->unexpected_in_use() > 0 && j < p_.msgs[d].size(); ++j, ++n) {
      const MsgSpec& m = p_.msgs[d][j];
      std::vector<uint8_t> buf(size_t(m.size) + 1, 0xEE), expect(m.size);
      RecvOp op = make_recv(buf.data(), m.size, reinterpret_cast<void*>(uintptr_t(0xd0000000 + j)));
      if (m.tagged) { op.flags |= kOpTagged; op.ignore = ~0ull; }
      sink.comps.clear();
      RC_ASSERT(D.rx->recv(op) == Status::Ok);
      if (sink.comps.size() != 1) {
        D.rx->cancel_recv(op.context);
        sink.comps.clear();
        break;
      }
      const Completion c = sink.comps[0];
      sink.comps.clear();
      const std::string what = "dir " + std::to_string(d) + " drained message " + std::to_string(j);
      if (c.status != Status::Ok || c.len != m.size)
        RC_FAIL(what + ": " + pollfab::util::to_string(c.status) + " len " + std::to_string(c.len));
      fill(expect.data(), m.size, p_.seed, d, j);
      if (m.size && std::memcmp(expect.data(), buf.data(), m.size) != 0) RC_FAIL(what + " corrupt");
      if (m.tagged) RC_ASSERT(c.tag == m.tag);
    }
    if (D.rx->unexpected_in_use() != 0)
      RC_FAIL("dir " + std::to_string(d) + ": unexpected messages left that are not the next "
              "ones in sequence\n" + describe());
    return n;
  }

  void on_send_completion(int d, const Completion& c) {
    Dir& D = dir_[d];
    const size_t i = idx_of(c.context);
    RC_ASSERT(i < D.send_state.size());
    RC_ASSERT(D.send_state[i] == 1);  // posted and completed once
    if (t_.link.references(D.sbuf[i].data(), D.sbuf[i].size()))
      RC_FAIL("dir " + std::to_string(d) + " send " + std::to_string(i) +
              " completed while a packet in flight still references its buffer\n" + describe());
    if (failures_ok_ && c.status == Status::TimedOut) {
      RC_ASSERT(c.cq_entry);  // errors always write an entry
      D.send_state[i] = 3;
      ++D.sends_done;
      poison_and_free(D.sbuf[i]);
      return;
    }
    if (c.status != Status::Ok)
      RC_FAIL("dir " + std::to_string(d) + " send " + std::to_string(i) + " failed: " +
              pollfab::util::to_string(c.status) + "\n" + describe());
    const MsgSpec& m = p_.msgs[d][i];
    RC_ASSERT(c.len == m.size);
    RC_ASSERT(c.cq_entry == m.completion);
    RC_ASSERT(bool(c.flags & kCompTagged) == m.tagged);
    D.send_state[i] = 2;
    ++D.sends_done;
    poison_and_free(D.sbuf[i]);
  }

  // The application owns a buffer again once its send completes: it may overwrite or free it.
  // Both, so a packet still referencing it (zero copy) carries different bytes.
  static void poison_and_free(std::vector<uint8_t>& buf) {
    std::fill(buf.begin(), buf.end(), uint8_t(0xA5));
    std::vector<uint8_t>().swap(buf);
  }

  void on_recv_completion(int d, const Completion& c) {
    Dir& D = dir_[d];
    const size_t i = idx_of(c.context);
    RC_ASSERT(i < D.recv_state.size());
    const std::string what = "dir " + std::to_string(d) + " recv " + std::to_string(i);
    if (failures_ok_ && ((c.status == Status::TimedOut && !canceling_) ||
                         (c.status == Status::Canceled && canceling_))) {
      if (D.recv_state[i] != 1) RC_FAIL(what + " completed twice or before it was posted");
      if (i < D.next_recv_completion) RC_FAIL(what + " failed below the received prefix");
      RC_ASSERT(c.cq_entry);
      D.recv_state[i] = 3;
      ++D.recvs_done;
      return;
    }
    if (c.status != Status::Ok)
      RC_FAIL(what + " failed: " + pollfab::util::to_string(c.status) + "\n" + describe());
    if (D.recv_state[i] != 1) RC_FAIL(what + " completed twice or before it was posted");
    if (i != D.next_recv_completion)
      RC_FAIL(what + " completed out of order, expected " + std::to_string(D.next_recv_completion));
    for (size_t k = 0; k < i; ++k)
      if (D.recv_state[k] != 2) RC_FAIL(what + " received Ok after receive " + std::to_string(k) + " failed");
    const MsgSpec& m = p_.msgs[d][i];
    RC_ASSERT(c.len == m.size);
    RC_ASSERT(c.olen == 0u);
    RC_ASSERT(c.peer == D.from);
    RC_ASSERT(c.cq_entry == m.completion);
    RC_ASSERT(bool(c.flags & kCompTagged) == m.tagged);
    if (m.tagged) RC_ASSERT(c.tag == m.tag);
    RC_ASSERT(bool(c.flags & kCompRemoteCqData) == m.cq_data);
    if (m.cq_data) RC_ASSERT(c.cq_data == mix(i ^ 0xc0de));
    std::vector<uint8_t> expect(m.size);
    fill(expect.data(), m.size, p_.seed, d, i);
    const auto& buf = D.rbuf[i];
    if (m.size && std::memcmp(expect.data(), buf.data(), m.size) != 0) {
      size_t at = 0;
      while (expect[at] == buf[at]) ++at;
      RC_FAIL(what + " (" + std::to_string(m.size) + " B) corrupt from byte " + std::to_string(at) +
              "\n" + describe());
    }
    for (size_t k = m.size; k < buf.size(); ++k)
      if (buf[k] != 0xEE) RC_FAIL(what + " wrote beyond the message at byte " + std::to_string(k));
    D.recv_state[i] = 2;
    ++D.recvs_done;
    ++D.next_recv_completion;
    std::vector<uint8_t>().swap(D.rbuf[i]);
  }

  // Steps both engines until done() holds. When nothing moves, jumps the clock to the next
  // event (packet delivery, engine timer, scheduled post, or wake_ns: a time done() waits for).
  // False on stall or time limit.
  bool drive(const std::function<bool()>& done, uint64_t max_sim_ns, uint64_t wake_ns = UINT64_MAX) {
    const uint64_t limit = t_.clock.now_ns() + max_sim_ns;
    uint64_t busy_idle = 0;
    for (uint64_t steps = 0; steps < 20'000'000; ++steps) {
      post_due();
      consume_completions();
      if (done()) return true;
      if (t_.step() == 0) {
        consume_completions();
        if (done()) return true;
        uint64_t next = std::min({t_.link.next_delivery_ns(), t_.a->next_deadline_ns(),
                                  t_.b->next_deadline_ns(), next_post_ns()});
        if (wake_ns > t_.clock.now_ns()) next = std::min(next, wake_ns);
        // next_deadline_ns() includes the liveness deadlines (probe, peer timeout): time jumps
        // straight to the next event, so a missing deadline shows up as a stuck case.
        if (next == UINT64_MAX) return false;  // nothing will ever happen again
        if (next > limit) return false;
        // A deadline that is due but makes nothing happen would creep the clock 1 ns a step.
        if (next <= t_.clock.now_ns()) {
          if (++busy_idle > 10'000) {
            busy_idle_note_ = "busy-idle: a deadline stays due (a " +
                              std::to_string(t_.a->next_deadline_ns()) + " b " +
                              std::to_string(t_.b->next_deadline_ns()) + " link " +
                              std::to_string(t_.link.next_delivery_ns()) + " post " +
                              std::to_string(next_post_ns()) + " wake " + std::to_string(wake_ns) +
                              " now " + std::to_string(t_.clock.now_ns()) + ") but nothing happens\n";
            return false;
          }
        } else {
          busy_idle = 0;
        }
        t_.clock.set(std::max(next, t_.clock.now_ns() + 1));
      }
    }
    return false;
  }

  std::string describe() const {
    std::ostringstream os;
    os << busy_idle_note_;
    os << "fault_seed=" << p_.seed << " t=" << t_.clock.now_ns() - ManualClock().now_ns()
       << "ns in_flight=" << t_.link.in_flight() << "\n";
    for (int d = 0; d < 2; ++d) {
      const Dir& D = dir_[d];
      const auto& fs = t_.link.fault_stats(d);
      const auto& ws = t_.link.window_stats(d);
      os << "  dir " << d << (d ? " (b->a)" : " (a->b)") << ": sends " << D.sends_done << "/"
         << D.send_state.size() << " recvs " << D.recvs_done << "/" << D.recv_state.size()
         << " posted s/r " << D.next_send << "/" << D.next_recv << "; link seen=" << fs.seen
         << " drop=" << fs.dropped << " dup=" << fs.duplicated << " reorder=" << fs.reordered
         << " corrupt=" << fs.corrupted << " blackout=" << ws.blackout_dropped
         << " delayed=" << ws.delayed << "\n";
    }
    os << "  a: " << stats_line(*t_.a) << "\n  b: " << stats_line(*t_.b) << "\n";
    return os.str();
  }

  void classify() const {
    uint64_t blackout = 0, delayed = 0, faults = 0;
    for (int d = 0; d < 2; ++d) {
      blackout += t_.link.window_stats(d).blackout_dropped;
      delayed += t_.link.window_stats(d).delayed;
      const auto& fs = t_.link.fault_stats(d);
      faults += fs.dropped + fs.duplicated + fs.reordered + fs.corrupted;
    }
    const auto& sa = t_.a->stats();
    const auto& sb = t_.b->stats();
    RC_CLASSIFY(blackout > 0, "blackout hit");
    RC_CLASSIFY(delayed > 0, "delay spike hit");
    RC_CLASSIFY(faults > 0, "random faults hit");
    RC_CLASSIFY(sa.rto_events + sb.rto_events > 0, "RTO fired");
    RC_CLASSIFY(t_.link.attached_packets() > 0, "zero copy");
    RC_CLASSIFY(sa.drop_unexpected_full + sb.drop_unexpected_full > 0, "unexpected budget full");
    RC_CLASSIFY(sa.bundled_msgs + sb.bundled_msgs > 0, "bundles");
  }

  Params p_;
  Pair t_;
  std::string busy_idle_note_;
  Dir dir_[2];
  static inline void* const kWarmUpCtx = reinterpret_cast<void*>(uintptr_t(0xfee1));
  uint8_t warm_buf_[4][8] = {};
  size_t warm_done_ = 0;
  const bool trace_ = std::getenv("PF_PROP_TRACE") != nullptr;  // completions to stderr
  bool failures_ok_ = false;  // run_with_failures: TimedOut is an allowed outcome
  bool canceling_ = false;    // the final cancel of receives nobody will satisfy
};

}  // namespace pollfab::transport::proptest
