// The per-process stats socket (provider-neutral): live counters of every registered source
// (a domain), read from outside the process by `pollfab info --stats` (docs/observability.md).
//
// Socket: one unix stream socket per process, <dir>/<pid>.sock, dir = the first usable of
// /run/pollfab/stats, $XDG_RUNTIME_DIR/pollfab-stats, /tmp/pollfab-stats-<uid> (created
// 0755/0700; a directory is usable if it is a real directory owned by us or root, not
// world-writable, and writable by us). Served by one thread ("pollfab-stats", all signals
// blocked), started when the first source registers, stopped (socket removed) when the last
// one leaves or the process exits. A client connects and reads one JSON document until EOF
// (it sends nothing). Sockets of dead processes found in the directory at start-up are
// removed. Failures (no usable directory, bind) log a warning once; the library carries on.
//
// JSON document (version 1): {"version":1, "pid":N, "process":"name", "time_unix_ns":N,
// "domains":[<each source's object, Source::render_json>]}. Counters are unsigned integers.
//
// Lock order: lifecycle mutex -> registry mutex -> whatever a source takes in render_json
// (a domain's lock). The serving thread holds the registry mutex while sources render, so a
// registered source cannot be freed under it: a source detaches before it is destroyed.
// Thread-safety: every function here is MT-safe and noexcept unless stated.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/util/counter.hpp"

namespace pollfab::core::stats {

class Source {
 public:
  virtual ~Source() = default;
  // Appends this source's JSON object (one element of "domains") to out. Runs on the serving
  // thread under the registry mutex. May throw std::bad_alloc.
  virtual void render_json(std::string& out) = 0;
};

// Registers src (once; again is a no-op) and starts the socket thread if it is not running.
// prov names the provider in log lines.
void attach(Source* src, const char* prov) noexcept;
// Unregisters src; stops the thread and removes the socket with the last source.
void detach(Source* src) noexcept;
// Calls f for every registered source, under the registry mutex (f must not attach/detach).
void for_each_source(const std::function<void(Source*)>& f);
// The JSON document the socket serves. Throws std::bad_alloc.
std::string document();
// Path of this process's socket while it is served, else "".
std::string socket_path();
// Directories where stats sockets may be (for clients; nothing is created): the library's
// candidates, and for root also every user's (/run/user/*/pollfab-stats, /tmp/pollfab-stats-*).
std::vector<std::string> socket_dirs();

// JSON helpers for sources: a quoted, escaped string; "name":value pairs joined by commas.
void json_string(std::string& out, std::string_view s);
void json_counters(std::string& out, const util::Counter* c, size_t n);
// "a=1 b=2 ..." (close-time log lines).
std::string format_counters(const util::Counter* c, size_t n);

}  // namespace pollfab::core::stats
