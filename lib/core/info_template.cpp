#include "lib/core/info_template.hpp"

#include <cstdlib>
#include <cstring>

#include "lib/core/info_alloc.hpp"

namespace pollfab::core {

fi_info* make_info(const InfoTemplate& t) {
  fi_info* i = core::allocinfo();
  if (!i) return nullptr;
  i->caps = t.caps;
  i->mode = 0;
  i->addr_format = FI_FORMAT_UNSPEC;

  fi_tx_attr* tx = i->tx_attr;
  tx->caps = t.caps & ~(FI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV | FI_SOURCE_ERR |
                        FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RMA_EVENT);
  tx->msg_order = t.msg_order;
  tx->comp_order = FI_ORDER_NONE;
  tx->inject_size = t.inject_size;
  tx->size = t.tx_size;
  tx->iov_limit = t.iov_limit;
  tx->rma_iov_limit = (t.caps & (FI_RMA | FI_ATOMIC)) ? 1 : 0;  // one remote segment per call

  fi_rx_attr* rx = i->rx_attr;
  rx->caps = t.caps & ~(FI_SEND | FI_READ | FI_WRITE);
  rx->msg_order = t.msg_order;
  rx->comp_order = FI_ORDER_NONE;
  rx->total_buffered_recv = t.total_buffered_recv;
  rx->size = t.rx_size;
  rx->iov_limit = t.iov_limit;

  fi_ep_attr* ep = i->ep_attr;
  ep->type = t.type;
  ep->protocol = FI_PROTO_UNSPEC;
  ep->protocol_version = 1;
  ep->max_msg_size = t.max_msg_size;
  ep->msg_prefix_size = 0;
  ep->mem_tag_format = 0xAAAAAAAAAAAAAAAAull;  // FI_TAG_GENERIC (fi_tagged.h)
  ep->tx_ctx_cnt = 1;
  ep->rx_ctx_cnt = 1;

  fi_domain_attr* d = i->domain_attr;
  d->name = strdup(t.domain_name.c_str());
  d->threading = t.threading;
  d->control_progress = FI_PROGRESS_AUTO;  // control calls complete synchronously
  d->data_progress = t.data_progress;
  d->resource_mgmt = FI_RM_ENABLED;
  d->av_type = FI_AV_UNSPEC;
  d->mr_mode = t.mr_mode;
  d->mr_key_size = sizeof(uint64_t);
  d->cq_data_size = sizeof(uint64_t);
  d->cq_cnt = 1024;
  d->ep_cnt = 65535;
  d->tx_ctx_cnt = 65535;
  d->rx_ctx_cnt = 65535;
  d->max_ep_tx_ctx = 1;
  d->max_ep_rx_ctx = 1;
  d->max_ep_stx_ctx = 0;
  d->max_ep_srx_ctx = t.max_ep_srx_ctx;
  d->cntr_cnt = 1024;
  d->mr_iov_limit = 4;
  d->caps = t.domain_caps;
  d->mode = 0;
  d->max_err_data = 0;
  d->mr_cnt = 65535;

  fi_fabric_attr* f = i->fabric_attr;
  f->name = strdup(t.fabric_name.c_str());
  f->prov_name = strdup(t.prov_name);
  f->prov_version = t.prov_version;

  if (!d->name || !f->name || !f->prov_name) {
    core::freeinfo(i);
    return nullptr;
  }
  return i;
}

}  // namespace pollfab::core
