#include "providers/packet/srx.hpp"

#include <algorithm>

#include "lib/core/ep_options.hpp"
#include "lib/core/errors.hpp"
#include "lib/core/ops_ep.hpp"
#include "providers/packet/domain.hpp"
#include "providers/packet/endpoint.hpp"
#include "providers/packet/recv_op.hpp"

namespace pollfab::providers::packet {

TransportSrx::TransportSrx(TransportDomain* dom, const fi_rx_attr& attr, void* context)
    : core::SrxBase(dom, attr, context),
      tdom_(dom),
      matcher_(static_cast<uint32_t>(attr.size),
               attr.total_buffered_recv ? attr.total_buffered_recv
                                        : dom->config().transport.max_unexpected_bytes),
      min_multi_recv_(TransportEndpoint::kDefaultMinMultiRecv) {
  core::install_endpoint_ops<TransportSrx>(box_.fid);
}

TransportSrx::~TransportSrx() = default;

void TransportSrx::join(transport::Engine& e) { engines_.push_back(&e); }

void TransportSrx::leave(transport::Engine& e) noexcept {
  engines_.erase(std::remove(engines_.begin(), engines_.end(), &e), engines_.end());
}

ssize_t TransportSrx::recv(const core::MsgArgs& a, uint64_t flags, bool tagged) noexcept {
  transport::RecvOp op;
  if (int r = make_recv_op(a, flags, tagged, true, min_multi_recv_, op)) return r;
  op.peer = transport::kAnyPeer;
  util::Guard<util::MaybeLock> g(tdom_->lock());
  if (!engines_.empty()) {
    const util::Status st = engines_.front()->recv(op);
    tdom_->link().posted(st);
    return -core::fi_errno_of(st);
  }
  // No endpoint yet, so no message either: a receive just waits in the queue.
  if (op.flags & (transport::kOpPeek | transport::kOpClaim)) return -FI_EOPBADSTATE;
  transport::RecvEntry* r = matcher_.new_recv(op);
  if (!r) return -FI_EAGAIN;
  matcher_.post(r);
  return 0;
}

ssize_t TransportSrx::cancel(void* context) noexcept {
  util::Guard<util::MaybeLock> g(tdom_->lock());
  if (engines_.empty()) return -FI_EOPBADSTATE;
  return engines_.front()->cancel_recv(context) ? 0 : -FI_ENOENT;
}

int TransportSrx::getopt(int level, int name, void* val, size_t* len) noexcept {
  if (level != FI_OPT_ENDPOINT || name != FI_OPT_MIN_MULTI_RECV) return -FI_ENOPROTOOPT;
  return core::get_size_option(min_multi_recv_, val, len);
}

int TransportSrx::setopt(int level, int name, const void* val, size_t len) noexcept {
  if (level != FI_OPT_ENDPOINT || name != FI_OPT_MIN_MULTI_RECV) return -FI_ENOPROTOOPT;
  return core::set_size_option(min_multi_recv_, val, len);
}

}  // namespace pollfab::providers::packet
