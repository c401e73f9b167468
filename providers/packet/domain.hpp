// TransportDomain: an OFI domain whose endpoints run pollfab's transport engine over a port's
// packet I/O (a DPDK port queue pair, a UDP socket). Shared by the dpdk and udp providers. The
// port is a Link (providers/packet/link.hpp) the domain shares with the port's other domains
// and passive endpoints: the provider finds the open Link of the port or creates one over its
// PacketIo, and supplies the EAL/socket lifetime.
//
// Progress (FI_PROGRESS_MANUAL): progress() runs the link's progress: one receive burst
// demultiplexed to endpoints (and listeners) by the header's dst_ep, then every receiver's
// timers and transmit queue. The link's liveness assist thread runs it when the application
// has not called in for an interval (transport.assist_interval_us).
// Thread-safety: progress and data calls are serialised by the link's lock, which is this
// domain's lock() (its application side; the assist thread and the stats socket take the
// remote side: providers/packet/link.hpp, docs/threading.md).
// Observability (providers/packet/stats.hpp): the domain is a core::stats::Source; snapshot()
// copies the counters under the same lock, one endpoint at a time, for the stats socket.
#pragma once
#include <memory>
#include <vector>

#include "lib/config/config.hpp"
#include "lib/core/domain.hpp"
#include "lib/core/stats_server.hpp"
#include "providers/packet/link.hpp"
#include "providers/packet/mr_lookup.hpp"
#include "providers/packet/name.hpp"
#include "providers/packet/stats.hpp"
#include "transport/packet_io.hpp"

namespace pollfab::providers::packet {

class TransportEndpoint;

class TransportDomain : public core::Domain, public core::stats::Source, public NameResolver {
 public:
  static constexpr size_t kMaxQueueEntries = 1u << 16;  // tx/rx_attr->size limit
  static constexpr size_t kMaxInjectBytes = 16384;      // tx_attr->inject_size limit
  // link: the port this domain's endpoints use (shared with the port's other domains and
  // passive endpoints); the domain's lock() becomes the link's.
  TransportDomain(core::Fabric* fabric, const fi_info* info, void* context, NameKind kind,
                  const config::Config& cfg, std::shared_ptr<Link> link);
  ~TransportDomain() override;

  int open_endpoint(fi_info* info, fid_ep** ep, uint64_t flags, void* context) final;
  // fi_srx_context (fi_endpoint(3)): a shared receive context for this domain's FI_EP_MSG
  // endpoints (srx.hpp). attr null: the domain info's rx_attr. attr->size 0: that info's
  // rx_attr->size (1024 without one). Errors: -FI_EINVAL (rx null, iov_limit above
  // kMaxIov, size above kMaxQueueEntries).
  int srx_ctx(fi_rx_attr* attr, fid_ep** rx, void* context);
  const core::AddressFormat& address_format() const noexcept override { return fmt_; }
  void progress() noexcept override { link_->progress(); }
  // The port's wait source (Link::wait_fd, prepare_wait, next_deadline_ns).
  int wait_fd() noexcept override { return link_->wait_fd(); }
  bool prepare_wait() noexcept override { return link_->prepare_wait(); }
  uint64_t next_deadline_ns() noexcept override { return link_->next_deadline_ns(); }

  // The packet I/O the endpoints' engines use (the fault and loopback layers over the
  // provider's).
  transport::PacketIo& io() noexcept { return link_->io(); }
  Link& link() noexcept { return *link_; }
  // The engines' view of this domain's memory regions (RMA and atomics at the target).
  transport::MrLookup& mr_lookup() noexcept { return mr_lookup_; }
  // fi_query_atomic (fi_atomic(3)): attr->size = the datatype's bytes, attr->count = the most
  // elements one operation carries. flags: 0, FI_FETCH_ATOMIC or FI_COMPARE_ATOMIC. Errors:
  // -FI_EOPNOTSUPP (op/datatype not valid for that kind), -FI_EBADFLAGS, -FI_EINVAL (null attr).
  int query_atomic(fi_datatype dt, fi_op op, fi_atomic_attr* attr, uint64_t flags) noexcept;
  // This domain's (its port's) name for an endpoint id.
  Name local_name(uint16_t ep_id) const noexcept { return link_->local_name(ep_id); }
  // NameResolver: fills in a name's link address when the provider needs one (dpdk: ARP or
  // the static neighbour table, docs/addressing.md). The default (udp) has nothing to do.
  int complete(Name&) noexcept override { return 0; }
  // The application's address form and conversions (fi_getname, fi_av_*).
  const NameFormat& name_format() const noexcept { return fmt_; }

  // Copies the counters of the domain, its endpoints and their peers (takes the lock, one
  // endpoint at a time). Throws std::bad_alloc.
  void snapshot(stats::DomainSnapshot& out);
  // core::stats::Source: this domain's JSON object (a snapshot, rendered).
  void render_json(std::string& out) override;

  const config::Config& config() const noexcept { return cfg_; }
  transport::Clock& clock() noexcept { return link_->clock(); }
  NameKind kind() const noexcept { return kind_; }
  void teardown() noexcept override;

 protected:
  config::Config cfg_;
  NameKind kind_;
  NameFormat fmt_;
  std::shared_ptr<Link> link_;
  DomainMrLookup mr_lookup_;
};

}  // namespace pollfab::providers::packet
