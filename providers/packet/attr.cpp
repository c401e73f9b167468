#include "providers/packet/attr.hpp"

#include <cstdlib>
#include <new>
#include <cstring>

#include "lib/config/loader.hpp"
#include "lib/core/info_alloc.hpp"
#include "lib/util/log.hpp"
#include "transport/ops.hpp"

namespace pollfab::providers::packet {

fi_info* make_info(core::InfoTemplate t) {
  t.caps = kTransportCaps | (t.type != FI_EP_DGRAM ? kTransportRdmCaps : 0);
  t.domain_caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
  t.mr_mode = kTransportMrModes;
  t.iov_limit = transport::kMaxIov;
  // Connected endpoints may share a receive context (providers/packet/srx.hpp); the limit is
  // the endpoint ids of a port.
  if (t.type == FI_EP_MSG) t.max_ep_srx_ctx = kMaxSrxEndpoints;
  return core::make_info(t);
}

std::optional<config::Config> load_config(const char* prov, util::LogSubsys sub) {
  config::LoadResult lr = config::load(prov);
  if (lr.config) return std::move(*lr.config);
  if (util::log_enabled(prov, util::LogLevel::Warn, sub))
    util::log_fmt(prov, util::LogLevel::Warn, sub, __func__, __LINE__, "configuration refused: {}",
                  lr.error);
  return std::nullopt;
}

int add_candidate(const core::InfoTemplate& t, const InfoNames& names, std::vector<fi_info*>& out) {
  fi_info* i = packet::make_info(t);
  if (!i) return -FI_ENOMEM;
  if (!set_info_names(i, names)) {
    core::freeinfo(i);
    return -FI_ENOMEM;
  }
  try {
    out.push_back(i);
  } catch (const std::bad_alloc&) {
    core::freeinfo(i);
    return -FI_ENOMEM;
  }
  return 0;
}

int add_auto_progress_candidates(std::vector<fi_info*>& out, size_t first) {
  const size_t end = out.size();
  for (size_t i = first; i < end; ++i) {
    fi_info* a = core::dupinfo(out[i]);
    if (!a) return -FI_ENOMEM;
    a->domain_attr->data_progress = FI_PROGRESS_AUTO;
    out.push_back(a);
  }
  return 0;
}

namespace {

int names(NameKind kind, const Name& local, const char* node, const char* service,
          uint64_t flags, const fi_info* hints, Name& src, Name& dest, bool& has_dest) {
  const uint32_t app = hints ? hints->addr_format : uint32_t{FI_FORMAT_UNSPEC};
  if (!NameFormat::supported(app)) return -FI_ENODATA;
  const NameFormat fmt(kind, app);
  src = local;
  src.ep_id = 0;
  has_dest = false;
  auto is_local = [&](uint32_t ip) { return ip == local.ipv4 || local.ipv4 == 0; };
  if (hints && hints->src_addr) {
    Name h;
    if (!fmt.decode_app(hints->src_addr, hints->src_addrlen, h) || !is_local(h.ipv4))
      return -FI_ENODATA;
    src.ipv4 = h.ipv4;
    src.udp_port = h.udp_port;
    src.ep_id = app == FI_SOCKADDR_IN ? 0 : h.ep_id;
  }
  if (hints && hints->dest_addr) {
    if (!fmt.decode_app(hints->dest_addr, hints->dest_addrlen, dest)) return -FI_ENODATA;
    has_dest = true;
  }
  uint16_t port = 0;
  if (service && !parse_service(service, port)) return -FI_ENODATA;
  if (node && (flags & FI_SOURCE)) {
    uint32_t ip = 0;
    if (!resolve_node(node, ip) || !is_local(ip)) return -FI_ENODATA;
    src.ipv4 = ip;
    if (port) src.udp_port = port;
  } else if (node) {
    Name d;
    if (!service && std::strncmp(node, "fi_", 3) == 0) {
      if (!Name::parse(node, kind, d)) return -FI_ENODATA;
    } else {
      d.kind = kind;
      if (!resolve_node(node, d.ipv4)) return -FI_ENODATA;
      d.udp_port = port ? port : local.udp_port;
      d.ep_id = kServiceEpId;
      if (!d.udp_port) return -FI_ENODATA;  // no service and no configured port to default to
    }
    dest = d;
    has_dest = true;
  } else if (port) {
    src.udp_port = port;
  }
  return 0;
}

}  // namespace

int info_names(const char* prov, const Name& local, const char* node, const char* service,
               uint64_t flags, const fi_info* hints, InfoNames& out) {
  out.app = hints ? hints->addr_format : uint32_t{FI_FORMAT_UNSPEC};
  int r = names(local.kind, local, node, service, flags, hints, out.src, out.dest, out.has_dest);
  if (r)
    PF_LOG(prov, Info, Core, "no address for node '{}' service '{}' ({})", node ? node : "",
           service ? service : "", r);
  return r;
}

bool set_info_names(fi_info* info, uint32_t app, const Name& src, const Name* dest) noexcept {
  const NameFormat fmt(src.kind, app);
  auto store = [&](const Name& n, void** out, size_t* outlen) {
    uint8_t bin[kNameBytes];
    n.encode(bin);
    size_t len = 0;
    fmt.export_to(bin, nullptr, &len);
    void* p = calloc(1, len);
    if (!p) return false;
    fmt.export_to(bin, p, &len);
    free(*out);
    *out = p;
    *outlen = len;
    return true;
  };
  info->addr_format = app;
  return store(src, &info->src_addr, &info->src_addrlen) &&
         (!dest || store(*dest, &info->dest_addr, &info->dest_addrlen));
}

bool info_src_name(const fi_info* info, NameKind kind, Name& out) noexcept {
  if (!info || !info->src_addr || !NameFormat::supported(info->addr_format)) return false;
  return NameFormat(kind, info->addr_format).decode_app(info->src_addr, info->src_addrlen, out);
}

}  // namespace pollfab::providers::packet
