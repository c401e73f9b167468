#include "providers/common/attr.hpp"

#include <cstring>

#include "lib/config/loader.hpp"
#include "lib/config/schema.hpp"
#include "lib/core/info_alloc.hpp"
#include "lib/core/params.hpp"
#include "transport/ops.hpp"

namespace pollfab::providers {

fi_info* make_info(const InfoTemplate& t) {
  fi_info* i = core::allocinfo();
  if (!i) return nullptr;
  i->caps = kTransportCaps;
  i->mode = 0;
  i->addr_format = FI_FORMAT_UNSPEC;

  fi_tx_attr* tx = i->tx_attr;
  tx->caps = kTransportCaps & ~(FI_RECV | FI_DIRECTED_RECV | FI_SOURCE);
  tx->msg_order = FI_ORDER_SAS;
  tx->comp_order = FI_ORDER_NONE;
  tx->inject_size = t.inject_size;
  tx->size = t.tx_size;
  tx->iov_limit = transport::kMaxIov;
  tx->rma_iov_limit = 0;

  fi_rx_attr* rx = i->rx_attr;
  rx->caps = kTransportCaps & ~FI_SEND;
  rx->msg_order = FI_ORDER_SAS;
  rx->comp_order = FI_ORDER_NONE;
  rx->total_buffered_recv = t.total_buffered_recv;
  rx->size = t.rx_size;
  rx->iov_limit = transport::kMaxIov;

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
  d->threading = FI_THREAD_DOMAIN;
  d->control_progress = FI_PROGRESS_AUTO;  // control calls complete synchronously
  d->data_progress = FI_PROGRESS_MANUAL;
  d->resource_mgmt = FI_RM_ENABLED;
  d->av_type = FI_AV_UNSPEC;
  d->mr_mode = kTransportMrModes;
  d->mr_key_size = sizeof(uint64_t);
  d->cq_data_size = sizeof(uint64_t);
  d->cq_cnt = 1024;
  d->ep_cnt = 65535;
  d->tx_ctx_cnt = 65535;
  d->rx_ctx_cnt = 65535;
  d->max_ep_tx_ctx = 1;
  d->max_ep_rx_ctx = 1;
  d->max_ep_stx_ctx = 0;
  d->max_ep_srx_ctx = 0;
  d->cntr_cnt = 1024;
  d->mr_iov_limit = 4;
  d->caps = FI_REMOTE_COMM;
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

bool hint_names_valid(const fi_info* hints, NameKind kind) noexcept {
  if (!hints) return true;
  Name n;
  for (auto [addr, len] : {std::pair{hints->dest_addr, hints->dest_addrlen},
                           std::pair{hints->src_addr, hints->src_addrlen}}) {
    if (!addr) continue;
    if (hints->addr_format != FI_FORMAT_UNSPEC ||
        !Name::decode(static_cast<const uint8_t*>(addr), len, kind, n))
      return false;
  }
  return true;
}

bool copy_hint_names(const fi_info* hints, fi_info* out) noexcept {
  if (!hints) return true;
  auto copy = [](const void* src, void** dst, size_t* len) {
    if (!src) return true;
    *dst = malloc(kNameBytes);
    if (!*dst) return false;
    std::memcpy(*dst, src, kNameBytes);
    *len = kNameBytes;
    return true;
  };
  return copy(hints->dest_addr, &out->dest_addr, &out->dest_addrlen) &&
         copy(hints->src_addr, &out->src_addr, &out->src_addrlen);
}

void define_config_params(const char* prov) {
  const size_t prefix_len = strlen("FI_") + strlen(prov) + 1;  // "FI_<PROV>_"
  for (const config::KeyInfo& k : config::schema()) {
    if (!config::applies_to(prov, k)) continue;
    std::string param = config::env_name(prov, k).substr(prefix_len);
    for (char& c : param) c = static_cast<char>(tolower(c));
    fi_param_type type = k.type == config::Type::Bool  ? FI_PARAM_BOOL
                         : k.type == config::Type::Int ? FI_PARAM_SIZE_T
                                                       : FI_PARAM_STRING;
    std::string help = std::string(k.help) + (k.unit && *k.unit ? std::string(" (") + k.unit + ")" : "") +
                       " [config " + k.section + "." + k.key + ", default " + k.default_text + "]";
    core::param_define(prov, param.c_str(), type, help.c_str());
  }
}

}  // namespace pollfab::providers
