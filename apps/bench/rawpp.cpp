// pollfab-rawpp: a raw DPDK ping-pong with no protocol at all, on the same port the dpdk
// provider would use (same config: POLLFAB_CONFIG, so `pollfab testbed exec` works). It is the
// floor the provider can approach: the client sends a message as a burst of MTU-sized Ethernet
// frames (EtherType 0x88b5, local experimental); the server, once it has all of the message's
// frames, swaps their MAC addresses and sends them back, as fi_pingpong's server answers a
// message once its receive completed; the client waits for all of them. Lost frames are
// counted, never resent.
// --place: each side copies every frame it receives into a message buffer, at the frame's offset
// in its message, as a receive into an application's buffer does (fi_pingpong's receive, any
// libfabric provider over memif: memif copies a frame from its ring into an mbuf, the receive
// then copies it into the application's buffer). Without it the floor moves each byte through
// memif's two copies only and never touches the payload.
// --echo frame: the server sends each frame back as it arrives instead, so a multi-frame
// message's two directions overlap (a pipelined echo: at 1 MiB it moves both directions' bytes
// in about the time of one, which no message ping-pong can; one-frame messages are the same).
//   server: pollfab-rawpp [--echo message|frame] [--place]
//   client: pollfab-rawpp [--place] -S 64,4k,1m -I 1000 SERVER_ADDR
// Output columns: bytes, iterations, usec/xfer (half round trip, the mean), MB/sec
// (fi_pingpong's definition: 2 * bytes * iterations / time), lost frames, the median half round
// trip in usec (one clock reading per iteration; `pollfab pingpong --lat` measures the same).
// Each frame carries its iteration: an echo that comes back after its iteration timed out
// (200 ms) is ignored and counted on stderr, so one hiccup cannot turn the rest of the run
// into a stream that answers every message a message early.
// --rate: the packet-rate floor instead (tx-only -> rx-only, as a dpdk-testpmd txonly/rxonly
// pair): the client sends ITERATIONS messages of each size back to back as bursts of 32 frames,
// the server only receives and counts. Columns: bytes, messages, frames per message, Mmsg/s
// and Mframes/s as the receiver saw them (first to last frame), lost frames (tx refused after
// retries is not loss: the sender waits; a frame that never arrives is).
#include <CLI/CLI.hpp>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "apps/common/oob.hpp"
#include "apps/common/sizes.hpp"
#include "dpdk_glue/eal.hpp"
#include "dpdk_glue/memif.hpp"
#include "dpdk_glue/port.hpp"
#include "lib/config/loader.hpp"
#include "lib/util/critical_path_marks.hpp"

using namespace pollfab;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint16_t kEtherType = 0x88b5;

struct Run {
  dpdk_glue::Port* port;
  rte_ether_addr peer;
  uint32_t frame_payload;  // bytes per frame after the Ethernet header
  bool place = false;      // --place: copy received payloads into a message buffer
};

// --place: frame `index` of a message lands at index * frame_payload of `buf` (sized for a
// whole message of frames).
void place(const Run& r, std::vector<uint8_t>& buf, uint64_t index, const rte_mbuf* f) {
  if (!r.place) return;
  const uint32_t len = std::min<uint32_t>(rte_pktmbuf_data_len(f) - 14, r.frame_payload);
  const size_t at = size_t(index) * r.frame_payload;
  if (at + len <= buf.size()) memcpy(buf.data() + at, rte_pktmbuf_mtod_offset(f, const uint8_t*, 14), len);
}

// Server: echo until told the count is reached (the frame count and the frames of one message
// come per size over OOB). per_frame: each frame goes back as it arrives; otherwise a message's
// frames go back once all of them are in (a frame lost for good leaves the rest of the run to
// the client's deadline and the 120 s bound).
// Never inlined (nor serve_rate, client_rate): scripts/bench-instructions.sh counts their
// instructions by name (callgrind --toggle-collect).
[[gnu::noinline]] int serve(Run& r, apps::Oob& oob, bool per_frame) {
  std::vector<rte_mbuf*> msg;
  util::CriticalPathMarks marks;  // the same two points as the dpdk provider's (DpdkIo)
  for (;;) {
    uint64_t want = 0, frames = 0;
    if (!oob.recv_all(&want, sizeof want)) return 0;  // client done
    if (want == 0) return 0;
    if (!oob.recv_all(&frames, sizeof frames) || frames == 0) return 1;
    const uint64_t batch = per_frame ? 64 : frames;
    msg.resize(batch + 64);
    std::vector<uint8_t> buf(r.place ? size_t(frames) * r.frame_payload : 0);
    uint64_t echoed = 0, held = 0;
    auto deadline = Clock::now() + std::chrono::seconds(120);
    while (echoed < want && Clock::now() < deadline) {
      const uint64_t base = held;  // the burst lands after the frames already held
      const uint16_t n = r.port->rx_burst(msg.data() + base, 64);
      marks.after_rx(n);
      for (uint16_t i = 0; i < n; ++i) {
        rte_mbuf* f = msg[base + i];
        auto* eth = rte_pktmbuf_mtod(f, rte_ether_hdr*);
        if (eth->ether_type != rte_cpu_to_be_16(kEtherType)) {
          rte_pktmbuf_free(f);
          continue;
        }
        eth->dst_addr = eth->src_addr;
        eth->src_addr = r.port->mac();
        place(r, buf, (echoed + held) % frames, f);
        msg[held++] = f;
      }
      // Whole messages (per frame: whatever arrived) go back; the rest waits for its frames.
      const uint64_t ready = per_frame ? held : held - held % frames;
      uint64_t sent = 0;
      while (sent < ready)
        sent += r.port->tx_burst(msg.data() + sent, static_cast<uint16_t>(std::min<uint64_t>(ready - sent, 64)));
      if (ready) marks.after_tx();
      for (uint64_t i = ready; i < held; ++i) msg[i - ready] = msg[i];
      held -= ready;
      echoed += ready;
    }
    for (uint64_t i = 0; i < held; ++i) rte_pktmbuf_free(msg[i]);
    if (!oob.sync()) return 1;
  }
}

uint32_t frames_for(const Run& r, size_t size) {
  return static_cast<uint32_t>(std::max<size_t>(1, (size + r.frame_payload - 1) / r.frame_payload));
}

// Fills n frames of a message of `size` bytes (each min(size, MTU) bytes, at least 46: the
// frames of a multi-frame message are all full, as the ping-pong always sent them).
// Frames of n bytes of payload (at least 46), the first 8 of which carry seq: the ping-pong's
// iteration, which the server echoes back unchanged (the client ignores stale echoes).
void build_frames(Run& r, rte_mbuf** m, uint16_t n, size_t size, uint64_t seq = 0) {
  for (uint16_t i = 0; i < n; ++i) {
    uint32_t len = std::min<uint32_t>(r.frame_payload, uint32_t(std::max<size_t>(size, 46)));
    auto* eth = reinterpret_cast<rte_ether_hdr*>(rte_pktmbuf_append(m[i], uint16_t(14 + len)));
    eth->dst_addr = r.peer;
    eth->src_addr = r.port->mac();
    eth->ether_type = rte_cpu_to_be_16(kEtherType);
    memcpy(reinterpret_cast<uint8_t*>(eth) + 14, &seq, sizeof seq);
  }
}

// The iteration a received frame answers (build_frames' seq).
uint64_t frame_seq(const rte_mbuf* f) {
  uint64_t seq;
  memcpy(&seq, rte_pktmbuf_mtod_offset(f, const uint8_t*, 14), sizeof seq);
  return seq;
}

// --rate, server side: count frames of each run until `want` arrived or the link has been idle
// for 500 ms; report first-to-last receive time and the count over the out-of-band channel.
[[gnu::noinline]] int serve_rate(Run& r, apps::Oob& oob) {
  for (;;) {
    uint64_t want = 0;
    if (!oob.recv_all(&want, sizeof want) || want == 0) return 0;
    if (!oob.sync()) return 1;  // receiver ready
    uint64_t got = 0;
    Clock::time_point first{}, last{};
    auto idle_deadline = Clock::now() + std::chrono::seconds(5);
    rte_mbuf* m[64];
    while (got < want) {
      uint16_t n = r.port->rx_burst(m, 64);
      if (n == 0) {
        if (Clock::now() > idle_deadline) break;
        continue;
      }
      last = Clock::now();
      if (got == 0) first = last;
      idle_deadline = last + std::chrono::milliseconds(500);
      for (uint16_t i = 0; i < n; ++i) {
        auto* eth = rte_pktmbuf_mtod(m[i], rte_ether_hdr*);
        if (eth->ether_type == rte_cpu_to_be_16(kEtherType)) ++got;
      }
      rte_pktmbuf_free_bulk(m, n);
    }
    double us = std::chrono::duration<double, std::micro>(last - first).count();
    if (!oob.send_all(&got, sizeof got) || !oob.send_all(&us, sizeof us)) return 1;
  }
}

[[gnu::noinline]] int client_rate(Run& r, apps::Oob& oob, const std::vector<size_t>& sizes,
                                  uint64_t iters) {
  printf("%-10s %-10s %7s %12s %12s %8s\n", "bytes", "#msgs", "frames", "Mmsg/s", "Mframes/s", "lost");
  std::vector<size_t> all{64};  // untimed warm-up first
  all.insert(all.end(), sizes.begin(), sizes.end());
  bool warm = true;
  for (size_t size : all) {
    uint64_t msgs = warm ? 1000 : iters;
    uint32_t frames = frames_for(r, size);
    uint64_t want = msgs * frames;
    if (!oob.send_all(&want, sizeof want) || !oob.sync()) return 1;
    uint64_t left = want;
    while (left) {
      rte_mbuf* m[32];
      uint16_t n = static_cast<uint16_t>(std::min<uint64_t>(left, 32));
      if (rte_pktmbuf_alloc_bulk(r.port->pool(), m, n) != 0) continue;
      build_frames(r, m, n, size);
      uint16_t sent = 0;
      while (sent < n) sent += r.port->tx_burst(m + sent, n - sent);
      left -= n;
    }
    uint64_t got = 0;
    double us = 0;
    if (!oob.recv_all(&got, sizeof got) || !oob.recv_all(&us, sizeof us)) return 1;
    if (warm) { warm = false; continue; }
    double fps = us > 0 ? double(got) / us : 0;  // frames per microsecond = Mframes/s
    printf("%-10zu %-10llu %7u %12.3f %12.3f %8llu\n", size, (unsigned long long)msgs, frames,
           fps / frames, fps, (unsigned long long)(want - got));
    fflush(stdout);
  }
  uint64_t zero = 0;
  oob.send_all(&zero, sizeof zero);
  return 0;
}

int client(Run& r, apps::Oob& oob, const std::vector<size_t>& sizes, uint64_t iters) {
  // Untimed warm-up (memif connects asynchronously; first packets pay for setup).
  std::vector<size_t> all{64};
  all.insert(all.end(), sizes.begin(), sizes.end());
  bool warm = true;
  for (size_t size : all) {
    uint64_t iters_now = warm ? 200 : iters;
    uint32_t frames = frames_for(r, size);
    uint64_t want = iters_now * frames, per_msg = frames;
    if (!oob.send_all(&want, sizeof want) || !oob.send_all(&per_msg, sizeof per_msg)) return 1;
    uint64_t lost = 0, stale = 0;  // frames never echoed in time; echoes that came late
    std::vector<float> half_rtt;
    half_rtt.reserve(iters_now);
    std::vector<uint8_t> buf(r.place ? size_t(frames) * r.frame_payload : 0);
    auto t0 = Clock::now();
    auto prev = t0;
    for (uint64_t it = 0; it < iters_now; ++it) {
      uint32_t left = frames, got = 0;
      while (left) {  // send the message as bursts of frames
        rte_mbuf* m[64];
        uint16_t n = static_cast<uint16_t>(std::min<uint32_t>(left, 64));
        if (rte_pktmbuf_alloc_bulk(r.port->pool(), m, n) != 0) continue;
        build_frames(r, m, n, size, it);
        uint16_t sent = 0;
        while (sent < n) sent += r.port->tx_burst(m + sent, n - sent);
        left -= n;
      }
      // Only this iteration's echoes count: after a timeout the late echo of the earlier one
      // would otherwise end this iteration at once, and every later one a message early (a
      // pipelined stream measured as a ping-pong).
      auto deadline = Clock::now() + std::chrono::milliseconds(200);
      while (got < frames && Clock::now() < deadline) {
        rte_mbuf* m[64];
        uint16_t n = r.port->rx_burst(m, 64);
        for (uint16_t i = 0; i < n; ++i) {
          auto* eth = rte_pktmbuf_mtod(m[i], rte_ether_hdr*);
          if (eth->ether_type == rte_cpu_to_be_16(kEtherType)) {
            if (frame_seq(m[i]) == it) place(r, buf, got++, m[i]);
            else ++stale;
          }
          rte_pktmbuf_free(m[i]);
        }
      }
      lost += frames - got;
      const auto t = Clock::now();
      half_rtt.push_back(std::chrono::duration<float, std::micro>(t - prev).count() / 2);
      prev = t;
    }
    double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (stale)
      fprintf(stderr, "pollfab-rawpp: %llu late echoes of earlier iterations ignored\n",
              (unsigned long long)stale);
    if (!oob.sync()) return 1;
    if (warm) {
      warm = false;
      printf("%-10s %-8s %12s %12s %8s %10s\n", "bytes", "#iters", "usec/xfer", "MB/sec", "lost",
             "p50_usec");
      continue;
    }
    std::sort(half_rtt.begin(), half_rtt.end());
    printf("%-10zu %-8llu %12.2f %12.2f %8llu %10.2f\n", size, (unsigned long long)iters,
           us / double(iters) / 2, 2.0 * double(size) * double(iters) / us,
           (unsigned long long)lost, half_rtt.empty() ? 0.0 : half_rtt[half_rtt.size() / 2]);
    fflush(stdout);
  }
  uint64_t zero = 0;
  oob.send_all(&zero, sizeof zero);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"raw DPDK ping-pong (the floor under the dpdk provider)"};
  std::string server, sizes_s = "64,4k,1m";
  uint64_t iters = 1000;
  uint16_t port_no = 47594;
  bool rate = false;
  std::string echo = "message";
  bool place_flag = false;
  app.add_flag("--rate", rate, "packet rate (tx-only -> rx-only) instead of ping-pong");
  app.add_flag("--place", place_flag, "copy each received frame into a message buffer, as a "
               "receive into an application's buffer does (ping-pong)");
  app.add_option("--echo", echo, "server: answer a whole message (message, as fi_pingpong) or "
                 "each frame as it arrives (frame: the two directions overlap)")
      ->check(CLI::IsMember({"message", "frame"}));
  app.add_option("addr", server, "server bootstrap address (client mode)");
  app.add_option("-S,--sizes", sizes_s, "message sizes");
  app.add_option("-I,--iterations", iters, "iterations per size");
  app.add_option("-B,--port", port_no, "out-of-band TCP port");
  CLI11_PARSE(app, argc, argv);

  config::LoadResult lr = config::load("dpdk");
  if (!lr.config) {
    fprintf(stderr, "rawpp: %s\n", lr.error.c_str());
    return 1;
  }
  apps::Oob oob;
  std::string err;
  bool is_client = !server.empty();
  // The client connects first, so its port starts only once the server's is up (a memif
  // client that starts before the server's socket exists never connects).
  if (is_client && !oob.connect(server, port_no, 30, err)) {
    fprintf(stderr, "rawpp: out-of-band: %s\n", err.c_str());
    return 1;
  }
  auto e = dpdk_glue::eal_acquire(*lr.config);
  if (e.status != util::Status::Ok) {
    fprintf(stderr, "rawpp: %s\n", e.message.c_str());
    return 1;
  }
  const std::string& vdev = lr.config->dpdk.vdevs.at(0);
  util::Status st;
  auto port = dpdk_glue::Port::open(vdev.substr(0, vdev.find(',')), *lr.config, st, err);
  if (!port) {
    fprintf(stderr, "rawpp: %s\n", err.c_str());
    return 1;
  }
  if (!is_client && !oob.serve(port_no, 120, err)) {
    fprintf(stderr, "rawpp: out-of-band: %s\n", err.c_str());
    return 1;
  }
  for (int i = 0; i < 500 && !port->link_up(); ++i) usleep(10000);  // at most 5 s for the link
  // As pollfab's dpdk provider does (providers/dpdk/io.cpp): the memif regions mapped in
  // before the first frame, so neither side's first thousand frames take page faults.
  if (port->shared_memory()) dpdk_glue::prefault_memif_regions();
  Run r{port.get(), {}, port->mtu()};
  r.place = place_flag;
  rte_ether_addr mine = port->mac();
  if (!oob.send_all(&mine, sizeof mine) || !oob.recv_all(&r.peer, sizeof r.peer)) return 1;
  if (!is_client) return rate ? serve_rate(r, oob) : serve(r, oob, echo == "frame");
  std::vector<size_t> sizes = apps::parse_size_list(sizes_s);
  return rate ? client_rate(r, oob, sizes, iters) : client(r, oob, sizes, iters);
}
