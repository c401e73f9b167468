// TransportDomain: an OFI domain whose endpoints run pollfab's transport engine over one
// PacketIo (a DPDK port queue pair, a UDP socket). Shared by the dpdk and udp providers; the
// provider hands over its PacketIo (attach_io: the domain owns it from then on, puts the fault
// layer transport::FaultIo over it when the config has faults, and the loopback layer
// transport::LoopbackIo on top for FI_LOCAL_COMM) and supplies the local name and the
// EAL/socket lifetime.
//
// Progress (FI_PROGRESS_MANUAL): progress() receives one burst, demultiplexes packets to
// endpoints by the header's dst_ep (unknown ids are dropped and counted), runs the I/O layer's
// timers, then every endpoint's engine timers and transmit queue.
// Liveness assist (transport.assist_interval_us): a core::ProgressThread in assist mode
// (lib/core/progress_thread.hpp) runs progress when the application has not called in for an
// interval, so no peer waits on us while the application blocks elsewhere. It takes the domain
// lock like any caller (try-lock: a busy lock means the application is progressing).
// Thread-safety: progress and data calls are serialised by the domain lock (always on, since
// the assist thread may run progress; uncontended it costs one atomic exchange per call).
// Observability (providers/packet/stats.hpp): the domain is a core::stats::Source; snapshot()
// copies the counters under the same lock, one endpoint at a time, for the stats socket.
#pragma once
#include <memory>
#include <vector>

#include "lib/config/config.hpp"
#include "lib/core/domain.hpp"
#include "lib/core/progress_thread.hpp"
#include "lib/core/stats_server.hpp"
#include "providers/packet/mr_lookup.hpp"
#include "providers/packet/name.hpp"
#include "providers/packet/stats.hpp"
#include "transport/clock.hpp"
#include "transport/fault_io.hpp"
#include "transport/loopback_io.hpp"
#include "transport/packet_io.hpp"

namespace pollfab::providers::packet {

class TransportEndpoint;

class TransportDomain : public core::Domain, public core::stats::Source, public NameResolver {
 public:
  static constexpr size_t kMaxQueueEntries = 1u << 16;  // tx/rx_attr->size limit
  static constexpr size_t kMaxInjectBytes = 16384;      // tx_attr->inject_size limit
  TransportDomain(core::Fabric* fabric, const fi_info* info, void* context, NameKind kind,
                  const config::Config& cfg);
  ~TransportDomain() override;

  int open_endpoint(fi_info* info, fid_ep** ep, uint64_t flags, void* context) final;
  const core::AddressFormat& address_format() const noexcept override { return fmt_; }
  void progress() noexcept override;

  // The packet I/O the endpoints' engines use (the fault layer when there is one).
  transport::PacketIo& io() noexcept { return *io_; }
  // The engines' view of this domain's memory regions (RMA and atomics at the target).
  transport::MrLookup& mr_lookup() noexcept { return mr_lookup_; }
  // fi_query_atomic (fi_atomic(3)): attr->size = the datatype's bytes, attr->count = the most
  // elements one operation carries. flags: 0, FI_FETCH_ATOMIC or FI_COMPARE_ATOMIC. Errors:
  // -FI_EOPNOTSUPP (op/datatype not valid for that kind), -FI_EBADFLAGS, -FI_EINVAL (null attr).
  int query_atomic(fi_datatype dt, fi_op op, fi_atomic_attr* attr, uint64_t flags) noexcept;
  // This domain's name for an endpoint id.
  virtual Name local_name(uint16_t ep_id) const noexcept = 0;
  // NameResolver: fills in a name's link address when the provider needs one (dpdk: ARP or
  // the static neighbour table, docs/addressing.md). The default (udp) has nothing to do.
  int complete(Name&) noexcept override { return 0; }
  // The application's address form and conversions (fi_getname, fi_av_*).
  const NameFormat& name_format() const noexcept { return fmt_; }
  // The I/O layers' counters (call under the domain lock). Returns how many it wrote.
  size_t io_counters(stats::Counter* out, size_t max) const noexcept {
    return io_ ? io_->counters(out, max) : 0;
  }

  // Copies the counters of the domain, its endpoints and their peers (takes the domain lock,
  // one endpoint at a time). Throws std::bad_alloc.
  void snapshot(stats::DomainSnapshot& out);
  // core::stats::Source: this domain's JSON object (a snapshot, rendered).
  void render_json(std::string& out) override;

  const config::Config& config() const noexcept { return cfg_; }
  transport::Clock& clock() noexcept { return clock_; }
  NameKind kind() const noexcept { return kind_; }
  uint64_t dropped_unknown_ep() const noexcept { return drop_unknown_ep_; }
  uint64_t assist_runs() const noexcept { return assist_.runs(); }

  // Endpoint ids: 1..65535; attach() picks the lowest free one (or `wanted` if free).
  // Returns 0 if none is free.
  uint16_t attach(TransportEndpoint* ep, uint16_t wanted = 0);
  void detach(uint16_t ep_id) noexcept;
  bool ep_id_free(uint16_t ep_id) const noexcept;
  // Moves an endpoint to another id (fi_setname before enable). False if taken.
  bool move(uint16_t from, uint16_t to);
  void teardown() noexcept override;

 protected:
  // Derived domains call this once, at the end of their constructor: the domain takes the
  // provider's I/O (wrapping it in the fault layer if cfg.fault asks for faults) and starts
  // the liveness assist. Throws std::bad_alloc.
  void attach_io(std::unique_ptr<transport::PacketIo> io);
  // Stops the assist thread and the stats socket's view of this domain, then logs and
  // releases the I/O (fault layer first). Idempotent; derived destructors call it before their
  // own members go.
  void release_io() noexcept;
  void progress_locked() noexcept;

  config::Config cfg_;
  NameKind kind_;
  NameFormat fmt_;
  transport::SystemClock clock_;
  std::unique_ptr<transport::PacketIo> io_inner_;  // the provider's
  std::unique_ptr<transport::FaultIo> io_fault_;   // over io_inner_, when faults are configured
  std::unique_ptr<transport::LoopbackIo> io_loopback_;  // over those: local traffic
  transport::PacketIo* io_ = nullptr;              // what the engines use (the loopback layer)
  std::vector<TransportEndpoint*> eps_;  // index = ep id
  DomainMrLookup mr_lookup_;
  uint64_t drop_unknown_ep_ = 0;

 private:
  core::ProgressThread assist_;
};

}  // namespace pollfab::providers::packet
