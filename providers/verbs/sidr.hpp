// Service ID resolution (SIDR) through rdma_cm (librdmacm, RDMA_PS_UDP): how a verbs endpoint
// named by node and service (fi_getinfo(node, service), FI_SOCKADDR_IN, fi_av_insertsvc) gets
// the UD QP number its packets must go to. The same mechanism IB and RoCE use for UD services
// (IBTA 12.11; rdma_connect(3) on a UDP-port-space id, rdma_accept(3) on the listener).
//
//   SidrListener   answers SIDR requests for ipv4:service with this port's UD QP number (and
//                  the Q_Key rdma_cm assigns to its UDP port space, which UdIo uses), from its
//                  own CmThread (cm_thread.hpp).
//   sidr_resolve   asks ipv4:service for its QP number; bounded by timeout_ms.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "providers/verbs/cm_thread.hpp"

struct rdma_event_channel;
struct rdma_cm_id;

namespace pollfab::providers::verbs {

class SidrListener final : public CmHandler {
 public:
  // Binds ipv4:service (host order; service 0 = an ephemeral port, see service()) and starts
  // answering. nullptr with err set (the rdma_cm call and errno) on failure, e.g. the address
  // is not an RDMA device's or the service is taken.
  static std::unique_ptr<SidrListener> start(uint32_t ipv4, uint16_t service, uint32_t qpn,
                                             std::string& err);
  ~SidrListener() override;  // destroys the id, then stops the thread
  SidrListener(const SidrListener&) = delete;
  SidrListener& operator=(const SidrListener&) = delete;
  uint16_t service() const noexcept { return service_; }
  uint64_t answered() const noexcept { return answered_.load(std::memory_order_relaxed); }

 private:
  SidrListener() = default;
  // A SIDR request: answered with the UD QP number; the request's id is done after that.
  void on_cm_event(rdma_cm_event& ev) noexcept override;

  std::shared_ptr<CmThread> cm_;
  rdma_cm_id* listen_ = nullptr;
  uint16_t service_ = 0;
  uint32_t qpn_ = 0;
  std::atomic<uint64_t> answered_{0};  // requests answered (written by the thread)
};

// The UD QP number serving dst_ipv4:service (host order), asked from src_ipv4 (this port's
// address). 0 and qpn set, or -FI_EHOSTUNREACH (no route, no answer within timeout_ms),
// -FI_ECONNREFUSED (the peer rejected: nothing listens on that service), -FI_EIO (rdma_cm
// failed); err says which step.
int sidr_resolve(uint32_t src_ipv4, uint32_t dst_ipv4, uint16_t service, int timeout_ms,
                 uint32_t& qpn, std::string& err);

}  // namespace pollfab::providers::verbs
