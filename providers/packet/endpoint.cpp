#include "providers/packet/endpoint.hpp"

#include <array>
#include <cstring>

#include "lib/core/ep_options.hpp"
#include "lib/core/errors.hpp"
#include "lib/core/fabric.hpp"
#include "lib/core/ops_ep.hpp"
#include "lib/util/log.hpp"
#include "lib/core/provider.hpp"
#include "providers/packet/domain.hpp"
#include "providers/packet/pep.hpp"
#include "providers/packet/recv_op.hpp"
#include "providers/packet/srx.hpp"

namespace pollfab::providers::packet {

using transport::Completion;
using transport::PeerId;
using util::Status;

namespace {

transport::EngineConfig engine_config(TransportDomain& d, const fi_info* info) {
  const auto& t = d.config().transport;
  transport::EngineConfig c;
  c.reliable = info->ep_attr->type != FI_EP_DGRAM;  // RDM and MSG
  c.window_pkts = t.window_pkts;
  c.reorder_window_pkts = t.reorder_window_pkts;
  c.ack_coalesce_pkts = t.ack_coalesce_pkts;
  c.ack_coalesce_msgs = t.ack_coalesce_msgs;
  c.ack_delay_ns = uint64_t(t.ack_delay_us) * 1000;
  c.bundle_max_bytes = t.bundle_max_bytes;
  c.rto_min_ns = uint64_t(t.rto_min_us) * 1000;
  c.rto_max_ns = uint64_t(t.rto_max_us) * 1000;
  c.rto_initial_ns = uint64_t(t.rto_initial_us) * 1000;
  c.max_unexpected_bytes = t.max_unexpected_bytes;
  c.peer_timeout_ns = uint64_t(t.peer_timeout_ms) * 1'000'000;
  c.cc = t.congestion_control != "none";
  c.cc_target_ns = uint64_t(t.cc_target_us) * 1000;
  // auto: seal where the link does not check end to end itself (transport.checksum).
  c.checksum = t.checksum == "on" || (t.checksum == "auto" && !d.io().end_to_end_checked());
  if (info->tx_attr) {
    c.tx_size = static_cast<uint32_t>(std::max<size_t>(info->tx_attr->size, 16));
    c.inject_size = static_cast<uint32_t>(info->tx_attr->inject_size);
  }
  if (info->rx_attr) c.rx_size = static_cast<uint32_t>(std::max<size_t>(info->rx_attr->size, 16));
  if (info->ep_attr->max_msg_size) c.max_msg_size = info->ep_attr->max_msg_size;
  return c;
}

}  // namespace

TransportEndpoint::TransportEndpoint(TransportDomain* dom, const fi_info* info, void* context)
    : core::EndpointBase(dom, info, context), tdom_(dom) {
  core::install_endpoint_ops<TransportEndpoint>(box_.fid);
  // Build everything that can throw before the domain can see this endpoint.
  transport::EngineConfig cfg = engine_config(*dom, info);
  auto engine = std::make_unique<transport::Engine>(cfg, dom->io(), dom->clock(), *this);
  // A src_addr naming an endpoint id (fi_getinfo with a service, FI_ADDR_STR with /EP) asks for
  // that id; it is taken when free, the lowest free id otherwise.
  Name src;
  const bool named = info && info->src_addr &&
                     dom->name_format().decode_app(info->src_addr, info->src_addrlen, src);
  ep_id_ = dom->link().attach(this, named ? src.ep_id : 0);
  engine->set_ep_id(ep_id_);
  engine->set_mr_lookup(&dom->mr_lookup());
  if (info->ep_attr && info->ep_attr->type == FI_EP_MSG) {
    cm_ = std::make_unique<transport::CmEndpoint>(dom->io(), dom->clock(), *this,
                                                  cm_config(dom->config()), ep_id_,
                                                  engine->epoch());
    if (info->handle && info->handle->fclass == FI_CLASS_CONNREQ)
      // A request of another kind (verbs RC) is not ours: fi_accept then refuses (-FI_EINVAL).
      connreq_ = dynamic_cast<ConnReq*>(core::Object::from(info->handle));
  }
  util::Guard<util::MaybeLock> g(dom->lock());  // the assist thread may be running progress
  engine_ = std::move(engine);
  inject_size_ = engine_->config().inject_size;
  PF_LOG(tdom_->fabric()->provider()->name(), Info, EpCtrl, "ep {}: CRC-32C on sent packets {} (transport.checksum = {})",
         ep_id_, cfg.checksum ? "on" : "off", dom->config().transport.checksum);
}

TransportEndpoint::~TransportEndpoint() = default;

void TransportEndpoint::on_packet(transport::PacketBuf& pkt, uint64_t rx_ns) noexcept {
  if (!engine_) {
    tdom_->io().free(&pkt, 1);  // still being built or torn down
    return;
  }
  if (cm_) {
    if (pkt.len >= transport::wire::kHeaderBytes &&
        transport::wire::is_cm(static_cast<transport::wire::Type>(pkt.data[3]))) {
      on_cm_packet(pkt);
      return;
    }
    // The client's data proves it has our Accept (its Confirm may be lost).
    if (cm_->state() == transport::CmEndpoint::State::Accepting && pkt.src == cm_->peer().host)
      cm_->on_peer_data();
  }
  engine_->on_packet(pkt, rx_ns);
}

void TransportEndpoint::progress(uint64_t now_ns) noexcept {
  if (!engine_) return;
  engine_->progress(now_ns);
  if (cm_) {
    cm_->progress();
    // A connected peer that died (peer failure) ends the connection: FI_SHUTDOWN, once.
    if (conn_peer_ != transport::kNoPeer && !peer_gone_ && engine_->peer_dead(conn_peer_))
      on_cm_event(transport::CmEvent::Shutdown, nullptr, 0);
  }
}

int TransportEndpoint::enable() {
  {
    util::Guard<util::MaybeLock> g(tdom_->lock());
    engine_->set_send_counter_bound(send_cntr_ != nullptr);
    if (srx_) {
      auto* srx = static_cast<TransportSrx*>(srx_);  // the domain's srx_ctx made it
      if (!engine_->share_matcher(srx->matcher())) return -FI_EOPBADSTATE;
      srx->join(*engine_);
    }
  }
  stats::endpoint_enabled(tdom_);  // starts the stats socket (stats.socket) on first use
  return 0;
}

void TransportEndpoint::linger() noexcept {
  if (engine_) {  // posts queued for the next progress leave now, lingering or not
    util::Guard<util::MaybeLock> g(tdom_->lock());
    engine_->flush_posted();
  }
  const uint64_t cap_ns = uint64_t(tdom_->config().transport.linger_ms) * 1'000'000;
  if (!engine_ || !engine_->config().reliable || cap_ns == 0) return;
  constexpr uint64_t kQuietNs = 20'000'000;  // no packet for this long: peers are settled
  transport::Clock& clk = tdom_->clock();
  const uint64_t start = clk.now_ns();
  {
    util::Guard<util::MaybeLock> g(tdom_->lock());
    engine_->ack_all_now();
  }
  for (;;) {
    tdom_->progress();
    uint64_t now = clk.now_ns();
    if (now - start >= cap_ns) break;
    util::Guard<util::MaybeLock> g(tdom_->lock());
    uint64_t last = std::max(engine_->last_rx_ns(), start);
    if (engine_->sends_settled() && now - last >= kQuietNs) break;
  }
}

void TransportEndpoint::teardown() noexcept {
  linger();
  if (ep_id_) tdom_->link().detach(ep_id_);
  if (engine_) log_totals();  // detached: no other thread reaches the engine now
  util::Guard<util::MaybeLock> g(tdom_->lock());
  if (srx_ && engine_ && engine_->shares_matcher()) {
    engine_->leave_shared_matcher();  // still bound: cut-short receives reach our CQ
    static_cast<TransportSrx*>(srx_)->leave(*engine_);
  }
  engine_.reset();
}

void TransportEndpoint::log_totals() noexcept {
  const char* prov = tdom_->fabric()->provider()->name();
  if (!util::log_enabled(prov, util::LogLevel::Info, util::LogSubsys::EpCtrl)) return;
  try {
    stats::Counter c[stats::kMaxCounters];
    const std::string me = stats::address_str(tdom_->local_name(ep_id_));
    PF_LOG(prov, Info, EpCtrl, "ep {} {} {}: {}", ep_id_, engine_->config().reliable ? "rdm" : "dgram",
           me, stats::format_counters(c, stats::engine_counters(engine_->stats(), c)));
    for (PeerId i = 0; i < engine_->peer_count(); ++i) {
      transport::PeerStats p = engine_->peer_stats(i);
      std::string fi_addr = p.user == ~0ull ? std::string("none") : std::to_string(p.user);
      PF_LOG(prov, Info, EpCtrl, "ep {} peer {} fi_addr {}{}: {}", ep_id_,
             stats::address_str(tdom_->kind(), p.addr), fi_addr, p.dead ? " dead" : "",
             stats::format_counters(c, stats::peer_counters(p, c)));
    }
  } catch (...) {
  }
}

bool TransportEndpoint::refresh_av_cache() noexcept {
  uint64_t gen = av_->generation();
  if (gen == av_generation_) return false;
  // An fi_av_remove happened: cached fi_addr -> peer mappings and peer tags may be stale.
  peer_cache_.clear();
  engine_->clear_peer_users();
  av_generation_ = gen;
  return true;
}

PeerId TransportEndpoint::resolve_slow(fi_addr_t addr) noexcept {
  if (cm_) return peer_gone_ ? transport::kNoPeer : conn_peer_;  // FI_EP_MSG: the connection
  if (!av_) return transport::kNoPeer;
  refresh_av_cache();
  if (addr < peer_cache_.size() && peer_cache_[addr] != transport::kNoPeer) return peer_cache_[addr];
  uint8_t bytes[kNameBytes];
  Name n;
  if (!av_->entry(addr, bytes, sizeof bytes) || !Name::decode(bytes, kNameBytes, tdom_->kind(), n))
    return transport::kNoPeer;
  PeerId p;
  try {
    p = engine_->peer(n.peer());
    if (p == transport::kNoPeer) return p;
    if (addr >= peer_cache_.size()) peer_cache_.resize(addr + 1, transport::kNoPeer);
  } catch (...) {
    return transport::kNoPeer;
  }
  peer_cache_[addr] = p;
  engine_->set_peer_user(p, addr);
  return p;
}

fi_addr_t TransportEndpoint::source_of(transport::PeerId peer, uint64_t peer_user) noexcept {
  if (!av_) return FI_ADDR_NOTAVAIL;
  if (!refresh_av_cache() && peer_user != ~0ull) return peer_user;
  if (peer == transport::kNoPeer) return FI_ADDR_NOTAVAIL;
  const transport::PeerAddr& pa = engine_->peer_addr(peer);
  uint8_t bytes[kNameBytes];
  Name::from_host(tdom_->kind(), pa.host, pa.ep_id).encode(bytes);
  fi_addr_t a = FI_ADDR_NOTAVAIL;
  try {
    a = av_->reverse(bytes);
  } catch (...) {
  }
  if (a != FI_ADDR_NOTAVAIL) engine_->set_peer_user(peer, a);
  return a;
}

static_assert(core::MsgEndpoint<TransportEndpoint>);
static_assert(core::RmaEndpoint<TransportEndpoint>);
static_assert(core::AtomicEndpoint<TransportEndpoint>);

template <class Fill>
ssize_t TransportEndpoint::post_send_op(fi_addr_t addr, const Fill& fill) noexcept {
  util::Guard<util::MaybeLock> g(tdom_->lock());
  const transport::PeerId peer = resolve(addr);
  if (peer == transport::kNoPeer) return no_peer_error();
  // Written straight into the engine's send slot; without one (none free: the engine answers
  // NoResource again; a datagram engine has none) through send().
  Status st;
  if (transport::SendOp* slot = engine_->send_slot()) {
    slot->peer = peer;
    fill(*slot);
    st = engine_->post_send(slot);
  } else {
    transport::SendOp op;
    op.peer = peer;
    fill(op);
    st = engine_->send(op);
  }
  tdom_->link().posted(st);  // an automatic-progress thread asleep learns of the new timers
  return st == Status::Ok ? 0 : -core::fi_errno_of(st);
}

ssize_t TransportEndpoint::send(const core::MsgArgs& a, uint64_t flags, bool tagged,
                                bool inject_call) noexcept {
  if (!enabled_) return -FI_EOPBADSTATE;
  if (a.count > transport::kMaxIov || (a.count && !a.iov)) return -FI_EINVAL;
  return post_send_op(a.addr, [&](transport::SendOp& op) {
    transport::copy_iov(op.iov, a.iov, a.count);
    op.iov_count = static_cast<uint32_t>(a.count);
    op.tag = tagged ? a.tag : 0;
    op.cq_data = a.data;
    op.context = a.context;
    op.flags = (tagged ? transport::kOpTagged : 0) | tx_flags(flags, inject_call);
  });
}

ssize_t TransportEndpoint::send_one(const void* buf, size_t len, fi_addr_t dest, void* ctx,
                                    uint64_t data, uint64_t tag, uint64_t flags, bool tagged,
                                    bool inject_call) noexcept {
  if (!enabled_) return -FI_EOPBADSTATE;
  return post_send_op(dest, [&](transport::SendOp& op) {
    op.iov[0] = {const_cast<void*>(buf), len};
    op.iov_count = 1;
    op.tag = tagged ? tag : 0;
    op.cq_data = data;
    op.context = ctx;
    op.flags = (tagged ? transport::kOpTagged : 0) | tx_flags(flags, inject_call);
  });
}

template <class Fill>
ssize_t TransportEndpoint::post_recv_op(fi_addr_t addr, bool peek_or_claim,
                                        const Fill& fill) noexcept {
  util::Guard<util::MaybeLock> g(tdom_->lock());
  transport::PeerId peer = transport::kAnyPeer;
  if ((caps_ & FI_DIRECTED_RECV) && addr != FI_ADDR_UNSPEC && !cm_) {
    peer = resolve(addr);
    if (peer == transport::kNoPeer) return -FI_EINVAL;
  }
  Status st = Status::NoResource;
  if (peek_or_claim) [[unlikely]] {  // they need no receive entry of their own
    transport::RecvOp op;
    fill(op);
    op.peer = peer;
    st = engine_->recv(op);
  } else if (transport::RecvEntry* r = engine_->recv_entry()) {  // written in place
    fill(r->op);
    r->op.peer = peer;
    st = engine_->post_recv(r);
  }
  tdom_->link().posted(st);
  return st == Status::Ok ? 0 : -core::fi_errno_of(st);
}

ssize_t TransportEndpoint::recv(const core::MsgArgs& a, uint64_t flags, bool tagged) noexcept {
  if (!enabled_) return -FI_EOPBADSTATE;
  if (srx_) return -FI_EOPNOTSUPP;  // receives go to the shared context
  if (int r = check_recv_args(a, flags)) return r;
  const bool completion = !rx_selective_ || (flags & FI_COMPLETION);
  return post_recv_op(a.addr, flags & (FI_PEEK | FI_CLAIM), [&](transport::RecvOp& op) {
    fill_recv_op(a, flags, tagged, completion, min_multi_recv_, op);
  });
}

ssize_t TransportEndpoint::recv_one(void* buf, size_t len, fi_addr_t src, void* ctx,
                                    uint64_t tag, uint64_t ignore, uint64_t flags,
                                    bool tagged) noexcept {
  if (flags & (FI_MULTI_RECV | FI_PEEK | FI_CLAIM | FI_DISCARD)) [[unlikely]] {
    const iovec iov{buf, len};
    return recv(core::MsgArgs{&iov, nullptr, 1, src, ctx, 0, tag, ignore}, flags, tagged);
  }
  if (!enabled_) return -FI_EOPBADSTATE;
  if (srx_) return -FI_EOPNOTSUPP;
  const bool completion = !rx_selective_ || (flags & FI_COMPLETION);
  return post_recv_op(src, false, [&](transport::RecvOp& op) {  // as fill_recv_op
    op.iov[0] = {buf, len};
    op.iov_count = 1;
    op.tag = tag;
    op.ignore = ignore;
    op.context = ctx;
    op.min_multi_recv = min_multi_recv_;
    op.flags = (tagged ? transport::kOpTagged : 0) | (completion ? transport::kOpCompletion : 0);
  });
}

ssize_t TransportEndpoint::cancel(void* context) noexcept {
  util::Guard<util::MaybeLock> g(tdom_->lock());
  return engine_->cancel_recv(context) ? 0 : -FI_ENOENT;
}

fi_cq_err_entry TransportEndpoint::err_entry(const Completion& c, uint64_t flags) noexcept {
  fi_cq_err_entry e{};
  e.op_context = c.context;
  e.flags = flags;
  e.len = c.len;
  e.buf = c.buf;
  e.data = c.cq_data;
  e.tag = c.tag;
  e.olen = c.olen;
  e.err = core::fi_errno_of(c.status);
  e.prov_errno = e.err;
  return e;
}

namespace {
// The FI_* flags of a message completion's CQ entry (fi_cq(3)), indexed by its kCompSend,
// kCompTagged, kCompRemoteCqData and kCompMultiRecv bits (a table: one load, not four tests).
constexpr uint32_t kMsgCompletionBits = transport::kCompSend | transport::kCompRecv |
                                        transport::kCompTagged | transport::kCompRemoteCqData |
                                        transport::kCompMultiRecv;
static_assert(kMsgCompletionBits == 31);
constexpr auto kMsgCompletionFlags = [] {
  std::array<uint64_t, kMsgCompletionBits + 1> t{};
  for (uint32_t i = 0; i < t.size(); ++i)
    t[i] = ((i & transport::kCompSend) ? FI_SEND : FI_RECV) |
           ((i & transport::kCompTagged) ? FI_TAGGED : FI_MSG) |
           ((i & transport::kCompRemoteCqData) ? FI_REMOTE_CQ_DATA : 0) |
           ((i & transport::kCompMultiRecv) ? FI_MULTI_RECV : 0);
  return t;
}();
}  // namespace

void TransportEndpoint::on_completion(const Completion& c) noexcept {
  if (c.flags & (transport::kCompRma | transport::kCompAtomic)) {
    on_rma_completion(c);
    return;
  }
  const bool send = c.flags & transport::kCompSend;
  const bool ok = c.status == Status::Ok;
  bump(send ? send_cntr_ : recv_cntr_, ok);
  core::Cq* cq = send ? tx_cq_ : rx_cq_;
  if (!cq || !c.cq_entry) return;
  const uint64_t fl = kMsgCompletionFlags[c.flags & kMsgCompletionBits];
  const uint64_t tag = (c.flags & transport::kCompTagged) ? c.tag : 0;
  if (ok) {
    // fi_cq(3) fi_cq_readfrom: the source only with FI_SOURCE, else FI_ADDR_NOTAVAIL.
    const fi_addr_t src = send || !(caps_ & FI_SOURCE) ? FI_ADDR_NOTAVAIL : source_of(c.peer, c.peer_user);
    if (src == FI_ADDR_NOTAVAIL && !send && (caps_ & FI_SOURCE_ERR) && c.peer != transport::kNoPeer) {
      // FI_SOURCE_ERR (fi_cq(3)): a sender the AV does not know is an FI_EADDRNOTAVAIL error
      // entry whose err_data is its address in this endpoint's format (for fi_av_insert).
      const transport::PeerAddr& pa = engine_->peer_addr(c.peer);
      uint8_t name[kNameBytes];
      Name::from_host(tdom_->kind(), pa.host, pa.ep_id).encode(name);
      fi_cq_err_entry e = err_entry(c, fl);
      e.tag = tag;
      e.olen = 0;
      e.prov_errno = e.err = FI_EADDRNOTAVAIL;
      e.err_data = name;
      e.err_data_size = sizeof name;
      cq->push_error(e);
      return;
    }
    cq->push(c.context, fl, send ? 0 : c.len, send ? nullptr : c.buf, c.cq_data, tag, src);
    return;
  }
  cq->push_error(err_entry(c, fl));
}

void TransportEndpoint::on_sends_completed(const transport::SendDone* s, uint32_t n) noexcept {
  // on_completion's success path for sends (send counter, a CQ entry if asked for), without a
  // Completion built and a call for each. The counter moves once the entries are published:
  // an application that saw it reach N finds N entries.
  const auto count = [&] { bump_ok(send_cntr_, n); };
  if (!tx_cq_) return count();
  if (tx_cq_->burst_room(n)) [[likely]] {  // written in place, published at once
    uint32_t k = 0;
    const bool ctx_only = tx_cq_->context_only();
    for (uint32_t i = 0; i < n; ++i) {
      if (!s[i].cq_entry) continue;
      core::Cq::Entry* e = tx_cq_->burst_slot(k++);
      if (ctx_only) {  // fi_cq_entry: what a read returns, and src (readfrom)
        e->op_context = s[i].context;
        e->src = FI_ADDR_NOTAVAIL;
        continue;
      }
      *e = {s[i].context, kMsgCompletionFlags[s[i].flags & kMsgCompletionBits], 0, nullptr, 0,
            0, FI_ADDR_NOTAVAIL};
    }
    tx_cq_->burst_commit(k);
    return count();
  }
  for (uint32_t i = 0; i < n; ++i)
    if (s[i].cq_entry)
      tx_cq_->push(s[i].context, kMsgCompletionFlags[s[i].flags & kMsgCompletionBits], 0, nullptr,
                   0, 0, FI_ADDR_NOTAVAIL);
  count();
}

void TransportEndpoint::on_recvs_completed(const transport::RecvDone* r, uint32_t n) noexcept {
  // on_completion's success path for receives (receive counter, a CQ entry if asked for, the
  // source under FI_SOURCE), without a Completion built and a call for each. A source the AV
  // does not know under FI_SOURCE_ERR is an error entry: on_completion's business.
  // The entries are written in place and published together (Cq::burst_room) when the ring
  // has room for all, and the receive counter moves once they are; an error entry in between
  // publishes (and counts) those before it first.
  bool burst = rx_cq_ && rx_cq_->burst_room(n);
  const bool ctx_only = rx_cq_ && rx_cq_->context_only();
  uint32_t k = 0, counted = 0;
  const auto publish = [&] {
    if (burst) rx_cq_->burst_commit(k);
    k = 0;
    bump_ok(recv_cntr_, counted);
    counted = 0;
  };
  for (uint32_t i = 0; i < n; ++i) {
    const transport::RecvDone& d = r[i];
    fi_addr_t src = FI_ADDR_NOTAVAIL;
    if (caps_ & FI_SOURCE) {
      src = source_of(d.peer, d.peer_user);
      if (src == FI_ADDR_NOTAVAIL && (caps_ & FI_SOURCE_ERR)) [[unlikely]] {
        publish();
        on_completion(transport::to_completion(d));
        burst = rx_cq_ && rx_cq_->burst_room(n - i - 1);
        continue;
      }
    }
    if (recv_cntr_) ++counted;
    if (!rx_cq_ || !d.cq_entry) continue;
    if (burst && ctx_only) [[likely]] {  // fi_cq_entry: what a read returns, and src (readfrom)
      core::Cq::Entry* e = rx_cq_->burst_slot(k++);
      e->op_context = d.context;
      e->src = src;
      continue;
    }
    const uint64_t flags = kMsgCompletionFlags[d.flags & kMsgCompletionBits];
    const uint64_t tag = (d.flags & transport::kCompTagged) ? d.tag : 0;
    if (!burst) [[unlikely]] {
      rx_cq_->push(d.context, flags, d.len, d.buf, d.cq_data, tag, src);
      continue;
    }
    *rx_cq_->burst_slot(k++) = {d.context, flags, d.len, d.buf, d.cq_data, tag, src};
  }
  publish();
}

void TransportEndpoint::on_rma_completion(const Completion& c) noexcept {
  using namespace transport;
  const bool ok = c.status == Status::Ok;
  const uint64_t kind = (c.flags & kCompAtomic) ? FI_ATOMIC : FI_RMA;
  if (c.flags & (kCompRemoteRead | kCompRemoteWrite)) {  // a peer's access to our memory
    if (c.flags & kCompRemoteWrite) bump(rwrite_cntr_, true);
    if (c.flags & kCompRemoteRead) bump(rread_cntr_, true);
    if (!rx_cq_ || !c.cq_entry) return;
    rx_cq_->push(nullptr, kind | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, c.len, nullptr, c.cq_data, 0,
                 source_of(c.peer, c.peer_user));
    return;
  }
  const bool read = c.flags & kCompRead;
  bump(read ? read_cntr_ : write_cntr_, ok);
  if (!tx_cq_ || !c.cq_entry) return;
  const uint64_t fl = kind | (read ? FI_READ : FI_WRITE);
  if (ok) {
    tx_cq_->push(c.context, fl, 0, nullptr, 0, 0, FI_ADDR_NOTAVAIL);
    return;
  }
  fi_cq_err_entry e = err_entry(c, fl);
  e.len = 0;  // an initiator's RMA/atomic error entry names the operation only
  e.buf = nullptr;
  e.data = 0;
  e.tag = 0;
  tx_cq_->push_error(e);
}

int TransportEndpoint::getopt(int level, int name, void* val, size_t* len) noexcept {
  const bool cm_size = name == FI_OPT_CM_DATA_SIZE && cm_;
  if (level != FI_OPT_ENDPOINT || (name != FI_OPT_MIN_MULTI_RECV && !cm_size))
    return -FI_ENOPROTOOPT;
  return core::get_size_option(cm_size ? transport::wire::kMaxCmData : min_multi_recv_, val, len);
}

int TransportEndpoint::setopt(int level, int name, const void* val, size_t len) noexcept {
  if (level != FI_OPT_ENDPOINT || name != FI_OPT_MIN_MULTI_RECV) return -FI_ENOPROTOOPT;
  return core::set_size_option(min_multi_recv_, val, len);
}

int TransportEndpoint::getname(void* addr, size_t* addrlen) noexcept {
  if (!addrlen) return -FI_EINVAL;
  uint8_t name[kNameBytes];
  tdom_->local_name(ep_id_).encode(name);
  return tdom_->name_format().export_to(name, addr, addrlen);
}

int TransportEndpoint::setname(const void* addr, size_t addrlen) noexcept {
  if (enabled_) return -FI_EOPBADSTATE;
  Name n, mine = tdom_->local_name(ep_id_);
  if (!tdom_->name_format().decode_app(addr, addrlen, n)) return -FI_EINVAL;
  if ((n.mac_known() && std::memcmp(n.mac, mine.mac, 6) != 0) || n.ipv4 != mine.ipv4 ||
      n.udp_port != mine.udp_port)
    return -FI_EADDRNOTAVAIL;
  if (!n.ep_id) return -FI_EINVAL;
  try {
    if (!tdom_->link().move(ep_id_, n.ep_id)) return -FI_EADDRINUSE;
  } catch (...) {
    return -FI_ENOMEM;
  }
  util::Guard<util::MaybeLock> g(tdom_->lock());  // the assist thread reads the engine's id
  ep_id_ = n.ep_id;
  engine_->set_ep_id(ep_id_);
  return 0;
}

}  // namespace pollfab::providers::packet
