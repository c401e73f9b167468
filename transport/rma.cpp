// Engine RMA and atomics (fi_rma(3), fi_atomic(3)). An operation of ours is a request in the
// peer's PSN stream (RmaWrite segments with the data, an RmaReadReq, or an Atomic with operand
// and compare), under the same reliability, flow and congestion control as messages; the
// target answers every request (RmaResp: status, and a read's data, segmented; AtomicResp:
// status and the previous values), and the operation completes once its request is
// acknowledged and its answer is in. The target checks key, range and access through MrLookup
// before touching memory: a refused request touches nothing and its answer carries the
// reason. A request that finds no answer slot free is not accepted (not acknowledged; the
// initiator retransmits it), as a message that finds no unexpected-buffer room.
// Wire format: transport/wire.hpp (RmaExt); docs/wire-format.md.
#include "transport/engine_state.hpp"

namespace pollfab::transport {

namespace {

bool is_atomic(RmaKind k) noexcept { return k >= RmaKind::Atomic; }

AtomicKind atomic_kind(RmaKind k) noexcept {
  return k == RmaKind::FetchAtomic   ? AtomicKind::Fetch
         : k == RmaKind::CompareAtomic ? AtomicKind::Compare
                                       : AtomicKind::Plain;
}

// Bytes of operand an atomic request carries (ATOMIC_READ carries none).
uint64_t operand_bytes(AtomicOp op, uint64_t bytes) noexcept {
  return op == AtomicOp::Read ? 0 : bytes;
}

}  // namespace

// ---- the initiator ---------------------------------------------------------------------------

Status Engine::rma(const RmaOp& op) noexcept {
  if (!cfg_.reliable) return Status::NotSupported;
  if (op.peer >= peers_.size() || op.iov_count > kMaxIov || op.compare_count > kMaxIov ||
      op.result_count > kMaxIov)
    return Status::Invalid;
  const uint64_t len = iov_bytes(op.iov, op.iov_count);
  const bool atomic = is_atomic(op.kind);
  uint64_t bytes = len;
  if (atomic) {
    const AtomicKind kind = atomic_kind(op.kind);
    if (!atomic_valid(op.atomic_op, op.datatype, kind)) return Status::NotSupported;
    bytes = uint64_t(op.count) * atomic_size(op.datatype);
    if (op.count == 0) return Status::Invalid;
    if (bytes > kMaxAtomicBytes) return Status::TooBig;
    if (op.atomic_op != AtomicOp::Read && len != bytes) return Status::Invalid;
    if (kind == AtomicKind::Compare && iov_bytes(op.compare, op.compare_count) != bytes)
      return Status::Invalid;
    if (kind != AtomicKind::Plain && iov_bytes(op.result, op.result_count) != bytes)
      return Status::Invalid;
  } else {
    if (len > cfg_.max_msg_size) return Status::TooBig;
    if (op.flags & kOpInject) {
      if (op.kind == RmaKind::Read) return Status::Invalid;
      if (len > cfg_.inject_size) return Status::TooBig;
    }
  }
  if (send_pool_.in_use() >= cfg_.tx_size && dacks_pending_) apply_deferred_acks();
  if (send_pool_.in_use() >= cfg_.tx_size || rma_free_.empty()) return Status::NoResource;
  SendMsg* m = send_pool_.get();
  if (!m) return Status::NoResource;
  const uint32_t idx = open_slot(op, bytes, false);
  const RmaSlot& s = rma_slots_[idx];

  m->reset(SendMsg::Origin::Rma);
  m->op.peer = op.peer;
  m->op.context = op.context;
  m->op.cq_data = op.cq_data;
  m->op.flags = op.kind == RmaKind::Write ? (op.flags & kOpCqData) : 0;
  m->rma_slot = idx;
  m->ext.key = op.key;
  m->ext.addr = op.addr;
  m->ext.op_id = s.id;
  Peer& p = P(op.peer);
  switch (op.kind) {
    case RmaKind::Write:
      m->type = wire::Type::RmaWrite;
      m->len = len;
      for (uint32_t i = 0; i < op.iov_count; ++i) m->op.iov[i] = op.iov[i];
      m->op.iov_count = op.iov_count;
      if (op.flags & kOpInject) {
        copy_from_iov(op.iov, op.iov_count, 0, m->inject, len);
        m->op.iov[0] = {m->inject, static_cast<size_t>(len)};
        m->op.iov_count = 1;
      } else if (len >= zc_min_ && !p.dead) {
        m->pin = io_.pin_open();
      }
      ++stats_.rma_ops;
      break;
    case RmaKind::Read:
      m->type = wire::Type::RmaReadReq;
      m->len = 0;
      m->ext.len = static_cast<uint32_t>(len);
      ++stats_.rma_ops;
      break;
    default: {  // atomics: operand and compare travel in this slot's own buffer
      m->type = wire::Type::Atomic;
      const uint64_t operand = operand_bytes(op.atomic_op, bytes);
      copy_from_iov(op.iov, op.iov_count, 0, m->inject, operand);
      uint64_t total = operand;
      if (op.kind == RmaKind::CompareAtomic) {
        copy_from_iov(op.compare, op.compare_count, 0, m->inject + operand, bytes);
        total += bytes;
      }
      m->op.iov[0] = {m->inject, static_cast<size_t>(total)};
      m->op.iov_count = 1;
      m->len = total;
      m->ext.len = op.count;
      m->ext.atomic_op = static_cast<uint8_t>(op.atomic_op);
      m->ext.datatype = static_cast<uint8_t>(op.datatype);
      m->ext.atomic_kind = static_cast<uint8_t>(atomic_kind(op.kind));
      ++stats_.atomic_ops;
      break;
    }
  }
  if (p.dead) {  // fail fast, as sends do
    complete_send(m, Status::TimedOut);
    return Status::Ok;
  }
  flush_after_post(op.flags, queue_msg(p, m));
  return Status::Ok;
}

uint32_t Engine::open_slot(const RmaOp& op, uint64_t len, bool message) noexcept {
  const uint32_t idx = rma_free_.back();
  rma_free_.pop_back();
  RmaSlot& s = rma_slots_[idx];
  s.op = op;
  s.id = ((s.id + 0x10000u) & 0xffff0000u) | idx;  // a new generation of this slot
  s.len = len;
  s.status = Status::Ok;
  s.in_use = true;
  s.request_done = s.answered = false;
  s.message = message;
  s.psn_known = false;
  ++P(op.peer).rma_pending;
  return idx;
}

void Engine::rma_request_done(SendMsg* m, Status st) noexcept {
  RmaSlot& s = rma_slots_[m->rma_slot];
  send_pool_.put(m);
  s.request_done = true;
  if (st != Status::Ok && !s.answered) {  // never delivered: no answer will come
    s.status = st;
    s.answered = true;
  }
  finish_rma(s);
}

void Engine::finish_rma(RmaSlot& s) noexcept {
  if (!s.request_done || !s.answered) return;
  Completion c;
  c.context = s.op.context;
  if (s.message) {  // a delivery-complete send
    c.flags = kCompSend | ((s.op.flags & kOpTagged) ? kCompTagged : 0);
  } else {
    const bool reads = s.op.kind == RmaKind::Read || s.op.kind == RmaKind::FetchAtomic ||
                       s.op.kind == RmaKind::CompareAtomic;
    c.flags = (is_atomic(s.op.kind) ? kCompAtomic : kCompRma) | (reads ? kCompRead : kCompWrite);
    c.peer = s.op.peer;
  }
  c.cq_entry = s.status != Status::Ok || (s.op.flags & kOpCompletion);
  c.status = s.status;
  c.len = s.len;
  if (s.op.peer < peers_.size() && P(s.op.peer).rma_pending) --P(s.op.peer).rma_pending;
  s.in_use = false;
  rma_free_.push_back(s.id & 0xffffu);
  sink_.on_completion(c);
}

void Engine::fail_rma(PeerId pid, Status st) noexcept {
  for (RmaSlot& s : rma_slots_) {
    if (!s.in_use || s.op.peer != pid || s.answered) continue;
    s.status = st;
    s.answered = true;
    finish_rma(s);
  }
}

void Engine::on_answer(PeerId pid, const wire::Header& h, const wire::RmaExt& e,
                       const uint8_t* data, uint32_t len) noexcept {
  if (h.type == wire::Type::RmaResp && e.atomic_kind == wire::kAnswerDelivery) {
    // A delivery-complete message was placed: op_id is its slot, addr its first PSN.
    RmaSlot* s = e.op_id < rma_slots_.size() ? &rma_slots_[e.op_id] : nullptr;
    if (!s || !s->in_use || !s->message || s->answered || !s->psn_known ||
        s->op.peer != pid || s->first_psn != e.addr) {
      ++stats_.drop_protocol;
      return;
    }
    s->answered = true;
    finish_rma(*s);
    return;
  }
  const uint32_t idx = e.op_id & 0xffffu;
  RmaSlot* s = idx < rma_slots_.size() ? &rma_slots_[idx] : nullptr;
  if (!s || !s->in_use || s->id != e.op_id || s->answered || e.status >= util::kStatusCount) {
    ++stats_.drop_protocol;  // an answer to nothing we are waiting for
    return;
  }
  const Status st = static_cast<Status>(e.status);
  if (h.type == wire::Type::RmaResp) {
    if (s->op.kind == RmaKind::Read) {
      if (st == Status::Ok) {
        if (h.msg_len != s->len) {
          ++stats_.drop_protocol;
          return;
        }
        copy_to_iov(s->op.iov, s->op.iov_count, h.offset, data, len);
      }
      if (!(h.flags & wire::kLast)) return;  // more of the data to come
    } else if (s->op.kind != RmaKind::Write) {
      ++stats_.drop_protocol;
      return;
    }
  } else {  // AtomicResp
    if (!is_atomic(s->op.kind)) {
      ++stats_.drop_protocol;
      return;
    }
    if (st == Status::Ok && s->op.kind != RmaKind::Atomic)
      copy_to_iov(s->op.result, s->op.result_count, 0, data, std::min<uint64_t>(len, s->len));
  }
  s->status = st;
  s->answered = true;
  finish_rma(*s);
}

// ---- the target ------------------------------------------------------------------------------

Engine::SendMsg* Engine::new_answer(PeerId pid, uint32_t op_id) noexcept {
  SendMsg* m = send_pool_.get();  // may use the answer reserve
  if (!m) return nullptr;
  m->reset(SendMsg::Origin::Answer);
  m->op.peer = pid;
  m->type = wire::Type::RmaResp;
  m->ext.op_id = op_id;
  return m;
}

Status Engine::resolve(uint64_t key, uint64_t addr, uint64_t len, uint32_t access,
                       uint8_t** out, void** region) noexcept {
  if (!mr_) return Status::Invalid;
  return mr_->resolve(key, addr, len, access, out, region);
}

void Engine::remote_event(PeerId pid, uint32_t flags, uint64_t len, uint64_t cq_data) noexcept {
  Completion c;
  c.flags = flags;
  c.cq_entry = flags & kCompRemoteCqData;  // otherwise counters only
  c.len = len;
  c.cq_data = cq_data;
  c.peer = pid;
  c.peer_user = P(pid).user;
  sink_.on_completion(c);
}

bool Engine::on_rma(Peer& p, PeerId pid, const wire::Header& h, const uint8_t* payload) noexcept {
  const wire::RmaExt e = wire::decode_rma(payload);
  const uint8_t* data = payload + wire::kRmaExtBytes;
  const uint32_t len = static_cast<uint32_t>(h.payload_len - wire::kRmaExtBytes);
  switch (h.type) {
    case wire::Type::RmaWrite: return serve_write(p, pid, h, e, data, len);
    case wire::Type::RmaReadReq: return serve_read(p, pid, e);
    case wire::Type::Atomic: return serve_atomic(p, pid, h, e, data, len);
    default: on_answer(pid, h, e, data, len); return true;
  }
}

bool Engine::serve_write(Peer& p, PeerId pid, const wire::Header& h, const wire::RmaExt& e,
                         const uint8_t* data, uint32_t len) noexcept {
  if (h.flags & wire::kFirst) {
    if (p.rma_answer) {  // a write was cut short (cannot happen with a correct sender)
      ++stats_.drop_protocol;
      send_pool_.put(p.rma_answer);
      p.rma_answer = nullptr;
    }
    SendMsg* a = new_answer(pid, e.op_id);
    if (!a) return false;  // no answer slot: not accepted now; the sender resends
    p.rma_answer = a;
    p.rma_status = resolve(e.key, e.addr, h.msg_len, kAccessRemoteWrite, &p.rma_base, &p.rma_region);
  } else if (!p.rma_answer || e.op_id != p.rma_answer->ext.op_id) {
    ++stats_.drop_protocol;  // a middle segment of nothing we started: consume it
    return true;
  }
  if (p.rma_status == Status::Ok && len) std::memcpy(p.rma_base + h.offset, data, len);
  if (!(h.flags & wire::kLast)) return true;
  SendMsg* a = p.rma_answer;
  p.rma_answer = nullptr;
  a->ext.status = static_cast<uint8_t>(p.rma_status);
  if (p.rma_status == Status::Ok) {
    ++stats_.rma_served;
    mr_->accessed(p.rma_region, kAccessRemoteWrite);
    remote_event(pid, kCompRma | kCompRemoteWrite | ((h.flags & wire::kCqData) ? kCompRemoteCqData : 0),
                 h.msg_len, h.cq_data);
  } else {
    ++stats_.rma_rejected;
  }
  queue_msg(p, a);
  return true;
}

bool Engine::serve_read(Peer& p, PeerId pid, const wire::RmaExt& e) noexcept {
  SendMsg* a = new_answer(pid, e.op_id);
  if (!a) return false;
  uint8_t* base = nullptr;
  void* region = nullptr;
  const Status st = resolve(e.key, e.addr, e.len, kAccessRemoteRead, &base, &region);
  a->ext.status = static_cast<uint8_t>(st);
  if (st == Status::Ok) {
    a->op.iov[0] = {base, e.len};
    a->op.iov_count = 1;
    a->len = e.len;
    if (a->len >= zc_min_) a->pin = io_.pin_open();
    ++stats_.rma_served;
    mr_->accessed(region, kAccessRemoteRead);
    remote_event(pid, kCompRma | kCompRemoteRead, e.len, 0);
  } else {
    ++stats_.rma_rejected;
  }
  queue_msg(p, a);
  return true;
}

bool Engine::serve_atomic(Peer& p, PeerId pid, const wire::Header& h, const wire::RmaExt& e,
                          const uint8_t* data, uint32_t len) noexcept {
  SendMsg* a = new_answer(pid, e.op_id);
  if (!a) return false;
  a->type = wire::Type::AtomicResp;
  const auto op = static_cast<AtomicOp>(e.atomic_op);
  const auto type = static_cast<AtomicType>(e.datatype);
  const auto kind = static_cast<AtomicKind>(e.atomic_kind);
  const uint64_t bytes = uint64_t(e.len) * atomic_size(type);
  Status st = Status::Ok;
  if (e.atomic_kind > uint8_t(AtomicKind::Compare) || !atomic_valid(op, type, kind)) {
    st = Status::NotSupported;
  } else if (bytes == 0 || bytes > kMaxAtomicBytes ||
             h.msg_len != operand_bytes(op, bytes) + (kind == AtomicKind::Compare ? bytes : 0) ||
             len != h.msg_len) {
    st = Status::Invalid;
    ++stats_.drop_protocol;
  }
  uint8_t* base = nullptr;
  void* region = nullptr;
  if (st == Status::Ok) {
    const uint32_t access = kind == AtomicKind::Plain ? kAccessRemoteWrite
                            : op == AtomicOp::Read    ? kAccessRemoteRead
                                                      : kAccessRemoteRead | kAccessRemoteWrite;
    st = resolve(e.key, e.addr, bytes, access, &base, &region);
    if (st == Status::Ok) {
      const uint64_t operand = operand_bytes(op, bytes);
      uint8_t* old = kind == AtomicKind::Plain ? nullptr : a->inject;
      atomic_apply(op, type, base, operand ? data : nullptr,
                   kind == AtomicKind::Compare ? data + operand : nullptr, old, e.len);
      if (old) {
        a->op.iov[0] = {old, static_cast<size_t>(bytes)};
        a->op.iov_count = 1;
        a->len = bytes;
      }
      mr_->accessed(region, access);
      remote_event(pid, kCompAtomic | ((access & kAccessRemoteWrite) ? kCompRemoteWrite : 0) |
                            ((access & kAccessRemoteRead) ? kCompRemoteRead : 0),
                   bytes, 0);
    }
  }
  if (st == Status::Ok) ++stats_.atomic_served;
  else ++stats_.rma_rejected;
  a->ext.status = static_cast<uint8_t>(st);
  queue_msg(p, a);
  return true;
}

}  // namespace pollfab::transport
