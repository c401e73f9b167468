// `pollfab pingpong`'s fabric (pingpong_fabric.cpp): the objects one side of the test opens
// and the calls its runs make. Errors are printed (stderr, naming the call) and returned as a
// positive number for the command's exit status: the errno of a failed fi_* call, else 1
// (0: success).
#pragma once
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cstddef>
#include <vector>

#include "apps/common/oob.hpp"
#include "apps/pingpong.hpp"

namespace pollfab::apps::pingpong {

// One side's libfabric objects, closed in order by the destructor. txbuf/rxbuf: the message
// buffers, max(64, min(max_msg_size, args.max_size)) bytes each; mr/desc: txbuf's
// registration when the provider asks for FI_MR_LOCAL (desc serves both buffers);
// txctx/rxctx: the one send and the one receive context every post uses; inject: the
// endpoint's inject_size; wait/txfd/rxfd: the CQs' wait object and its FI_GETWAIT
// descriptors (wait fd).
struct Fabric {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_cq* txcq = nullptr;
  fid_cq* rxcq = nullptr;
  fid_av* av = nullptr;
  fid_eq* eq = nullptr;      // -e msg
  fid_pep* pep = nullptr;    // -e msg, server
  fi_info* conn_info = nullptr;  // -e msg, server: the FI_CONNREQ's info
  fid_ep* ep = nullptr;
  fid_mr* mr = nullptr;
  void* desc = nullptr;
  fi_addr_t peer = FI_ADDR_UNSPEC;
  std::vector<char> txbuf, rxbuf;
  fi_context2 txctx{}, rxctx{};
  size_t inject = 0;
  int timeout_ms = 10000;
  fi_wait_obj wait = FI_WAIT_NONE;
  int txfd = -1, rxfd = -1;  // FI_GETWAIT descriptors (wait fd)

  ~Fabric() {
    if (mr) fi_close(&mr->fid);
    if (ep) fi_close(&ep->fid);
    if (pep) fi_close(&pep->fid);
    if (rxcq) fi_close(&rxcq->fid);
    if (txcq) fi_close(&txcq->fid);
    if (av) fi_close(&av->fid);
    if (eq) fi_close(&eq->fid);
    if (domain) fi_close(&domain->fid);
    if (conn_info) fi_freeinfo(conn_info);
    if (fabric) fi_close(&fabric->fid);
    if (info) fi_freeinfo(info);
  }
};

// Prints "pollfab pingpong: WHAT: fi_strerror (r)" and returns -r (r < 0), else 1.
int fail(const char* what, int r);
// Waits for n completions on cq (polling, fi_cq_sread or poll(2) on FI_GETWAIT, as f.wait
// says), at most f.timeout_ms for all n (FI_ETIMEDOUT); an error entry is printed and its
// error returned.
int wait_cq(Fabric& f, fid_cq* cq, size_t n);
// Posts the one receive (rxbuf, len bytes), driving progress while the endpoint answers
// -FI_EAGAIN.
int post_recv(Fabric& f, size_t len);
// Sends len bytes of txbuf to the peer: fi_inject up to f.inject, else fi_send, then (wait)
// waits for its send completion.
int post_send(Fabric& f, size_t len, bool wait);
// Opens everything for the options a (client or server; rdm, dgram or msg) and names the
// peer: the fi_getname exchange over oob, the client's introduction message in service mode
// (received by the server), or the connection (msg). Leaves no receive posted.
int setup(Fabric& f, const PingpongArgs& a, Oob& oob);

}  // namespace pollfab::apps::pingpong
