// Receive matching against a reference model of the spec (fi_tagged(3) "tag matching",
// FI_PEEK / FI_CLAIM / FI_DISCARD, fi_msg(3) FI_MULTI_RECV, fi_endpoint(3) fi_cancel).
//
// Three engines over a MemLink with random drop/duplicate/reorder faults: senders S0 and S1
// (both on side a, demultiplexed by endpoint id) and the receiver R (side b). rapidcheck
// generates a sequence of commands: a send from S0 or S1 (run until the sender's completion,
// so the message has been matched or queued at R), or a receive-side call at R (post, post a
// multi-recv buffer, peek, peek|claim, peek|discard, claim, claim|discard, cancel) with a
// random class (msg / tagged), source (any, S0, S1), tag and ignore mask from a small space
// (so matches collide). The model is a few lists written straight from the man pages; after
// every command R's completions must equal the model's, field by field (context, status,
// length, tag, source, FI_MULTI_RECV), and every received byte must be the right message's.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <deque>
#include <list>
#include <map>
#include <optional>

#include "tests/unit/transport/harness.hpp"

namespace pollfab::transport {
namespace {

using test::RecordingSink;
using testing::ManualClock;
using testing::MemLink;
using testing::MemLinkConfig;
using util::Status;

// ---- commands ----

enum class Kind { Send, Post, PostMulti, Peek, PeekClaim, PeekDiscard, Claim, ClaimDiscard, Cancel };

struct Cmd {
  Kind kind = Kind::Send;
  int sender = 0;           // Send: S0 or S1
  bool tagged = false;
  int src = -1;             // receive side: -1 any, 0 S0, 1 S1
  uint64_t tag = 0, ignore = 0;
  uint32_t len = 0;         // Send: message bytes; Post*: buffer bytes
  uint32_t min_free = 0;    // PostMulti: min_multi_recv
  uint32_t pick = 0;        // Claim*/Cancel: which claimed / posted context (modulo)
};

std::ostream& operator<<(std::ostream& o, const Cmd& c) {
  static const char* names[] = {"Send", "Post", "PostMulti", "Peek", "PeekClaim", "PeekDiscard",
                                "Claim", "ClaimDiscard", "Cancel"};
  return o << names[int(c.kind)] << "{sender=" << c.sender << " tagged=" << c.tagged
           << " src=" << c.src << " tag=" << c.tag << " ignore=" << c.ignore << " len=" << c.len
           << " min=" << c.min_free << " pick=" << c.pick << "}";
}

rc::Gen<Cmd> gen_cmd() {
  return rc::gen::exec([] {
    Cmd c;
    c.kind = *rc::gen::weightedElement<Kind>({{6, Kind::Send}, {4, Kind::Post}, {1, Kind::PostMulti},
                                             {2, Kind::Peek}, {2, Kind::PeekClaim},
                                             {1, Kind::PeekDiscard}, {2, Kind::Claim},
                                             {1, Kind::ClaimDiscard}, {1, Kind::Cancel}});
    c.sender = *rc::gen::inRange(0, 2);
    c.tagged = *rc::gen::arbitrary<bool>();
    c.src = *rc::gen::inRange(-1, 2);
    c.tag = *rc::gen::inRange<uint64_t>(0, 4);
    c.ignore = *rc::gen::elementOf(std::vector<uint64_t>{0, 0, 1, 3});
    c.len = *rc::gen::weightedElement<uint32_t>(
        {{3, *rc::gen::inRange<uint32_t>(0, 64)}, {2, *rc::gen::inRange<uint32_t>(64, 3000)},
         {1, *rc::gen::inRange<uint32_t>(3000, 9000)}});
    c.min_free = *rc::gen::inRange<uint32_t>(0, 2000);
    c.pick = *rc::gen::inRange<uint32_t>(0, 1000);
    return c;
  });
}

// ---- the model ----

struct MMsg {
  uint64_t id;
  int src;
  bool tagged;
  uint64_t tag;
  uint32_t len;
};

struct MRecv {
  void* ctx;
  bool tagged, multi;
  int src;
  uint64_t tag, ignore;
  uint32_t cap, used = 0, min_free = 0;
};

struct Expect {  // one completion R must report
  void* ctx;
  Status st;
  uint64_t len, tag;
  int src;               // -1: none
  bool multi_flag;
  std::optional<uint64_t> msg;   // data of this message at buf (Ok receives)
  uint32_t buf_off = 0;          // where in the receive's buffer (multi-recv slices)
};

bool model_match(const MRecv& r, const MMsg& m) {
  return r.tagged == m.tagged && (r.src < 0 || r.src == m.src) &&
         (!m.tagged || !((r.tag ^ m.tag) & ~r.ignore));
}

struct Model {
  std::list<MRecv> posted;           // both classes, posting order (classes never meet)
  std::list<MMsg> unexpected;        // arrival order
  std::map<void*, MMsg> claimed;
  std::vector<Expect> out;

  // Receive r takes message m (whole receive or a slice of a buffer).
  void deliver(const MRecv& r, const MMsg& m, uint32_t off, uint32_t cap, bool multi_flag) {
    const bool trunc = m.len > cap;
    out.push_back({r.ctx, trunc ? Status::Truncated : Status::Ok, std::min(m.len, cap),
                   m.tagged ? m.tag : 0, m.src, multi_flag, m.id, off});
  }
  // A slice of buffer b (posted) for m; returns true if b retired.
  bool slice(MRecv& b, const MMsg& m) {
    const uint32_t off = b.used, cap = std::min(m.len, b.cap - b.used);
    b.used += cap;
    const bool retire = b.cap - b.used < b.min_free || b.used == b.cap;
    deliver(b, m, off, cap, retire);  // slices complete at once: the retiring one releases it
    return retire;
  }
  void arrive(const MMsg& m) {
    for (auto it = posted.begin(); it != posted.end(); ++it) {
      if (!model_match(*it, m)) continue;
      if (it->multi) {
        if (slice(*it, m)) posted.erase(it);
      } else {
        deliver(*it, m, 0, it->cap, false);
        posted.erase(it);
      }
      return;
    }
    unexpected.push_back(m);
  }
  std::list<MMsg>::iterator find(const MRecv& r) {
    for (auto it = unexpected.begin(); it != unexpected.end(); ++it)
      if (model_match(r, *it)) return it;
    return unexpected.end();
  }
};

// ---- the system under test ----

class Trio {
 public:
  explicit Trio(const MemLinkConfig& lc) : link(lc, clock) {
    EngineConfig c;
    c.peer_timeout_ns = 0;
    c.ep_id = 1;
    s[0] = std::make_unique<Engine>(c, link.a(), clock, sink_s[0]);
    c.ep_id = 3;
    s[1] = std::make_unique<Engine>(c, link.a(), clock, sink_s[1]);
    c.ep_id = 2;
    r = std::make_unique<Engine>(c, link.b(), clock, sink_r);
    for (int i = 0; i < 2; ++i) {
      to_r[i] = s[i]->peer(PeerAddr{link.host(1), 2});
      from[i] = r->peer(PeerAddr{link.host(0), uint16_t(i == 0 ? 1 : 3)});
    }
  }
  size_t step() {
    size_t moved = 0;
    PacketBuf bufs[32];
    uint16_t n;
    while ((n = link.a().rx_burst(bufs, 32)) > 0) {
      for (uint16_t i = 0; i < n; ++i) {
        uint16_t ep = 0;
        wire::peek_dst_ep(bufs[i].data, bufs[i].len, ep);
        (ep == 3 ? *s[1] : *s[0]).on_packet(bufs[i]);
      }
      moved += n;
    }
    while ((n = link.b().rx_burst(bufs, 32)) > 0) {
      for (uint16_t i = 0; i < n; ++i) r->on_packet(bufs[i]);
      moved += n;
    }
    s[0]->progress();
    s[1]->progress();
    r->progress();
    return moved;
  }
  bool run_until(const std::function<bool()>& pred) {
    for (int i = 0; i < 2'000'000; ++i) {
      if (pred()) return true;
      if (step() == 0) {
        uint64_t t = std::min({link.next_delivery_ns(), s[0]->next_deadline_ns(),
                               s[1]->next_deadline_ns(), r->next_deadline_ns()});
        if (t == UINT64_MAX) return pred();
        clock.set(std::max(t, clock.now_ns() + 1));
      }
    }
    return false;
  }

  ManualClock clock;
  MemLink link;
  RecordingSink sink_s[2], sink_r;
  std::unique_ptr<Engine> s[2], r;
  PeerId to_r[2], from[2];
};

void* ctx_of(uint64_t n) { return reinterpret_cast<void*>(uintptr_t(n + 1) << 4); }

// Message id -> payload byte at offset i.
uint8_t pattern(uint64_t id, uint32_t i) { return uint8_t((id * 131 + i * 7 + (i >> 8)) ^ 0x5a); }

RC_GTEST_PROP(MatchingModel, EngineMatchesTheSpecModelUnderFaults, ()) {
  MemLinkConfig lc;
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>().as("fault_seed");
  const double drop = *rc::gen::elementOf(std::vector<double>{0, 0.01, 0.1}).as("drop");
  const double dup = *rc::gen::elementOf(std::vector<double>{0, 0.05}).as("dup");
  const double reorder = *rc::gen::elementOf(std::vector<double>{0, 0.1}).as("reorder");
  lc.fault_ab = FaultConfig{drop, dup, reorder, 0.0, seed | 1};
  lc.fault_ba = FaultConfig{drop, dup, reorder, 0.0, (seed ^ 0xabcdef) | 1};
  const auto cmds = *rc::gen::container<std::vector<Cmd>>(gen_cmd()).as("commands");

  Trio t(lc);
  Model m;
  std::map<void*, std::vector<uint8_t>> bufs;     // receive buffers by context
  std::vector<std::vector<uint8_t>> send_bufs;    // alive until the run ends
  std::vector<void*> open_ctx;                    // posted receives and buffers (for Cancel)
  std::vector<void*> claim_ctx;                   // successful PEEK|CLAIM contexts
  uint64_t next_ctx = 0, next_msg = 0;
  size_t checked = 0;

  for (const Cmd& c : cmds) {
    RecvOp op;
    op.tag = c.tag;
    op.ignore = c.ignore;
    op.flags = (c.tagged ? kOpTagged : 0) | kOpCompletion;
    op.peer = c.src < 0 ? kAnyPeer : t.from[c.src];
    const MRecv mr{nullptr, c.tagged, c.kind == Kind::PostMulti, c.src, c.tag, c.ignore, c.len, 0,
                   c.min_free};
    switch (c.kind) {
      case Kind::Send: {
        const uint64_t id = next_msg++;
        auto& b = send_bufs.emplace_back(c.len);
        for (uint32_t i = 0; i < c.len; ++i) b[i] = pattern(id, i);
        SendOp so;
        so.peer = t.to_r[c.sender];
        so.iov[0] = {b.data(), b.size()};
        so.iov_count = 1;
        so.tag = c.tagged ? c.tag : 0;
        so.flags = (c.tagged ? kOpTagged : 0) | kOpCompletion;
        so.context = ctx_of(1'000'000 + id);
        RC_ASSERT(t.s[c.sender]->send(so) == Status::Ok);
        const size_t before = t.sink_s[c.sender].comps.size();
        RC_ASSERT(t.run_until([&] { return t.sink_s[c.sender].comps.size() > before; }));
        RC_ASSERT(t.sink_s[c.sender].comps.back().status == Status::Ok);
        m.arrive(MMsg{id, c.sender, c.tagged, c.tagged ? c.tag : 0, c.len});
        break;
      }
      case Kind::Post:
      case Kind::PostMulti: {
        void* ctx = ctx_of(next_ctx++);
        auto& b = bufs[ctx];
        b.assign(c.len, 0xee);
        op.iov[0] = {b.data(), b.size()};
        op.iov_count = 1;
        op.context = ctx;
        MRecv r = mr;
        r.ctx = ctx;
        if (c.kind == Kind::PostMulti) {
          op.flags |= kOpMultiRecv;
          op.min_multi_recv = c.min_free;
          RC_ASSERT(t.r->recv(op) == Status::Ok);
          m.posted.push_back(r);
          bool retired = false;
          for (auto it = m.find(r); !retired && it != m.unexpected.end(); it = m.find(r)) {
            MMsg msg = *it;
            m.unexpected.erase(it);
            retired = m.slice(m.posted.back(), msg);
          }
          if (retired) m.posted.pop_back();
          else open_ctx.push_back(ctx);
        } else {
          RC_ASSERT(t.r->recv(op) == Status::Ok);
          auto it = m.find(r);
          if (it != m.unexpected.end()) {
            m.deliver(r, *it, 0, r.cap, false);
            m.unexpected.erase(it);
          } else {
            m.posted.push_back(r);
            open_ctx.push_back(ctx);
          }
        }
        break;
      }
      case Kind::Peek:
      case Kind::PeekClaim:
      case Kind::PeekDiscard: {
        void* ctx = ctx_of(next_ctx++);
        op.context = ctx;
        op.flags |= kOpPeek | (c.kind == Kind::PeekClaim ? kOpClaim : 0) |
                    (c.kind == Kind::PeekDiscard ? kOpDiscard : 0);
        RC_ASSERT(t.r->recv(op) == Status::Ok);
        MRecv r = mr;
        auto it = m.find(r);
        if (it == m.unexpected.end()) {
          m.out.push_back({ctx, Status::NoMessage, 0, c.tag, -1, false, std::nullopt});
        } else {
          m.out.push_back({ctx, Status::Ok, it->len, it->tag, it->src, false, std::nullopt});
          if (c.kind == Kind::PeekClaim) {
            m.claimed[ctx] = *it;
            claim_ctx.push_back(ctx);
          }
          if (c.kind != Kind::Peek) m.unexpected.erase(it);
        }
        break;
      }
      case Kind::Claim:
      case Kind::ClaimDiscard: {
        if (claim_ctx.empty()) {  // nothing claimed: a claim of an unknown context is refused
          op.context = ctx_of(next_ctx++);
          op.flags |= kOpClaim;
          RC_ASSERT(t.r->recv(op) == Status::Invalid);
          break;
        }
        const size_t k = c.pick % claim_ctx.size();
        void* ctx = claim_ctx[k];
        claim_ctx.erase(claim_ctx.begin() + k);
        const MMsg msg = m.claimed.at(ctx);
        m.claimed.erase(ctx);
        auto& b = bufs[ctx];
        b.assign(c.len, 0xee);
        op.iov[0] = {b.data(), b.size()};
        op.iov_count = 1;
        op.context = ctx;
        op.flags |= kOpClaim | (c.kind == Kind::ClaimDiscard ? kOpDiscard : 0);
        RC_ASSERT(t.r->recv(op) == Status::Ok);
        if (c.kind == Kind::ClaimDiscard) {
          m.out.push_back({ctx, Status::Ok, 0, msg.tag, msg.src, false, std::nullopt});
        } else {
          MRecv r = mr;
          r.ctx = ctx;
          m.deliver(r, msg, 0, c.len, false);
        }
        break;
      }
      case Kind::Cancel: {
        if (open_ctx.empty()) break;
        const size_t k = c.pick % open_ctx.size();
        void* ctx = open_ctx[k];
        open_ctx.erase(open_ctx.begin() + k);
        auto it = std::find_if(m.posted.begin(), m.posted.end(),
                               [&](const MRecv& r) { return r.ctx == ctx; });
        const bool found = it != m.posted.end();
        RC_ASSERT(t.r->cancel_recv(ctx) == found);
        if (found) {
          m.out.push_back({ctx, Status::Canceled, 0, it->tagged ? it->tag : 0, -1, it->multi,
                           std::nullopt});
          m.posted.erase(it);
        }
        break;
      }
    }
    // R's completions so far equal the model's.
    const auto& got = t.sink_r.comps;
    RC_ASSERT(got.size() == m.out.size());
    for (; checked < got.size(); ++checked) {
      const Completion& g = got[checked];
      const Expect& e = m.out[checked];
      RC_LOG() << "completion " << checked << " after " << c << "\n";
      RC_ASSERT(uintptr_t(g.context) == uintptr_t(e.ctx));
      RC_ASSERT(g.status == e.st);
      RC_ASSERT(g.len == e.len);
      if (e.st == Status::Ok || e.st == Status::Truncated) {
        RC_ASSERT(g.tag == e.tag);
        RC_ASSERT(g.peer == (e.src < 0 ? kNoPeer : t.from[e.src]));
      }
      RC_ASSERT(bool(g.flags & kCompMultiRecv) == e.multi_flag);
      if (e.msg) {
        const auto& b = bufs.at(e.ctx);
        RC_ASSERT(uintptr_t(g.buf) == uintptr_t(b.data() + e.buf_off));
        for (uint64_t i = 0; i < e.len; ++i) RC_ASSERT(b[e.buf_off + i] == pattern(*e.msg, i));
      }
    }
  }
  // Quiescence: cancel what is still posted; then only claimed / unexpected messages remain.
  for (void* ctx : open_ctx) t.r->cancel_recv(ctx);
  RC_ASSERT(t.r->recvs_in_use() == 0u);
  RC_ASSERT(t.r->unexpected_in_use() == m.unexpected.size() + m.claimed.size());
}

}  // namespace
}  // namespace pollfab::transport
