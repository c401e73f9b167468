// TransportSrx: a shared receive context (fi_srx_context, fi_endpoint(3) "Shared Contexts") of
// a TransportDomain, for its FI_EP_MSG endpoints: a server with many connections posts its
// receive buffers once, here, instead of per connection. It owns the transport::Matcher its
// endpoints' engines match against (Engine::share_matcher): posted receives, multi-recv
// buffers and every connection's unexpected messages, within the context's own rx_size and
// unexpected-bytes budget.
//
// Calls (fi_msg(3), fi_tagged(3) receive side; the send calls are -FI_EOPNOTSUPP):
//   fi_recv/recvv/recvmsg, fi_trecv/trecvv/trecvmsg with FI_MULTI_RECV, FI_PEEK, FI_CLAIM and
//   FI_DISCARD as on an endpoint; src_addr is ignored (connections have no fi_addr), so
//   receives match any connection's messages in the order they arrive.
//   Completions go to the receive CQ and counter of the endpoint the message arrived on
//   (fi_endpoint(3)); a peek that finds nothing, and a cancelled receive, complete on the
//   first endpoint that joined and is still open. Receives posted here always ask for a
//   completion (FI_SELECTIVE_COMPLETION is an endpoint's binding, not the context's).
//   fi_cancel; fi_getopt/fi_setopt FI_OPT_MIN_MULTI_RECV (size_t bytes).
// Errors: -FI_EAGAIN (rx_size receives in use), -FI_EINVAL (iovs, flag combinations,
// FI_CLAIM without a claimed message), -FI_EOPBADSTATE (a peek, claim or cancel before any
// endpoint joined: there is no CQ to report it on), -FI_ENOENT (cancel: nothing posted under
// that context), -FI_EOPNOTSUPP (sends).
// Lifetime: fi_close is -FI_EBUSY while a bound endpoint is open; an endpoint that closes
// leaves (its messages still arriving fail the receives they took with FI_ECANCELED on its
// CQ; the context's posted receives stay for the others).
// Thread-safety: the domain's lock, which the endpoints' engines run under.
#pragma once
#include <vector>

#include "lib/core/ops_msg.hpp"
#include "lib/core/srx.hpp"
#include "transport/engine.hpp"

namespace pollfab::providers::packet {

class TransportDomain;

class TransportSrx final : public core::SrxBase {
 public:
  // attr: validated by the domain (size > 0: rx_size; total_buffered_recv: the unexpected
  // budget, 0 = the config's transport.max_unexpected_bytes).
  TransportSrx(TransportDomain* dom, const fi_rx_attr& attr, void* context);
  ~TransportSrx() override;

  ssize_t send(const core::MsgArgs&, uint64_t, bool, bool) noexcept { return -FI_EOPNOTSUPP; }
  ssize_t recv(const core::MsgArgs& a, uint64_t flags, bool tagged) noexcept;
  ssize_t cancel(void* context) noexcept;
  int getopt(int level, int name, void* val, size_t* len) noexcept;
  int setopt(int level, int name, const void* val, size_t len) noexcept;

  // The endpoints (TransportEndpoint::enable and teardown, under the domain's lock): an
  // engine that matches against matcher() joins; it leaves before it is destroyed.
  transport::Matcher& matcher() noexcept { return matcher_; }
  void join(transport::Engine& e);  // throws std::bad_alloc
  void leave(transport::Engine& e) noexcept;

 private:
  TransportDomain* tdom_;
  transport::Matcher matcher_;
  std::vector<transport::Engine*> engines_;  // joined, in joining order
  size_t min_multi_recv_;
};

}  // namespace pollfab::providers::packet
