// InfoTemplate: what a provider says about one fi_info candidate (one domain, one endpoint
// type), and make_info(), which builds the malloc'd fi_info from it with the attribute
// defaults every pollfab provider shares (fi_getinfo(3), fi_domain(3), fi_endpoint(3)). The
// result goes through core's hint matching (getinfo.hpp) before the application sees it.
// Sizes in bytes, queue sizes in entries. Thread-safety: pure (allocates).
#pragma once
#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace pollfab::core {

struct InfoTemplate {
  const char* prov_name = "";
  std::string fabric_name;
  std::string domain_name;
  fi_ep_type type = FI_EP_RDM;
  uint64_t caps = 0;              // endpoint caps; tx/rx get the send/receive side of them
  uint64_t domain_caps = FI_REMOTE_COMM;
  int mr_mode = 0;                // modes the provider works with (hint-matched)
  size_t max_msg_size = 0;        // bytes
  size_t inject_size = 0;         // bytes
  size_t tx_size = 1024;          // sends in flight
  size_t rx_size = 1024;          // posted receives
  size_t iov_limit = 4;           // entries per data call
  size_t total_buffered_recv = 0; // bytes of unexpected data buffered
  size_t max_ep_srx_ctx = 0;      // endpoints one shared receive context serves (0: none)
  uint64_t msg_order = FI_ORDER_SAS;
  fi_threading threading = FI_THREAD_SAFE;  // fi_domain(3): UNSPEC hints get the most parallel level
  fi_progress data_progress = FI_PROGRESS_MANUAL;
  uint32_t prov_version = 0;
};

// A candidate (malloc'd; free with core::freeinfo), nullptr on allocation failure.
fi_info* make_info(const InfoTemplate& t);

}  // namespace pollfab::core
