// TransportPep: the passive endpoint of the transport-based providers (fi_endpoint(3)
// fi_passive_ep, fi_cm(3) fi_listen/fi_reject/fi_getname, fi_eq(3) FI_CONNREQ). It listens on
// its port's Link under endpoint id kServiceEpId when free (what node:service names reach),
// runs a transport::CmListener there, and reports each connection request once on its EQ as an
// FI_CONNREQ event whose info (the pep's, with dest_addr = the client, handle = a ConnReq) the
// application passes to fi_endpoint; fi_accept on that endpoint or fi_reject on the pep answers
// it. Connection requests are progressed by the link (the application's calls on any object of
// the port, or the liveness assist thread while it blocks in fi_eq_sread).
// Errors: fi_listen without a bound EQ -FI_ENOEQ, twice -FI_EOPBADSTATE; fi_reject of an
// unknown or answered handle -FI_EINVAL, CM data above kMaxCmData -FI_EINVAL; fi_pep_bind of
// anything but an EQ -FI_EINVAL.
// Thread-safety: control path; the listener runs under the link's lock.
#pragma once
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>

#include <functional>
#include <list>
#include <memory>

#include "lib/config/config.hpp"
#include "lib/core/eq.hpp"
#include "lib/core/fabric.hpp"
#include "lib/core/fid.hpp"
#include "providers/packet/link.hpp"
#include "providers/packet/name.hpp"
#include "transport/connection.hpp"

namespace pollfab::providers::packet {

class TransportPep;

// Opens (or finds) the Link of the port an info names; 0 or a -FI_E* code in err.
using LinkOpener = std::function<std::shared_ptr<Link>(const fi_info* info, int& err)>;

// The handle of one connection request (info->handle of an FI_CONNREQ event).
class ConnReq final : public core::Object {
 public:
  ConnReq(TransportPep* pep, uint64_t request, const transport::PeerAddr& client,
          uint32_t conn_id);
  struct fid* handle() noexcept { return &box_.fid; }
  int close() override { return 0; }  // owned by the pep, freed when the pep closes
  TransportPep* pep() const noexcept { return pep_; }
  uint64_t request() const noexcept { return request_; }
  const transport::PeerAddr& client() const noexcept { return client_; }
  uint32_t conn_id() const noexcept { return conn_id_; }

 private:
  core::FidBox<struct fid> box_;
  TransportPep* pep_;
  uint64_t request_;
  transport::PeerAddr client_;
  uint32_t conn_id_;
};

// fi_passive_ep(3) for the packet providers: a TransportPep listening on the Link open_link
// gives. -FI_EINVAL unless info asks for FI_EP_MSG in a name format the providers support.
int open_pep(core::Fabric* fabric, fi_info* info, fid_pep** pep, void* context, NameKind kind,
             const config::Config& cfg, LinkOpener open_link);

class TransportPep final : public core::Object, public Receiver, public transport::CmListenerSink {
 public:
  TransportPep(core::Fabric* fabric, const fi_info* info, void* context, NameKind kind,
               const config::Config& cfg, LinkOpener open_link);
  ~TransportPep() override;
  fid_pep* fid() noexcept { return &box_.fid; }

  int close() override;
  int bind(struct fid* bfid, uint64_t flags);
  int listen();
  int reject(fid_t handle, const void* param, size_t paramlen);
  int getname(void* addr, size_t* addrlen);
  int setname(const void* addr, size_t addrlen);
  int getopt(int level, int name, void* val, size_t* len);

  // Receiver
  void on_packet(transport::PacketBuf& pkt, uint64_t rx_ns) noexcept override;
  void progress(uint64_t now_ns) noexcept override;
  uint64_t cm_drops() const noexcept override { return listener_ ? listener_->drops() : 0; }
  // CmListenerSink
  void on_request(uint64_t request, const transport::PeerAddr& client, uint32_t conn_id,
                  const uint8_t* data, uint16_t len) noexcept override;

  // fi_accept on an endpoint built from one of this pep's requests: marks it answered.
  // Returns 0 or -FI_EINVAL (unknown or answered). Under the link's lock.
  int accepted(const ConnReq& req) noexcept;
  const fi_info* info() const noexcept { return info_; }
  // The port it listens on (null before fi_listen).
  const Link* link() const noexcept { return link_.get(); }

 private:
  void link_io_free(transport::PacketBuf& pkt) noexcept;

  core::FidBox<fid_pep> box_;
  core::Fabric* fabric_;
  fi_info* info_ = nullptr;
  NameKind kind_;
  NameFormat fmt_;
  config::Config cfg_;
  LinkOpener open_link_;
  core::Eq* eq_ = nullptr;
  std::shared_ptr<Link> link_;
  uint16_t ep_id_ = 0;
  std::unique_ptr<transport::CmListener> listener_;
  std::list<std::unique_ptr<ConnReq>> reqs_;
};

// CmConfig of the providers' config (transport.connect_timeout_ms, checksum).
transport::CmConfig cm_config(const config::Config& cfg) noexcept;

}  // namespace pollfab::providers::packet
