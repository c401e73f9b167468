// Observability of the transport providers (dpdk, udp): per-domain, per-endpoint and per-peer
// counters, readable from outside the process and logged at close.
//
// Snapshots: TransportDomain::snapshot() copies, under the domain lock and one endpoint at a
// time, the I/O layer's counters, each endpoint's EngineStats and each peer's PeerStats. The data
// path keeps its plain (non-atomic) counters: only the reader pays.
//
// Stats socket (config stats.socket, default true; FI_<PROV>_STATS_SOCKET): one unix stream
// socket per process, <dir>/<pid>.sock, dir = the first usable of /run/pollfab/stats,
// $XDG_RUNTIME_DIR/pollfab-stats, /tmp/pollfab-stats-<uid> (created 0755/0700; a directory is
// usable if it is a real directory owned by us or root, not world-writable, and writable by us).
// It is served by one thread ("pollfab-stats"), started when the first endpoint of a domain
// with stats.socket on is enabled, and stopped (socket removed) when the last such domain closes
// or the process exits. A client connects and reads one JSON document until EOF (it sends
// nothing); `pollfab info --stats` is the client. Sockets of dead processes found in the directory
// at start-up are removed. Failures (no usable directory, bind) log a warning once; the library
// carries on without the socket.
//
// JSON document (version 1): counters are unsigned integers, times in ns.
//   {"version":1, "pid":N, "process":"fi_pingpong", "time_unix_ns":N,
//    "domains":[{"provider":"udp", "domain":"udp-127.0.0.1", "io":{<I/O counters>},
//                "dropped_unknown_ep":N, "assist_runs":N,
//                "endpoints":[{"id":1, "type":"rdm"|"dgram", "name":"fi_udp://...",
//                              "stats":{<EngineStats, field names>},
//                              "peers":[{"addr":"fi_udp://...", "fi_addr":N|null, "dead":false,
//                                        <PeerStats counters, field names>}]}]}]}
//
// Lock order: lifecycle mutex -> registry mutex -> domain lock. The serving thread holds the
// registry mutex while it snapshots, so a registered domain cannot be freed under it; a domain
// unregisters in teardown(), before any of it is destroyed. Endpoints are reached only through
// the domain's endpoint table, under the domain lock (the same rule as progress()).
//
// Thread-safety: every function here is MT-safe and noexcept unless stated.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/util/counter.hpp"
#include "providers/common/name.hpp"
#include "transport/engine.hpp"

namespace pollfab::providers {
class TransportDomain;
}

namespace pollfab::providers::stats {

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
  uint64_t assist_runs = 0;
  std::vector<EndpointSnapshot> endpoints;
};

// EngineStats / PeerStats as (name, value) pairs in declaration order; the names are the JSON
// keys and the close-time log's keys. Return the number written (<= kMaxCounters).
// peer_counters leaves out addr, user (fi_addr) and dead, which are printed on their own.
size_t engine_counters(const transport::EngineStats& s, Counter* out) noexcept;
size_t peer_counters(const transport::PeerStats& s, Counter* out) noexcept;
// "a=1 b=2 ..."
std::string format_counters(const Counter* c, size_t n);
// Readable peer/endpoint address: fi_udp://127.0.0.1:40000/1 (udp, no MAC), or the full
// fi_dpdk://aa:bb:cc:dd:ee:ff/198.19.0.1:47600/1 name.
std::string address_str(NameKind kind, const transport::PeerAddr& a);
std::string address_str(const Name& n);

// The JSON document for these snapshots (see above). Throws std::bad_alloc.
std::string render_json(const std::vector<DomainSnapshot>& domains);

// A domain's endpoint was enabled: registers the domain (if its config has stats.socket) and
// starts the socket thread if it is not running.
void endpoint_enabled(TransportDomain* d) noexcept;
// A domain is closing: unregisters it; stops the thread and removes the socket with the last.
void domain_closing(TransportDomain* d) noexcept;
// Snapshot of every registered domain (what the socket serves). Throws std::bad_alloc.
std::vector<DomainSnapshot> snapshot_all();
// Path of this process's socket while it is served, else "".
std::string socket_path();

// Directories where stats sockets may be (for clients; nothing is created): the library's
// candidates, and for root also every user's (/run/user/*/pollfab-stats, /tmp/pollfab-stats-*).
std::vector<std::string> socket_dirs();

}  // namespace pollfab::providers::stats
