#include "providers/verbs/ud_io.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <infiniband/verbs.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "lib/util/bits.hpp"

namespace pollfab::providers::verbs {

using transport::PacketBuf;

namespace {

// What a Route holds for a UD destination.
struct UdRoute {
  ibv_ah* ah;
  uint32_t qpn;
};
static_assert(sizeof(UdRoute) <= sizeof(transport::Route::bytes));

std::string verr(const char* what, int e) { return fmt::format("{}: {}", what, strerror(e)); }

}  // namespace

std::unique_ptr<UdIo> UdIo::open(const PortInfo& port, const config::VerbsConfig& cfg,
                                 std::string& err) {
  std::unique_ptr<UdIo> io(new UdIo());
  io->port_ = port;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) {
    err = verr("ibv_get_device_list", errno);
    return nullptr;
  }
  for (int d = 0; d < n && !io->ctx_; ++d)
    if (port.device == ibv_get_device_name(list[d])) io->ctx_ = ibv_open_device(list[d]);
  ibv_free_device_list(list);
  if (!io->ctx_) {
    err = fmt::format("{}: cannot open the device", port.device);
    return nullptr;
  }
  io->mtu_ = port.mtu_bytes;
  io->tx_depth_ = std::min(cfg.tx_depth, port.max_qp_wr ? port.max_qp_wr : cfg.tx_depth);
  io->rx_depth_ = std::min(cfg.rx_depth, port.max_qp_wr ? port.max_qp_wr : cfg.rx_depth);
  if (!(io->pd_ = ibv_alloc_pd(io->ctx_))) return err = verr("ibv_alloc_pd", errno), nullptr;
  if (!(io->channel_ = ibv_create_comp_channel(io->ctx_)))
    return err = verr("ibv_create_comp_channel", errno), nullptr;
  int fl = fcntl(io->channel_->fd, F_GETFL);
  fcntl(io->channel_->fd, F_SETFL, fl | O_NONBLOCK);
  if (!(io->send_cq_ = ibv_create_cq(io->ctx_, static_cast<int>(io->tx_depth_), nullptr, nullptr, 0)))
    return err = verr("ibv_create_cq (send)", errno), nullptr;
  if (!(io->recv_cq_ = ibv_create_cq(io->ctx_, static_cast<int>(io->rx_depth_), nullptr,
                                     io->channel_, 0)))
    return err = verr("ibv_create_cq (receive)", errno), nullptr;
  ibv_qp_init_attr qa{};
  qa.send_cq = io->send_cq_;
  qa.recv_cq = io->recv_cq_;
  qa.qp_type = IBV_QPT_UD;
  qa.cap.max_send_wr = io->tx_depth_;
  qa.cap.max_recv_wr = io->rx_depth_;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  qa.cap.max_inline_data = cfg.inline_bytes;
  if (!(io->qp_ = ibv_create_qp(io->pd_, &qa))) {
    qa.cap.max_inline_data = 0;  // the device offers less inline than asked: go without
    if (!(io->qp_ = ibv_create_qp(io->pd_, &qa))) return err = verr("ibv_create_qp (UD)", errno), nullptr;
  }
  io->inline_max_ = std::min(qa.cap.max_inline_data, cfg.inline_bytes);
  io->qpn_ = io->qp_->qp_num;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = port.port;
  a.qkey = kQkey;
  if (int e = ibv_modify_qp(io->qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
    return err = verr("ibv_modify_qp INIT", e), nullptr;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  if (int e = ibv_modify_qp(io->qp_, &a, IBV_QP_STATE)) return err = verr("ibv_modify_qp RTR", e), nullptr;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  if (int e = ibv_modify_qp(io->qp_, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
    return err = verr("ibv_modify_qp RTS", e), nullptr;
  // Slots: every receive posted, every send in flight, and what the engines hold (reassembly
  // and out-of-order packets, a window's worth) with room to spare.
  io->slot_bytes_ = (kGrhBytes + io->mtu_ + 63) & ~63u;
  io->slots_ = io->rx_depth_ + io->tx_depth_ + 2048;
  io->arena_bytes_ = size_t(io->slots_) * io->slot_bytes_;
  void* mem = mmap(nullptr, io->arena_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return err = verr("mmap (buffer arena)", errno), nullptr;
  io->arena_ = static_cast<uint8_t*>(mem);
  if (!(io->mr_ = ibv_reg_mr(io->pd_, io->arena_, io->arena_bytes_, IBV_ACCESS_LOCAL_WRITE)))
    return err = verr("ibv_reg_mr (buffer arena)", errno), nullptr;
  io->lkey_ = io->mr_->lkey;
  io->free_.reserve(io->slots_);
  for (uint32_t i = io->slots_; i-- > 0;) io->free_.push_back(i);
  io->stash_.resize(64);
  io->stash_.clear();
  io->refill();
  if (ibv_req_notify_cq(io->recv_cq_, 0) != 0) return err = "ibv_req_notify_cq failed", nullptr;
  return io;
}

UdIo::~UdIo() {
  sidr_.reset();
  if (qp_) ibv_destroy_qp(qp_);
  for (auto& [ip, ah] : ahs_) ibv_destroy_ah(ah);
  if (recv_cq_) {
    // Events the channel delivered must be acknowledged before the CQ can be destroyed.
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    while (ibv_get_cq_event(channel_, &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
    ibv_destroy_cq(recv_cq_);
  }
  if (send_cq_) ibv_destroy_cq(send_cq_);
  if (channel_) ibv_destroy_comp_channel(channel_);
  if (mr_) ibv_dereg_mr(mr_);
  if (arena_) munmap(arena_, arena_bytes_);
  if (pd_) ibv_dealloc_pd(pd_);
  if (ctx_) ibv_close_device(ctx_);
}

void UdIo::reap_sends() noexcept {
  if (!tx_outstanding_) return;
  ibv_wc wc[32];
  int got;
  while ((got = ibv_poll_cq(send_cq_, 32, wc)) > 0) {
    for (int i = 0; i < got; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) ++stats_.tx_errors;
      free_.push_back(static_cast<uint32_t>(wc[i].wr_id));
    }
    tx_outstanding_ -= static_cast<uint32_t>(got);
  }
}

uint16_t UdIo::alloc(PacketBuf* out, uint16_t n) noexcept {
  if (free_.size() < n) reap_sends();
  uint16_t i = 0;
  for (; i < n && !free_.empty(); ++i) {
    uint32_t s = free_.back();
    free_.pop_back();
    out[i] = PacketBuf{};
    out[i].data = slot(s) + kGrhBytes;
    out[i].handle = slot(s);
    out[i].cap = mtu_;
  }
  return i;
}

void UdIo::free(PacketBuf* pkts, uint16_t n) noexcept {
  for (uint16_t i = 0; i < n; ++i) free_.push_back(index_of(static_cast<uint8_t*>(pkts[i].handle)));
}

void UdIo::resolve(const transport::HostAddr& host, transport::Route& route) noexcept {
  UdRoute r{nullptr, uint32_t(host.bytes[3]) << 16 | uint32_t(host.bytes[4]) << 8 | host.bytes[5]};
  const uint32_t ip = util::load_be32(host.bytes + 8);
  auto it = ahs_.find(ip);
  if (it != ahs_.end()) {
    r.ah = it->second;
  } else {
    ibv_ah_attr aa{};
    aa.is_global = 1;
    aa.port_num = port_.port;
    aa.grh.sgid_index = static_cast<uint8_t>(port_.gid_index);
    aa.grh.hop_limit = 64;
    aa.grh.dgid.raw[10] = aa.grh.dgid.raw[11] = 0xff;
    std::memcpy(aa.grh.dgid.raw + 12, host.bytes + 8, 4);
    r.ah = ibv_create_ah(pd_, &aa);
    if (r.ah) {
      ++stats_.ah_created;
      try {
        ahs_.emplace(ip, r.ah);
      } catch (...) {
        ibv_destroy_ah(r.ah);  // no memory for the cache: sends to this peer fail and count
        r.ah = nullptr;
      }
    } else {
      ++stats_.ah_failed;
    }
  }
  std::memcpy(route.bytes, &r, sizeof r);
}

uint16_t UdIo::tx_burst(PacketBuf* pkts, uint16_t n) noexcept {
  if (tx_outstanding_ + n > tx_depth_) reap_sends();
  const uint32_t room = tx_depth_ - tx_outstanding_;
  if (n > room) n = static_cast<uint16_t>(room);
  if (n > 32) n = 32;
  if (!n) return 0;
  ibv_send_wr wr[32];
  ibv_sge sge[32];
  uint16_t k = 0;
  for (uint16_t i = 0; i < n; ++i) {
    UdRoute r;
    std::memcpy(&r, pkts[i].route->bytes, sizeof r);
    if (!r.ah) {  // no address handle for this peer: the packet is lost (the transport resends)
      ++stats_.tx_errors;
      if (k) break;  // keep order: send what is before it first
      free(&pkts[i], 1);
      return 1;
    }
    sge[k] = {reinterpret_cast<uintptr_t>(pkts[i].data), pkts[i].len, lkey_};
    wr[k] = ibv_send_wr{};
    wr[k].wr_id = index_of(static_cast<uint8_t*>(pkts[i].handle));
    wr[k].sg_list = &sge[k];
    wr[k].num_sge = 1;
    wr[k].opcode = IBV_WR_SEND;
    wr[k].send_flags = IBV_SEND_SIGNALED;
    if (pkts[i].len <= inline_max_) {
      wr[k].send_flags |= IBV_SEND_INLINE;
      ++stats_.tx_inline;
    }
    wr[k].wr.ud.ah = r.ah;
    wr[k].wr.ud.remote_qpn = r.qpn;
    wr[k].wr.ud.remote_qkey = kQkey;
    if (k) wr[k - 1].next = &wr[k];
    ++k;
  }
  ibv_send_wr* bad = nullptr;
  uint16_t posted = k;
  if (ibv_post_send(qp_, wr, &bad) != 0) {
    posted = bad ? static_cast<uint16_t>(bad - wr) : 0;
    ++stats_.tx_errors;
  }
  tx_outstanding_ += posted;
  stats_.tx_packets += posted;
  return posted;
}

void UdIo::refill() noexcept {
  if (rx_posted_ >= rx_depth_) return;
  ibv_recv_wr wr[32];
  ibv_sge sge[32];
  while (rx_posted_ < rx_depth_ && !free_.empty()) {
    uint32_t k = 0;
    while (k < 32 && rx_posted_ + k < rx_depth_ && !free_.empty()) {
      const uint32_t s = free_.back();
      free_.pop_back();
      sge[k] = {reinterpret_cast<uintptr_t>(slot(s)), kGrhBytes + mtu_, lkey_};
      wr[k] = ibv_recv_wr{};
      wr[k].wr_id = s;
      wr[k].sg_list = &sge[k];
      wr[k].num_sge = 1;
      if (k) wr[k - 1].next = &wr[k];
      ++k;
    }
    ibv_recv_wr* bad = nullptr;
    uint32_t posted = k;
    if (ibv_post_recv(qp_, wr, &bad) != 0) posted = bad ? static_cast<uint32_t>(bad - wr) : 0;
    for (uint32_t i = posted; i < k; ++i) free_.push_back(static_cast<uint32_t>(wr[i].wr_id));
    rx_posted_ += posted;
    if (posted < k) return;
  }
}

bool UdIo::take(const ibv_wc& wc, PacketBuf& out) noexcept {
  const auto s = static_cast<uint32_t>(wc.wr_id);
  uint8_t* b = slot(s);
  if (wc.status != IBV_WC_SUCCESS) {
    // IBV_WC_WR_FLUSH_ERR at close, or a device error: the buffer is recycled.
    ++stats_.rx_errors;
    free_.push_back(s);
    return false;
  }
  if (wc.byte_len < kGrhBytes + 1) {
    ++stats_.rx_short;
    free_.push_back(s);
    return false;
  }
  // The sender's IPv4 address: RoCE v2 over IPv4 puts the IPv4 header in the last 20 bytes of
  // the GRH area; a real GRH (IPv6 header) carries an IPv4-mapped source GID at byte 8.
  uint32_t ip = 0;
  if ((b[20] >> 4) == 4) {
    ip = util::load_be32(b + 20 + 12);
  } else if ((b[0] >> 4) == 6 && b[8 + 10] == 0xff && b[8 + 11] == 0xff) {
    ip = util::load_be32(b + 8 + 12);
  }
  if (!ip) {
    ++stats_.rx_no_ipv4;
    free_.push_back(s);
    return false;
  }
  out = PacketBuf{};
  out.data = b + kGrhBytes;
  out.handle = b;
  out.len = wc.byte_len - kGrhBytes;
  // the QP number big-endian at bytes 3-5, the IPv4 address big-endian at 8-11, composed in
  // registers: one store (store_host)
  const uint32_t qp = wc.src_qp;
  const uint64_t lo = uint64_t(qp >> 16 & 0xff) << 24 | uint64_t(qp >> 8 & 0xff) << 32 |
                      uint64_t(qp & 0xff) << 40;
  transport::store_host(out.src, lo, __builtin_bswap32(ip));
  return true;
}

uint16_t UdIo::rx_burst(PacketBuf* out, uint16_t n) noexcept {
  refill();
  uint16_t got = 0;
  while (got < n && stash_head_ < stash_.size())
    if (take(stash_[stash_head_++], out[got])) ++got;
  if (stash_head_ == stash_.size()) stash_.clear(), stash_head_ = 0;
  ibv_wc wc[32];
  while (got < n) {
    const int want = std::min<int>(32, n - got);
    const int r = ibv_poll_cq(recv_cq_, want, wc);
    if (r <= 0) break;
    rx_posted_ -= static_cast<uint32_t>(r);
    for (int i = 0; i < r; ++i)
      if (take(wc[i], out[got])) ++got;
    if (r < want) break;
  }
  stats_.rx_packets += got;
  return got;
}

int UdIo::wait_fd() const noexcept { return channel_->fd; }

bool UdIo::prepare_wait() noexcept {
  // Acknowledge what woke us, re-arm, then look once more: a completion that arrived before
  // the arm raises no event, so it must be seen here.
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  unsigned events = 0;
  while (ibv_get_cq_event(channel_, &cq, &ctx) == 0) ++events;
  if (events) ibv_ack_cq_events(recv_cq_, events);
  if (ibv_req_notify_cq(recv_cq_, 0) != 0) return false;
  if (stash_head_ < stash_.size()) return false;
  ibv_wc wc[16];
  const int r = ibv_poll_cq(recv_cq_, 16, wc);
  if (r <= 0) return true;
  rx_posted_ -= static_cast<uint32_t>(r);
  stash_.assign(wc, wc + r);  // capacity reserved at open: no allocation
  stash_head_ = 0;
  return false;
}

size_t UdIo::counters(util::Counter* out, size_t max) const noexcept {
  const util::Counter c[] = {
      {"rx_packets", stats_.rx_packets}, {"tx_packets", stats_.tx_packets},
      {"tx_inline", stats_.tx_inline},   {"rx_errors", stats_.rx_errors},
      {"tx_errors", stats_.tx_errors},   {"rx_short", stats_.rx_short},
      {"rx_no_ipv4", stats_.rx_no_ipv4}, {"ah_created", stats_.ah_created},
      {"ah_failed", stats_.ah_failed},
  };
  size_t n = std::min(max, std::size(c));
  std::copy(c, c + n, out);
  return n;
}

}  // namespace pollfab::providers::verbs
