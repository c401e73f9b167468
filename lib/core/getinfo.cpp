#include "lib/core/getinfo.hpp"

#include <strings.h>

#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "lib/core/info_alloc.hpp"
#include "lib/core/provider.hpp"
#include "lib/util/log.hpp"

namespace pollfab::core {
namespace {

bool fail(std::string* why, const char* what) {
  if (why) *why = what;
  return false;
}

bool str_mismatch(const char* hint, const char* have) {
  return hint && *hint && (!have || strcmp(hint, have) != 0);
}

// Caps the result reports (ofi_get_caps): hinted primary caps, all secondary caps except the
// opt-in ones (kOptInCaps), which only when hinted, and the costly ones (kCostlyCaps), which
// only when hinted or when the hints name no caps. attr_hint_caps: the hints' tx_attr and
// rx_attr caps, where an opt-in or costly cap asked for counts too (the attrs' caps and the
// info's then agree; the endpoint acts on the info's). FI_SOURCE_ERR comes with FI_SOURCE
// (fi_getinfo(3): "must be paired with FI_SOURCE"): without the source every receive would be
// an error entry.
uint64_t result_caps(uint64_t prov_caps, uint64_t hint_caps, uint64_t attr_hint_caps) {
  uint64_t caps = hint_caps ? (hint_caps & kPrimaryCaps) |
                                  (prov_caps & kSecondaryCaps & ~kOptInCaps & ~kCostlyCaps) |
                                  (hint_caps & kSecondaryCaps & prov_caps)
                            : prov_caps & ~kOptInCaps;
  caps |= prov_caps & attr_hint_caps & (kOptInCaps | kCostlyCaps);
  if (caps & FI_SOURCE_ERR) caps |= prov_caps & FI_SOURCE;
  return caps;
}

bool match_tx(fi_tx_attr* c, const fi_tx_attr* h, uint64_t caps, std::string* why) {
  if (h->caps & ~c->caps) return fail(why, "tx_attr->caps");
  if (c->mode & ~h->mode && h->mode) return fail(why, "tx_attr->mode");
  if (h->msg_order & ~c->msg_order) return fail(why, "tx_attr->msg_order");
  if (h->comp_order & ~c->comp_order) return fail(why, "tx_attr->comp_order");
  if (h->inject_size > c->inject_size) return fail(why, "tx_attr->inject_size");
  if (h->size > c->size) return fail(why, "tx_attr->size");
  if (h->iov_limit > c->iov_limit) return fail(why, "tx_attr->iov_limit");
  if (h->rma_iov_limit > c->rma_iov_limit) return fail(why, "tx_attr->rma_iov_limit");
  const uint64_t kTxFlags = FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |
                            FI_DELIVERY_COMPLETE | FI_INJECT | FI_COMMIT_COMPLETE;
  if (h->op_flags & ~kTxFlags) return fail(why, "tx_attr->op_flags");
  c->op_flags = h->op_flags;
  if (h->msg_order) c->msg_order = h->msg_order;
  c->caps = (h->caps ? h->caps : c->caps & caps) & (kPrimaryTxCaps | kSecondaryTxCaps) & c->caps;
  if (!c->caps) c->caps = caps & (kPrimaryTxCaps | kSecondaryTxCaps);
  if (h->tclass) c->tclass = h->tclass;
  return true;
}

bool match_rx(fi_rx_attr* c, const fi_rx_attr* h, uint64_t caps, std::string* why) {
  if (h->caps & ~c->caps) return fail(why, "rx_attr->caps");
  if (c->mode & ~h->mode && h->mode) return fail(why, "rx_attr->mode");
  if (h->msg_order & ~c->msg_order) return fail(why, "rx_attr->msg_order");
  if (h->comp_order & ~c->comp_order) return fail(why, "rx_attr->comp_order");
  if (h->size > c->size) return fail(why, "rx_attr->size");
  if (h->iov_limit > c->iov_limit) return fail(why, "rx_attr->iov_limit");
  if (h->total_buffered_recv > c->total_buffered_recv) return fail(why, "rx_attr->total_buffered_recv");
  const uint64_t kRxFlags = FI_COMPLETION | FI_MULTI_RECV;
  if (h->op_flags & ~kRxFlags) return fail(why, "rx_attr->op_flags");
  c->op_flags = h->op_flags;
  if (h->msg_order) c->msg_order = h->msg_order;
  c->caps = (h->caps ? h->caps : c->caps & caps) & (kPrimaryRxCaps | kSecondaryRxCaps) & c->caps;
  if (!c->caps) c->caps = caps & (kPrimaryRxCaps | kSecondaryRxCaps);
  return true;
}

// srx: the candidate's domain offers shared receive contexts (max_ep_srx_ctx > 0).
bool match_ep(fi_ep_attr* c, const fi_ep_attr* h, bool srx, std::string* why) {
  if (h->type != FI_EP_UNSPEC && h->type != c->type) return fail(why, "ep_attr->type");
  if (h->protocol != FI_PROTO_UNSPEC && h->protocol != c->protocol)
    return fail(why, "ep_attr->protocol");
  if (h->protocol_version && h->protocol_version > c->protocol_version)
    return fail(why, "ep_attr->protocol_version");
  if (h->max_msg_size > c->max_msg_size) return fail(why, "ep_attr->max_msg_size");
  if (h->msg_prefix_size > c->msg_prefix_size) return fail(why, "ep_attr->msg_prefix_size");
  if (h->max_order_raw_size > c->max_order_raw_size) return fail(why, "ep_attr->max_order_raw_size");
  if (h->max_order_war_size > c->max_order_war_size) return fail(why, "ep_attr->max_order_war_size");
  if (h->max_order_waw_size > c->max_order_waw_size) return fail(why, "ep_attr->max_order_waw_size");
  // Any tag layout fits in 64 bits: a hinted mem_tag_format is accepted as hinted.
  if (h->mem_tag_format) c->mem_tag_format = h->mem_tag_format;
  if (h->tx_ctx_cnt > c->tx_ctx_cnt && h->tx_ctx_cnt != FI_SHARED_CONTEXT)
    return fail(why, "ep_attr->tx_ctx_cnt");
  if (h->rx_ctx_cnt > c->rx_ctx_cnt && h->rx_ctx_cnt != FI_SHARED_CONTEXT)
    return fail(why, "ep_attr->rx_ctx_cnt");
  if (h->tx_ctx_cnt == FI_SHARED_CONTEXT) return fail(why, "shared transmit contexts");
  if (h->rx_ctx_cnt == FI_SHARED_CONTEXT) {
    if (!srx) return fail(why, "shared receive contexts");
    c->rx_ctx_cnt = FI_SHARED_CONTEXT;
  }
  if (h->auth_key_size) return fail(why, "ep_attr->auth_key");
  return true;
}

bool match_domain(fi_domain_attr* c, const fi_domain_attr* h, uint32_t version, std::string* why) {
  if (str_mismatch(h->name, c->name)) return fail(why, "domain_attr->name");
  if (h->threading != FI_THREAD_UNSPEC) c->threading = h->threading;
  // An AUTO provider serves an application that progresses manually; not the reverse.
  if (h->control_progress == FI_PROGRESS_AUTO && c->control_progress != FI_PROGRESS_AUTO)
    return fail(why, "domain_attr->control_progress");
  if (h->data_progress == FI_PROGRESS_AUTO && c->data_progress != FI_PROGRESS_AUTO)
    return fail(why, "domain_attr->data_progress");
  if (h->resource_mgmt != FI_RM_UNSPEC) c->resource_mgmt = h->resource_mgmt;
  if (h->av_type != FI_AV_UNSPEC) c->av_type = h->av_type;
  // Memory registration modes (fi_domain(3) "MR Mode").
  if (FI_VERSION_GE(version, FI_VERSION(1, 5))) {
    int hm = h->mr_mode;
    if (hm == FI_MR_BASIC) hm = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    if (hm == FI_MR_SCALABLE) hm = 0;
    // c->mr_mode holds what the provider can use; nothing is required by our providers.
    c->mr_mode = c->mr_mode & hm;
  } else {
    if (h->mr_mode == FI_MR_BASIC) c->mr_mode = FI_MR_BASIC;
    else c->mr_mode = FI_MR_SCALABLE;
  }
  if (h->mr_key_size > c->mr_key_size) return fail(why, "domain_attr->mr_key_size");
  if (h->cq_data_size > c->cq_data_size) return fail(why, "domain_attr->cq_data_size");
  if (h->cq_cnt > c->cq_cnt) return fail(why, "domain_attr->cq_cnt");
  if (h->ep_cnt > c->ep_cnt) return fail(why, "domain_attr->ep_cnt");
  if (h->tx_ctx_cnt > c->tx_ctx_cnt) return fail(why, "domain_attr->tx_ctx_cnt");
  if (h->rx_ctx_cnt > c->rx_ctx_cnt) return fail(why, "domain_attr->rx_ctx_cnt");
  if (h->max_ep_tx_ctx > c->max_ep_tx_ctx) return fail(why, "domain_attr->max_ep_tx_ctx");
  if (h->max_ep_rx_ctx > c->max_ep_rx_ctx) return fail(why, "domain_attr->max_ep_rx_ctx");
  if (h->max_ep_stx_ctx > c->max_ep_stx_ctx) return fail(why, "domain_attr->max_ep_stx_ctx");
  if (h->max_ep_srx_ctx > c->max_ep_srx_ctx) return fail(why, "domain_attr->max_ep_srx_ctx");
  if (h->cntr_cnt > c->cntr_cnt) return fail(why, "domain_attr->cntr_cnt");
  if (h->mr_iov_limit > c->mr_iov_limit) return fail(why, "domain_attr->mr_iov_limit");
  if (h->max_err_data > c->max_err_data) return fail(why, "domain_attr->max_err_data");
  if (h->mr_cnt > c->mr_cnt) return fail(why, "domain_attr->mr_cnt");
  if (h->caps & ~c->caps) return fail(why, "domain_attr->caps");
  if (c->mode & ~h->mode) return fail(why, "domain_attr->mode");
  if (h->auth_key_size) return fail(why, "domain_attr->auth_key");
  if (h->caps) c->caps = (h->caps & c->caps) | (c->caps & kSecondaryCaps);
  c->mode &= h->mode;
  return true;
}

}  // namespace

bool match_info(fi_info* c, const fi_info* h, uint32_t version, std::string* why) {
  if (c->fabric_attr) c->fabric_attr->api_version = version;
  if (!h) return true;
  if (h->caps & ~c->caps) return fail(why, "caps");
  // A provider that needs a mode bit the application does not support is skipped.
  if (c->mode & ~h->mode) return fail(why, "mode");
  if (h->addr_format != FI_FORMAT_UNSPEC && h->addr_format != c->addr_format)
    return fail(why, "addr_format");
  const uint64_t attr_hints =
      (h->tx_attr ? h->tx_attr->caps : 0) | (h->rx_attr ? h->rx_attr->caps : 0);
  uint64_t caps = result_caps(c->caps, h->caps, attr_hints);
  const bool srx = c->domain_attr && c->domain_attr->max_ep_srx_ctx;
  if (h->ep_attr && c->ep_attr && !match_ep(c->ep_attr, h->ep_attr, srx, why)) return false;
  if (h->domain_attr && c->domain_attr && !match_domain(c->domain_attr, h->domain_attr, version, why))
    return false;
  // No hints for the domain (api >= 1.5): the provider's supported mr_mode is reported as is.
  if (h->fabric_attr && c->fabric_attr) {
    if (str_mismatch(h->fabric_attr->name, c->fabric_attr->name)) return fail(why, "fabric_attr->name");
    if (h->fabric_attr->prov_name && *h->fabric_attr->prov_name &&
        !provider_allowed(h->fabric_attr->prov_name, c->fabric_attr->prov_name))
      return fail(why, "fabric_attr->prov_name");
    if (h->fabric_attr->prov_version && h->fabric_attr->prov_version > c->fabric_attr->prov_version)
      return fail(why, "fabric_attr->prov_version");
  }
  if (h->tx_attr && c->tx_attr && !match_tx(c->tx_attr, h->tx_attr, caps, why)) return false;
  if (h->rx_attr && c->rx_attr && !match_rx(c->rx_attr, h->rx_attr, caps, why)) return false;
  // Without attr hints the attrs keep the secondary caps but those the info leaves out.
  constexpr uint64_t kAsked = kPrimaryCaps | kOptInCaps | kCostlyCaps;
  if (!h->tx_attr && c->tx_attr) c->tx_attr->caps &= caps | ~kAsked;
  if (!h->rx_attr && c->rx_attr) c->rx_attr->caps &= caps | ~kAsked;
  c->caps = caps;
  c->mode &= h->mode;
  if (c->tx_attr) c->tx_attr->mode &= h->mode | (h->tx_attr ? h->tx_attr->mode : 0);
  if (c->rx_attr) c->rx_attr->mode &= h->mode | (h->rx_attr ? h->rx_attr->mode : 0);
  return true;
}

bool provider_allowed(const char* filter, const char* name) noexcept {
  if (!filter || !*filter) return true;
  std::string_view f(filter);
  bool exclude = false;
  if (f.front() == '^') {
    exclude = true;
    f.remove_prefix(1);
  }
  bool listed = false;
  while (!f.empty()) {
    size_t comma = f.find(',');
    std::string_view item = f.substr(0, comma);
    // "a;b" names (layered) match either part, like libfabric's core-name post-filter.
    std::string_view n(name);
    if (item.size() == n.size() && strncasecmp(item.data(), n.data(), n.size()) == 0) listed = true;
    if (comma == std::string_view::npos) break;
    f.remove_prefix(comma + 1);
  }
  return exclude ? !listed : listed;
}

int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
            const fi_info* hints, fi_info** info) noexcept {
  if (!info) return -FI_EINVAL;
  *info = nullptr;
  if (FI_MAJOR(version) != 1 || FI_VERSION_LT(kApiVersion, version)) return -FI_ENOSYS;
  const char* env_filter = getenv("FI_PROVIDER");
  const char* hint_prov = hints && hints->fabric_attr ? hints->fabric_attr->prov_name : nullptr;
  fi_info* head = nullptr;
  fi_info** tail = &head;
  int first_err = 0;

  for (Provider* p : providers()) {
    if (!provider_allowed(env_filter, p->name())) continue;
    if (hint_prov && *hint_prov && !provider_allowed(hint_prov, p->name())) continue;
    if (flags & FI_PROV_ATTR_ONLY) {
      fi_info* i = allocinfo();
      if (!i) { freeinfo(head); return -FI_ENOMEM; }
      i->fabric_attr->prov_name = strdup(p->name());
      i->fabric_attr->prov_version = p->version();
      i->fabric_attr->api_version = version;
      *tail = i;
      tail = &i->next;
      continue;
    }
    std::vector<fi_info*> cands;
    int r;
    try {
      r = p->candidates(version, node, service, flags, hints, cands);
    } catch (...) {
      r = -FI_ENOMEM;
    }
    if (r && r != -FI_ENODATA && !first_err) first_err = r;
    for (fi_info* c : cands) {
      std::string why;
      bool ok;
      try {
        ok = match_info(c, hints, version, &why);
      } catch (...) {
        ok = false;
      }
      if (!ok) {
        PF_LOG("core", Info, Core, "{}: skipped a candidate: {} does not match", p->name(), why);
        freeinfo(c);
        continue;
      }
      *tail = c;
      tail = &c->next;
    }
  }
  if (!head) return first_err ? first_err : -FI_ENODATA;
  *info = head;
  return 0;
}

}  // namespace pollfab::core
