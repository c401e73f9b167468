// Observability of the transport providers (dpdk, udp): per-domain, per-endpoint and per-peer
// counters, served by the process's stats socket (lib/core/stats_server.hpp: socket, thread,
// document envelope) and logged at close.
//
// Snapshots: TransportDomain::snapshot() copies, under the domain lock and one endpoint at a
// time, the I/O layers' counters, each endpoint's EngineStats and each peer's PeerStats. The data
// path keeps its plain (non-atomic) counters: only the reader pays.
//
// A domain is a stats source (core::stats::Source) while it has an enabled endpoint and its
// config has stats.socket (default true; FI_<PROV>_STATS_SOCKET); its JSON object:
//   {"provider":"udp", "domain":"udp-127.0.0.1", "io":{<I/O counters>},
//    "dropped_unknown_ep":N, "cm_dropped":N, "cm_resets_tx":N, "assist_runs":N,
//    "endpoints":[{"id":1, "type":"rdm"|"dgram", "name":"fi_udp://...",
//                  "stats":{<EngineStats, field names>},
//                  "peers":[{"addr":"fi_udp://...", "fi_addr":N|null, "dead":false,
//                            <PeerStats counters, field names>}]}]}
// Endpoints are reached only through the domain's endpoint table, under the domain lock (the
// same rule as progress()).
//
// Thread-safety: every function here is MT-safe and noexcept unless stated.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/core/stats_server.hpp"
#include "lib/util/counter.hpp"
#include "providers/packet/name.hpp"
#include "transport/engine.hpp"

namespace pollfab::providers::packet {
class TransportDomain;
}

namespace pollfab::providers::packet::stats {

using Counter = util::Counter;

constexpr size_t kMaxIoCounters = 32;
constexpr size_t kMaxCounters = 48;  // engine_counters / peer_counters output bound

struct EndpointSnapshot {
  uint16_t id = 0;
  bool reliable = true;
  Name name;
  transport::EngineStats engine;
  std::vector<transport::PeerStats> peers;
};

struct DomainSnapshot {
  std::string provider;
  std::string domain;
  NameKind kind = NameKind::Udp;
  Counter io[kMaxIoCounters] = {};
  size_t io_count = 0;
  uint64_t dropped_unknown_ep = 0;
  uint64_t cm_dropped = 0;    // connection packets dropped by the port's endpoints/listeners
  uint64_t cm_resets_tx = 0;  // RESETs sent for unknown endpoint ids
  uint64_t assist_runs = 0;
  std::vector<EndpointSnapshot> endpoints;
};

// EngineStats / PeerStats as (name, value) pairs in declaration order; the names are the JSON
// keys and the close-time log's keys. Return the number written (<= kMaxCounters).
// peer_counters leaves out addr, user (fi_addr) and dead, which are printed on their own.
size_t engine_counters(const transport::EngineStats& s, Counter* out) noexcept;
size_t peer_counters(const transport::PeerStats& s, Counter* out) noexcept;
using core::stats::format_counters;
// Readable peer/endpoint address: fi_udp://127.0.0.1:40000/1 (udp, no MAC), or the full
// fi_dpdk://aa:bb:cc:dd:ee:ff/198.19.0.1:47600/1 name.
std::string address_str(NameKind kind, const transport::PeerAddr& a);
std::string address_str(const Name& n);

// Appends the JSON object of one domain snapshot (see above). Throws std::bad_alloc.
void render_json(const DomainSnapshot& d, std::string& out);

// A domain's endpoint was enabled: registers the domain as a stats source (if its config has
// stats.socket), which starts the socket.
void endpoint_enabled(TransportDomain* d) noexcept;
// A domain is closing: unregisters it (the socket goes with the last source).
void domain_closing(TransportDomain* d) noexcept;
// Snapshots of every registered transport domain. Throws std::bad_alloc.
std::vector<DomainSnapshot> snapshot_all();

}  // namespace pollfab::providers::packet::stats
