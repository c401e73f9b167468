// Engine receive side: packet validation and demux to peers, in-order delivery with a
// reorder window, duplicate suppression, reassembly into posted receives, receive matching
// and the unexpected-message queue.
#include <cstdlib>
#include <new>

#include "transport/engine_impl.hpp"

namespace pollfab::transport {

namespace {
// Out-of-order packets that extend a run above a hole are acknowledged every this many.
constexpr uint32_t kOooAckEvery = 4;
}  // namespace

Status Engine::recv(const RecvOp& op) noexcept {
  if (op.iov_count > kMaxIov) return Status::Invalid;
  if (op.peer != kAnyPeer && op.peer >= peers_.size()) return Status::Invalid;
  RecvEntry* r = recv_pool_.get();
  if (!r) return Status::NoResource;
  r->op = op;
  r->cap = iov_bytes(op.iov, op.iov_count);
  r->received = 0;
  const int cls = (op.flags & kOpTagged) ? 1 : 0;
  for (UnexEntry* u = unexpected_[cls].front(); u; u = u->next) {
    if (op.peer != kAnyPeer && op.peer != u->peer) continue;
    if (cls && ((u->tag ^ op.tag) & ~op.ignore)) continue;
    unexpected_[cls].erase(u);
    u->listed = false;
    if (u->complete) {
      copy_to_iov(r->op.iov, r->op.iov_count, 0, u->buf, std::min<uint64_t>(u->msg_len, r->cap));
      finish_recv(r, u->peer, u->msg_len, u->flags, u->tag, u->cq_data,
                  u->msg_len > r->cap ? Status::Truncated : Status::Ok);
      free_unexpected(u);
    } else {
      u->claimed = r;  // the rest of the message is still arriving
    }
    return Status::Ok;
  }
  // A receive only a dead peer could satisfy fails at once (what it sent before dying was
  // matched above), as sends to it do: fi_endpoint(3) leaves it to the provider; waiting
  // forever for a peer we gave up on is the one wrong answer.
  if (op.peer != kAnyPeer && P(op.peer).dead) {
    finish_recv(r, op.peer, 0, cls ? wire::kTagged : 0, op.tag, 0, Status::TimedOut);
    return Status::Ok;
  }
  posted_[cls].push_back(r);
  return Status::Ok;
}

bool Engine::cancel_recv(void* context) noexcept {
  for (auto& list : posted_) {
    for (RecvEntry* r = list.front(); r; r = r->next) {
      if (r->op.context != context) continue;
      list.erase(r);
      finish_recv(r, kNoPeer, 0, (r->op.flags & kOpTagged) ? wire::kTagged : 0, r->op.tag, 0,
                  Status::Canceled);
      return true;
    }
  }
  return false;
}

void Engine::on_packet(PacketBuf& pkt, uint64_t rx_ns) noexcept {
  wire::Header h;
  ++stats_.rx_pkts;
  last_rx_ns_ = rx_ns;
  if (wire::decode(pkt.data, pkt.len, h) != wire::DecodeError::None || h.dst_ep != cfg_.ep_id) {
    ++stats_.drop_protocol;
    io_.free(&pkt, 1);
    return;
  }
  if (!wire::verify(pkt.data, wire::kHeaderBytes + h.payload_len)) {  // corrupt: trust nothing
    ++stats_.drop_checksum;
    io_.free(&pkt, 1);
    return;
  }
  if (h.type == wire::Type::Dgram || !cfg_.reliable) {
    if (h.type == wire::Type::Dgram && !cfg_.reliable) on_dgram(pkt, h);
    else { ++stats_.drop_protocol; io_.free(&pkt, 1); }
    return;
  }
  PeerAddr a{pkt.src, h.src_ep};
  if (h.dst_epoch && h.dst_epoch != cfg_.epoch) {  // addressed to an earlier incarnation
    ++stats_.drop_stale_epoch;
    io_.free(&pkt, 1);
    // Tell the sender we restarted (an ACK with our epoch resets its state for us), so its
    // pending sends fail at once instead of being retransmitted forever.
    if (h.type == wire::Type::Data) {
      PeerId sp = find_peer(a);
      if (sp == kNoPeer) {
        try { sp = create_peer(a); } catch (...) { sp = kNoPeer; }
      }
      if (sp != kNoPeer) {
        Peer& q = P(sp);
        if (q.remote_epoch != h.src_epoch) {
          if (q.remote_epoch) q.retired_epoch = q.remote_epoch;
          q.remote_epoch = h.src_epoch;
        }
        send_ack(q);
      }
    }
    return;
  }
  PeerId pid = last_rx_peer_;
  if (pid == kNoPeer || !(peers_[pid]->addr == a)) {
    pid = find_peer(a);
    if (pid == kNoPeer && h.type == wire::Type::Data) {
      try { pid = create_peer(a); } catch (...) { pid = kNoPeer; }
    }
    if (pid == kNoPeer) {
      ++stats_.drop_unknown_peer;
      io_.free(&pkt, 1);
      return;
    }
    last_rx_peer_ = pid;
  }
  Peer& p = P(pid);
  if (p.remote_epoch != h.src_epoch) {
    if (h.src_epoch == p.retired_epoch) {  // a late packet of an incarnation already replaced
      ++stats_.drop_stale_epoch;
      io_.free(&pkt, 1);
      return;
    }
    if (p.remote_epoch != 0) {  // the peer restarted: what we had with it is void
      ++stats_.peer_resets;
      if (!p.dead) reset_peer(p, pid, Status::IoError);
      p.retired_epoch = p.remote_epoch;
    }
    p.remote_epoch = h.src_epoch;
    p.dead = false;  // a new incarnation is a live peer
  }
  if (p.dead) {  // only a new incarnation (handled above) brings a dead peer back
    ++stats_.drop_dead_peer;
    io_.free(&pkt, 1);
    return;
  }
  p.heard_ns = last_rx_ns_;
  p.probe_ns = 0;
  if (h.flags & wire::kAckValid) {
    if (h.type == wire::Type::Ack) on_ack(p, h, pkt.data + wire::kHeaderBytes, h.payload_len);
    else on_ack(p, h, nullptr, 0);
  }
  if (h.flags & wire::kAckReq) {  // a probe: answer at once
    p.ack_now = true;
    if (!p.ack_pending) note_ack_pending(p);
  }
  if (h.type == wire::Type::Ack) {
    ++stats_.acks_rx;
    io_.free(&pkt, 1);
    return;
  }
  stats_.rx_bytes += h.payload_len;
  ++p.rx_pkts;
  p.rx_bytes += h.payload_len;
  on_data(p, pid, pkt, h);
}

void Engine::on_data(Peer& p, PeerId pid, PacketBuf& pkt, const wire::Header& h) noexcept {
  Seq32 psn(h.psn);
  int32_t d = psn - p.rcv_nxt;
  p.data_rx_ns = last_rx_ns_;
  if (d < 0) {  // duplicate of something delivered: tell the sender again
    ++stats_.dup_pkts;
    ++p.dup_pkts;
    io_.free(&pkt, 1);
    p.ack_now = true;
    if (!p.ack_pending) note_ack_pending(p);
    return;
  }
  if (static_cast<uint32_t>(d) >= cfg_.window_pkts) {
    ++stats_.drop_window;
    io_.free(&pkt, 1);
    return;
  }
  if (d > 0) {  // ahead of a gap: hold it (no copy) until the gap fills
    PacketBuf& slot = p.held[psn.raw() & wmask_];
    if (slot.data) {
      ++stats_.dup_pkts;
      ++p.dup_pkts;
      io_.free(&pkt, 1);
      p.ack_now = true;
    } else {
      slot = pkt;
      ++p.held_count;
      ++stats_.ooo_pkts;
      // SACK news: at once for a new hole (the packet before this one is missing), else with
      // every few packets that extend the run above it.
      const bool new_hole = d == 1 || !p.held[(psn - 1).raw() & wmask_].data;
      if (new_hole || p.ack_pending + 1 >= kOooAckEvery) p.ack_now = true;
    }
    note_ack_pending(p);
    return;
  }
  PacketBuf& stale = p.held[psn.raw() & wmask_];
  if (stale.data) {  // an earlier copy was held and could not be delivered yet: use this one
    io_.free(&stale, 1);
    stale.data = nullptr;
    --p.held_count;
  }
  if (!deliver(p, pid, h, pkt.data + wire::kHeaderBytes)) {
    // No room to buffer it: not acknowledged (the sender resends later), but answered at once
    // with our credits, which close the sender's window until we have room again.
    ++stats_.drop_unexpected_full;
    io_.free(&pkt, 1);
    p.ack_now = true;
    if (!p.ack_pending) note_ack_pending(p);
    return;
  }
  io_.free(&pkt, 1);
  ++p.rcv_nxt;
  note_ack_pending(p);
  if (h.flags & wire::kAckReq) p.ack_now = true;
  if (p.held_count) drain_held(p, pid);
}

void Engine::drain_held(Peer& p, PeerId pid) noexcept {
  bool any = false;
  while (p.held_count) {
    PacketBuf& slot = p.held[p.rcv_nxt.raw() & wmask_];
    if (!slot.data) break;
    wire::Header h;
    wire::decode(slot.data, slot.len, h);  // validated on arrival
    if (!deliver(p, pid, h, slot.data + wire::kHeaderBytes)) break;
    io_.free(&slot, 1);
    slot.data = nullptr;
    --p.held_count;
    ++p.rcv_nxt;
    note_ack_pending(p);
    any = true;
  }
  if (any) p.ack_now = true;
}

void Engine::fail_current(Peer& p, PeerId pid, Status st) noexcept {
  if (p.cur_recv) {
    RecvEntry* r = p.cur_recv;
    p.cur_recv = nullptr;
    finish_recv(r, pid, p.cur_msg_len, p.cur_flags, p.cur_tag, p.cur_data, st);
  }
  if (p.cur_unex) {
    UnexEntry* u = p.cur_unex;
    p.cur_unex = nullptr;
    if (u->claimed) {
      RecvEntry* r = u->claimed;
      u->claimed = nullptr;
      finish_recv(r, pid, u->msg_len, u->flags, u->tag, u->cq_data, st);
    }
    free_unexpected(u);
  }
}

void Engine::abort_current(Peer& p, PeerId pid) noexcept {
  ++stats_.drop_protocol;
  fail_current(p, pid, Status::IoError);
}

bool Engine::deliver(Peer& p, PeerId pid, const wire::Header& h, const uint8_t* payload) noexcept {
  if (h.flags & wire::kFirst) {
    if (p.cur_recv || p.cur_unex) abort_current(p, pid);  // a message was cut short
    const bool tagged = h.flags & wire::kTagged;
    if (RecvEntry* r = match_posted(pid, tagged, h.tag)) {
      p.cur_recv = r;
      r->received = 0;
    } else {
      bool inline_buf = h.msg_len <= kInlineUnexpectedBytes;
      // Every entry counts against max_unexpected_bytes (its bookkeeping too), so a sender
      // of endless small messages cannot grow our memory without bound.
      const uint64_t cost = sizeof(UnexEntry) + (inline_buf ? 0 : h.msg_len);
      if (unex_bytes_ + cost > cfg_.max_unexpected_bytes) return false;
      UnexEntry* u = new (std::nothrow) UnexEntry;
      if (!u) return false;
      u->buf = inline_buf ? u->inline_buf : static_cast<uint8_t*>(std::malloc(h.msg_len));
      if (!u->buf) {
        delete u;
        return false;
      }
      unex_bytes_ += cost;
      u->peer = pid;
      u->flags = h.flags;
      u->tag = h.tag;
      u->cq_data = h.cq_data;
      u->msg_len = h.msg_len;
      unexpected_[tagged ? 1 : 0].push_back(u);
      u->listed = true;
      ++unex_count_;
      p.cur_unex = u;
    }
    p.cur_msg_len = h.msg_len;
    p.cur_flags = h.flags;
    p.cur_tag = h.tag;
    p.cur_data = h.cq_data;
  } else if (!p.cur_recv && !p.cur_unex) {
    ++stats_.drop_protocol;  // a middle segment with no message started: consume it
    return true;
  }
  if (h.msg_len != p.cur_msg_len) {
    abort_current(p, pid);
    return true;
  }
  const uint32_t len = h.payload_len;
  if (RecvEntry* r = p.cur_recv) {
    if (h.offset != r->received) {
      abort_current(p, pid);
      return true;
    }
    if (h.offset < r->cap)
      copy_to_iov(r->op.iov, r->op.iov_count, h.offset, payload,
                  std::min<uint64_t>(len, r->cap - h.offset));
    r->received += len;
    if (h.flags & wire::kLast) {
      p.cur_recv = nullptr;
      finish_recv(r, pid, h.msg_len, p.cur_flags, p.cur_tag, p.cur_data,
                  h.msg_len > r->cap ? Status::Truncated : Status::Ok);
    }
  } else {
    UnexEntry* u = p.cur_unex;
    if (h.offset != u->received) {
      abort_current(p, pid);
      return true;
    }
    if (len) std::memcpy(u->buf + h.offset, payload, len);
    u->received += len;
    if (h.flags & wire::kLast) {
      u->complete = true;
      p.cur_unex = nullptr;
      finish_unexpected(u);
    }
  }
  return true;
}

void Engine::on_dgram(PacketBuf& pkt, const wire::Header& h) noexcept {
  PeerId pid = find_peer(PeerAddr{pkt.src, h.src_ep});
  RecvEntry* r = match_posted(pid, h.flags & wire::kTagged, h.tag);
  if (!r) {
    ++stats_.drop_no_recv;
    io_.free(&pkt, 1);
    return;
  }
  stats_.rx_bytes += h.payload_len;
  copy_to_iov(r->op.iov, r->op.iov_count, 0, pkt.data + wire::kHeaderBytes,
              std::min<uint64_t>(h.payload_len, r->cap));
  io_.free(&pkt, 1);
  finish_recv(r, pid, h.msg_len, h.flags, h.tag, h.cq_data,
              h.msg_len > r->cap ? Status::Truncated : Status::Ok);
}

Engine::RecvEntry* Engine::match_posted(PeerId pid, bool tagged, uint64_t tag) noexcept {
  auto& list = posted_[tagged ? 1 : 0];
  for (RecvEntry* r = list.front(); r; r = r->next) {
    if (r->op.peer != kAnyPeer && r->op.peer != pid) continue;
    if (tagged && ((r->op.tag ^ tag) & ~r->op.ignore)) continue;
    list.erase(r);
    return r;
  }
  return nullptr;
}

void Engine::finish_recv(RecvEntry* r, PeerId pid, uint32_t msg_len, uint32_t flags,
                         uint64_t tag, uint64_t data, Status st) noexcept {
  Completion c;
  c.context = r->op.context;
  c.flags = kCompRecv | ((flags & wire::kTagged) ? kCompTagged : 0) |
            ((flags & wire::kCqData) ? kCompRemoteCqData : 0);
  c.cq_entry = st != Status::Ok || (r->op.flags & kOpCompletion);
  c.status = st;
  c.len = std::min<uint64_t>(msg_len, r->cap);
  c.buf = r->op.iov_count ? r->op.iov[0].iov_base : nullptr;
  c.cq_data = data;
  c.tag = tag;
  c.peer = pid;
  c.peer_user = pid < peers_.size() ? peers_[pid]->user : ~0ull;
  c.olen = msg_len > r->cap ? msg_len - r->cap : 0;
  recv_pool_.put(r);
  sink_.on_completion(c);
}

void Engine::finish_unexpected(UnexEntry* u) noexcept {
  if (!u->claimed) return;  // stays queued until a receive matches it
  RecvEntry* r = u->claimed;
  u->claimed = nullptr;
  copy_to_iov(r->op.iov, r->op.iov_count, 0, u->buf, std::min<uint64_t>(u->msg_len, r->cap));
  finish_recv(r, u->peer, u->msg_len, u->flags, u->tag, u->cq_data,
              u->msg_len > r->cap ? Status::Truncated : Status::Ok);
  free_unexpected(u);
}

void Engine::free_unexpected(UnexEntry* u) noexcept {
  if (u->listed) {
    unexpected_[(u->flags & wire::kTagged) ? 1 : 0].erase(u);
    u->listed = false;
  }
  unex_bytes_ -= sizeof(UnexEntry);
  credit_update_ = true;
  if (u->buf && u->buf != u->inline_buf) {
    std::free(u->buf);
    unex_bytes_ -= u->msg_len;
  }
  --unex_count_;
  delete u;
}

}  // namespace pollfab::transport
