// Engine datagram mode (FI_EP_DGRAM): one packet per message, no ACKs, no retransmission; a
// datagram with no posted receive is dropped and counted (drop_no_recv).
#include "transport/engine_state.hpp"

namespace pollfab::transport {

Status Engine::send_dgram(const SendOp& op, uint64_t len) noexcept {
  if (len > seg_bytes_) return Status::TooBig;
  Peer& p = P(op.peer);
  PacketBuf pkt;
  if (!alloc_pkt(pkt)) return Status::NoResource;
  wire::Header h;
  h.type = wire::Type::Dgram;
  h.flags = wire::kFirst | wire::kLast | ((op.flags & kOpTagged) ? wire::kTagged : 0) |
            ((op.flags & kOpCqData) ? wire::kCqData : 0);
  h.payload_len = static_cast<uint16_t>(len);
  h.src_ep = cfg_.ep_id;
  h.dst_ep = p.addr.ep_id;
  h.src_epoch = cfg_.epoch;
  h.msg_len = static_cast<uint32_t>(len);
  h.tag = op.tag;
  h.cq_data = op.cq_data;
  wire::encode(h, pkt.data);
  copy_from_iov(op.iov, op.iov_count, 0, pkt.data + wire::kHeaderBytes, len);
  pkt.len = static_cast<uint32_t>(wire::kHeaderBytes + len);
  pkt.route = &p.route;
  if (!enqueue_tx(pkt)) {
    io_.free(&pkt, 1);
    return Status::NoResource;
  }
  flush();
  Completion c;
  c.context = op.context;
  c.flags = kCompSend | ((op.flags & kOpTagged) ? kCompTagged : 0);
  c.cq_entry = (op.flags & kOpCompletion) != 0;
  c.len = len;
  sink_.on_completion(c);
  return Status::Ok;
}

void Engine::on_dgram(PacketBuf& pkt, const wire::Header& h) noexcept {
  PeerId pid = find_peer(PeerAddr{pkt.src, h.src_ep});
  RecvEntry* r = matcher_->match_posted(pid, h.flags & wire::kTagged, h.tag, h.msg_len);
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

}  // namespace pollfab::transport
