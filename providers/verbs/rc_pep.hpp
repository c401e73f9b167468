// RcPep: the passive endpoint of verbs FI_EP_MSG over RC (fi_endpoint(3) fi_passive_ep,
// fi_cm(3) fi_listen / fi_reject / fi_getname, fi_eq(3) FI_CONNREQ). An rdma_cm id in the
// TCP port space bound at open to the info's source address (ipv4:service, FI_SOCKADDR_IN),
// listening after fi_listen. Each connection request becomes one FI_CONNREQ on the bound EQ,
// from the fabric's CM thread: info is the pep's with dest_addr = the client and handle = an
// RcConnReq holding the request's id, which fi_endpoint on that info takes (then fi_accept),
// or fi_reject answers. Requests nobody took are rejected when the pep closes. A handle is
// consumed by fi_endpoint or fi_reject (fi_cm(3)); the pep keeps the last kAnsweredKept answered
// handles, so that using one again is refused (-FI_EINVAL) rather than undefined, and frees
// older ones (memory stays bounded on a long-running server).
// Errors: fi_listen without an EQ -FI_ENOEQ, twice -FI_EOPBADSTATE; fi_reject of a handle that
// is not this pep's untaken request -FI_EINVAL, CM data above kRcMaxCmData -FI_EINVAL;
// fi_setname once listening -FI_EOPBADSTATE; open: -FI_EADDRINUSE (service taken),
// -FI_EADDRNOTAVAIL (not an RDMA device's address), -FI_EIO (rdma_cm).
// Thread-safety: control path; requests are kept under a mutex (the CM thread adds them).
#pragma once
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>

#include <atomic>
#include <list>
#include <memory>
#include <mutex>

#include "lib/core/eq.hpp"
#include "lib/core/fabric.hpp"
#include "lib/core/fid.hpp"
#include "providers/verbs/cm_thread.hpp"

namespace pollfab::providers::verbs {

class RcPep;

// The handle of one RC connection request (info->handle of its FI_CONNREQ).
class RcConnReq final : public core::Object {
 public:
  // initiator_depth / responder_resources: the request's RDMA READ and atomic limits.
  RcConnReq(RcPep* pep, rdma_cm_id* id, uint8_t initiator_depth, uint8_t responder_resources);
  struct fid* handle() noexcept { return &box_.fid; }
  int close() override { return 0; }  // owned by the pep, freed when the pep closes
  RcPep* pep() const noexcept { return pep_; }
  rdma_cm_id* id() const noexcept { return id_.load(); }
  // The request's id for the endpoint that answers it (once; nullptr after).
  rdma_cm_id* take() noexcept { return id_.exchange(nullptr); }
  uint8_t initiator_depth() const noexcept { return initiator_depth_; }
  uint8_t responder_resources() const noexcept { return responder_resources_; }

 private:
  core::FidBox<struct fid> box_;
  RcPep* pep_;
  std::atomic<rdma_cm_id*> id_;
  uint8_t initiator_depth_, responder_resources_;
};

class RcPep final : public core::Object, public CmHandler {
 public:
  static constexpr size_t kAnsweredKept = 64;
  static int open(core::Fabric* fabric, fi_info* info, void* context, std::shared_ptr<CmThread> cm,
                  fid_pep** pep);
  fid_pep* fid() noexcept { return &box_.fid; }

  int close() override;
  int bind(struct fid* bfid, uint64_t flags);
  int listen();
  int reject(fid_t handle, const void* param, size_t paramlen);
  int getname(void* addr, size_t* addrlen);
  int setname(const void* addr, size_t addrlen);
  int getopt(int level, int name, void* val, size_t* len);
  // An endpoint took req's id (fi_endpoint on its info).
  void taken(RcConnReq* req) noexcept;

  void on_cm_event(rdma_cm_event& ev) noexcept override;

 private:
  RcPep(core::Fabric* fabric, const fi_info* info, void* context, std::shared_ptr<CmThread> cm);
  ~RcPep() override;
  // A new id bound to addr (sockaddr_in); 0 or -FI_E*.
  int bind_id(const void* addr);

  core::FidBox<fid_pep> box_;
  core::Fabric* fabric_;
  std::shared_ptr<CmThread> cm_;
  fi_info* info_ = nullptr;
  rdma_cm_id* id_ = nullptr;
  core::Eq* eq_ = nullptr;
  bool listening_ = false;
  std::mutex mu_;
  std::list<std::unique_ptr<RcConnReq>> reqs_;  // oldest first
  // Frees answered requests beyond kAnsweredKept (under mu_).
  void trim_answered() noexcept;
};

}  // namespace pollfab::providers::verbs
