// TransportDomain: an OFI domain whose endpoints run pollfab's transport engine over one
// PacketIo (a DPDK port queue pair, a UDP socket). Shared by the dpdk and udp providers; the
// provider supplies the I/O (rx_burst, io(), local name) and EAL/socket lifetime.
//
// Progress (FI_PROGRESS_MANUAL): progress() receives one burst, demultiplexes packets to
// endpoints by the header's dst_ep (unknown ids are dropped and counted), runs the I/O layer's
// timers, then every endpoint's engine timers and transmit queue.
// Thread-safety: FI_THREAD_SAFE domains serialise progress and data calls with the domain
// lock; other threading levels rely on the application.
#pragma once
#include <memory>
#include <vector>

#include "lib/config/config.hpp"
#include "lib/core/domain.hpp"
#include "providers/common/name.hpp"
#include "transport/clock.hpp"
#include "transport/packet_io.hpp"

namespace pollfab::providers {

class TransportEndpoint;

class TransportDomain : public core::Domain {
 public:
  TransportDomain(core::Fabric* fabric, const fi_info* info, void* context, NameKind kind,
                  const config::Config& cfg);
  ~TransportDomain() override;

  int open_endpoint(fi_info* info, fid_ep** ep, uint64_t flags, void* context) override;
  const core::AddressFormat& address_format() const noexcept override { return fmt_; }
  void progress() noexcept override;

  // I/O hooks of the provider.
  virtual transport::PacketIo& io() noexcept = 0;
  virtual uint16_t rx_burst(transport::PacketBuf* out, uint16_t n) noexcept = 0;
  // Time-driven work of the I/O layer (e.g. releasing packets the fault injector delayed).
  virtual void service() noexcept {}
  // This domain's name for an endpoint id.
  virtual Name local_name(uint16_t ep_id) const noexcept = 0;

  const config::Config& config() const noexcept { return cfg_; }
  transport::Clock& clock() noexcept { return clock_; }
  NameKind kind() const noexcept { return kind_; }
  uint64_t dropped_unknown_ep() const noexcept { return drop_unknown_ep_; }

  // Endpoint ids: 1..65535; attach() picks the lowest free one (or `wanted` if free).
  // Returns 0 if none is free.
  uint16_t attach(TransportEndpoint* ep, uint16_t wanted = 0);
  void detach(uint16_t ep_id) noexcept;
  bool ep_id_free(uint16_t ep_id) const noexcept;
  // Moves an endpoint to another id (fi_setname before enable). False if taken.
  bool move(uint16_t from, uint16_t to);

 protected:
  config::Config cfg_;
  NameKind kind_;
  NameFormat fmt_;
  transport::SystemClock clock_;
  std::vector<TransportEndpoint*> eps_;  // index = ep id
  uint64_t drop_unknown_ep_ = 0;
};

}  // namespace pollfab::providers
