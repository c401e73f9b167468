#include "providers/packet/stats.hpp"

#include <fmt/format.h>

#include <iterator>

#include "lib/core/fabric.hpp"
#include "lib/core/provider.hpp"
#include "lib/core/stats_server.hpp"
#include "providers/packet/domain.hpp"

namespace pollfab::providers::packet::stats {

using transport::EngineStats;
using transport::PeerStats;

namespace {

struct EngineField {
  const char* name;
  uint64_t EngineStats::*member;
};

constexpr EngineField kEngineFields[] = {
    {"tx_pkts", &EngineStats::tx_pkts},
    {"tx_bytes", &EngineStats::tx_bytes},
    {"rx_pkts", &EngineStats::rx_pkts},
    {"rx_bytes", &EngineStats::rx_bytes},
    {"retx_pkts", &EngineStats::retx_pkts},
    {"rto_events", &EngineStats::rto_events},
    {"fast_retx_events", &EngineStats::fast_retx_events},
    {"acks_tx", &EngineStats::acks_tx},
    {"acks_rx", &EngineStats::acks_rx},
    {"dup_pkts", &EngineStats::dup_pkts},
    {"ooo_pkts", &EngineStats::ooo_pkts},
    {"drop_window", &EngineStats::drop_window},
    {"drop_unexpected_full", &EngineStats::drop_unexpected_full},
    {"drop_no_recv", &EngineStats::drop_no_recv},
    {"drop_stale_epoch", &EngineStats::drop_stale_epoch},
    {"drop_unknown_peer", &EngineStats::drop_unknown_peer},
    {"drop_protocol", &EngineStats::drop_protocol},
    {"peer_resets", &EngineStats::peer_resets},
    {"peers_dead", &EngineStats::peers_dead},
    {"probes_tx", &EngineStats::probes_tx},
    {"drop_dead_peer", &EngineStats::drop_dead_peer},
    {"srtt_ns", &EngineStats::srtt_ns},
    {"drop_checksum", &EngineStats::drop_checksum},
    {"credit_stalls", &EngineStats::credit_stalls},
    {"credit_probes", &EngineStats::credit_probes},
    {"cc_decreases", &EngineStats::cc_decreases},
    {"rack_retx_events", &EngineStats::rack_retx_events},
    {"zc_tx_pkts", &EngineStats::zc_tx_pkts},
    {"ooo_placed", &EngineStats::ooo_placed},
    {"bundled_msgs", &EngineStats::bundled_msgs},
    {"rma_ops", &EngineStats::rma_ops},
    {"atomic_ops", &EngineStats::atomic_ops},
    {"rma_served", &EngineStats::rma_served},
    {"atomic_served", &EngineStats::atomic_served},
    {"rma_rejected", &EngineStats::rma_rejected},
    {"acks_deferred", &EngineStats::acks_deferred},
    {"rx_continued", &EngineStats::rx_continued},
};
// A counter added to EngineStats must be added above too (it would be missing from the socket
// and the close-time log otherwise).
static_assert(sizeof(EngineStats) == std::size(kEngineFields) * sizeof(uint64_t),
              "EngineStats changed: update kEngineFields in providers/packet/stats.cpp");
static_assert(std::size(kEngineFields) <= kMaxCounters);

}  // namespace

size_t engine_counters(const EngineStats& s, Counter* out) noexcept {
  size_t n = 0;
  for (const EngineField& f : kEngineFields) out[n++] = {f.name, s.*f.member};
  return n;
}

size_t peer_counters(const PeerStats& s, Counter* out) noexcept {
  size_t n = 0;
  out[n++] = {"remote_epoch", s.remote_epoch};
  out[n++] = {"tx_pkts", s.tx_pkts};
  out[n++] = {"tx_bytes", s.tx_bytes};
  out[n++] = {"rx_pkts", s.rx_pkts};
  out[n++] = {"rx_bytes", s.rx_bytes};
  out[n++] = {"retx_pkts", s.retx_pkts};
  out[n++] = {"dup_pkts", s.dup_pkts};
  out[n++] = {"rto_events", s.rto_events};
  out[n++] = {"srtt_ns", s.srtt_ns};
  out[n++] = {"rttvar_ns", s.rttvar_ns};
  out[n++] = {"rto_ns", s.rto_ns};
  out[n++] = {"min_rtt_ns", s.min_rtt_ns};
  out[n++] = {"cwnd_pkts", s.cwnd_pkts};
  out[n++] = {"inflight_pkts", s.inflight_pkts};
  out[n++] = {"credits_pkts", s.credits_pkts};
  out[n++] = {"blocked_window_ns", s.blocked_window_ns};
  out[n++] = {"blocked_cwnd_ns", s.blocked_cwnd_ns};
  out[n++] = {"blocked_credits_ns", s.blocked_credits_ns};
  out[n++] = {"blocked_ring_ns", s.blocked_ring_ns};
  out[n++] = {"blocked_tx_ns", s.blocked_tx_ns};
  out[n++] = {"holes", s.holes};
  out[n++] = {"hole_ns", s.hole_ns};
  return n;
}

std::string address_str(const Name& n) { return n.str(); }

std::string address_str(NameKind kind, const transport::PeerAddr& a) {
  return address_str(Name::from_host(kind, a.host, a.ep_id));
}

void render_json(const DomainSnapshot& d, std::string& o) {
  using core::stats::json_counters;
  using core::stats::json_string;
  Counter c[kMaxCounters];
  o += "{\"provider\":";
  json_string(o, d.provider);
  o += ",\"domain\":";
  json_string(o, d.domain);
  o += ",\"io\":{";
  json_counters(o, d.io, d.io_count);
  o += fmt::format(
      "}},\"dropped_unknown_ep\":{},\"cm_dropped\":{},\"cm_resets_tx\":{},\"assist_runs\":{},"
      "\"endpoints\":[",
      d.dropped_unknown_ep, d.cm_dropped, d.cm_resets_tx, d.assist_runs);
  for (size_t ei = 0; ei < d.endpoints.size(); ++ei) {
    const EndpointSnapshot& e = d.endpoints[ei];
    o += fmt::format("{}{{\"id\":{},\"type\":\"{}\",\"name\":", ei ? "," : "", e.id,
                     e.reliable ? "rdm" : "dgram");
    json_string(o, address_str(e.name));
    o += ",\"stats\":{";
    json_counters(o, c, engine_counters(e.engine, c));
    o += "},\"peers\":[";
    for (size_t pi = 0; pi < e.peers.size(); ++pi) {
      const PeerStats& p = e.peers[pi];
      o += pi ? ",{\"addr\":" : "{\"addr\":";
      json_string(o, address_str(d.kind, p.addr));
      if (p.user == ~0ull)
        o += ",\"fi_addr\":null";
      else
        o += fmt::format(",\"fi_addr\":{}", p.user);
      o += p.dead ? ",\"dead\":true," : ",\"dead\":false,";
      json_counters(o, c, peer_counters(p, c));
      o += '}';
    }
    o += "]}";
  }
  o += "]}";
}

void endpoint_enabled(TransportDomain* d) noexcept {
  if (!d->config().stats.socket) return;
  core::stats::attach(d, d->fabric()->provider()->name());
}

void domain_closing(TransportDomain* d) noexcept { core::stats::detach(d); }

std::vector<DomainSnapshot> snapshot_all() {
  std::vector<DomainSnapshot> out;
  core::stats::for_each_source([&](core::stats::Source* s) {
    if (auto* d = dynamic_cast<TransportDomain*>(s)) {
      out.emplace_back();
      d->snapshot(out.back());
    }
  });
  return out;
}

}  // namespace pollfab::providers::packet::stats
