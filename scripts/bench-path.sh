#!/usr/bin/env bash
# Benchmark (not a test): the transport's per-message path, step by step.
#   1. build/apps/pollfab-bench-path (Google Benchmark): ns per message end to end over an
#      in-process ring, one core doing both sides, at 64 B, 1 KiB and 4 KiB, with and without
#      the CRC-32C; the header's encode+seal and decode+verify alone.
#   2. The same path under callgrind (BM_MessageCounted: 96,000 messages): instructions per
#      message for each step, inclusive of what it calls. This VM exposes no hardware counters
#      (perf sees only software events), so instructions come from callgrind; cycles are the ns
#      of part 1 times the clock.
# Run from anywhere; needs valgrind (scripts/install-deps.sh). Options: --no-build.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench_build.sh  # bench_build
[ "${1:-}" = "--no-build" ] || bench_build
B=$PWD/build/apps/pollfab-bench-path
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "pollfab bench-path: $(date -u +%FT%TZ)"
"$B" --benchmark_filter='BM_Message/|BM_Wire' 2>/dev/null | grep -E '^BM_|^Benchmark|^-'

for size in 64 4096; do
  (cd "$out" && valgrind --tool=callgrind --callgrind-out-file="$out/cg.$size" \
     "$B" --benchmark_filter="BM_MessageCounted/$size/1" >"$out/vg.$size" 2>&1) ||
    { echo "bench-path: callgrind failed:"; tail -5 "$out/vg.$size"; exit 1; } >&2
  callgrind_annotate --inclusive=yes "$out/cg.$size" > "$out/ann.$size" 2>/dev/null
done

python3 - "$out" <<'EOF'
import re, sys
out = sys.argv[1]
MSGS = 3000 * 32
# (step, regex on the function name, what it covers)
STEPS = [
    ("post", (r"Engine::send_slot\(", r"Engine::post_send\(pollfab::transport::SendOp"), "send slot, Engine::post_send: checks, queue; includes the next three"),
    ("  segment", r"Engine::emit_segment\(", "header encode, ACK piggyback, payload copy or attach"),
    ("  seal (CRC-32C)", r"Engine::seal\(pollfab::transport::PacketBuf", "CRC over header + payload"),
    ("  window, pacing", r"Engine::pump\(", "per-peer window and congestion checks (includes segment)"),
    ("tx burst", r"Engine::flush\(bool\)", "hand the queued packets to the link"),
    ("rx: demux, verify, order", r"Engine::on_packet\(", "decode, CRC check, peer lookup, ACK fields, PSN order; includes the next"),
    ("  decode", r"wire::decode\(unsigned char const\*", "72-byte header fields"),
    ("  deliver", r"Engine::deliver\(", "match, place (copy into the receive), completion"),
    ("  match", r"Matcher::match_posted\(", "posted-receive lookup"),
    ("  receive completion", r"RingSink::on_recvs_completed", "a packet's receive completions, one sink call (CQ write)"),
    ("re-post receive", (r"Engine::recv_entry\(", r"Engine::post_recv\(pollfab::transport::RecvEntry"), "receive entry, unexpected check, post"),
    ("ACK (receiver)", r"Engine::send_ack\(", "standalone ACK built and queued"),
    ("ACK (sender)", r"Engine::on_ack\(", "cumulative ACK, SACK, RTT sample, send completions"),
    ("send completions (sink)", r"RingSink::on_sends_completed", "an ACK's send completions, one sink call (CQ write)"),
    ("timers (progress)", r"Engine::progress\(unsigned long\)", "per progress round: timers, pump, ACK policy, flush"),
]
def table(path):
    ann = open(path).read().split('\n')
    vals = {}
    for name, rxs, _ in STEPS:
        total_ir = 0
        for rx in (rxs if isinstance(rxs, tuple) else (rxs,)):  # a tuple: functions the caller calls in turn
            best = 0
            for l in ann:
                m = re.match(r'\s*([\d,]+) \([^)]*\)\s+(\S.*)', l)
                if m and re.search(rx, m.group(2)):
                    best = max(best, int(m.group(1).replace(',', '')))
            total_ir += best
        vals[name] = total_ir / MSGS
    total = 0
    for l in ann:
        m = re.match(r'\s*([\d,]+) \([^)]*\)\s+.*BM_Message\(benchmark::State', l)
        if m: total = max(total, int(m.group(1).replace(',', '')))
    return vals, total / MSGS
t64, tot64 = table(f"{out}/ann.64")
t4k, tot4k = table(f"{out}/ann.4096")
print(f"\n{'step (instructions per 64-byte message, inclusive)':52} {'instr':>6}   covers")
for name, _, what in STEPS:
    print(f"{name:52} {t64[name]:6.0f}   {what}")
print(f"{'whole loop, both sides':52} {tot64:6.0f}   BM_Message: post to both completions")
print(f"4 KiB (3 segments): whole loop {tot4k:.0f} instructions per message, of which sealing "
      f"{t4k['  seal (CRC-32C)']:.0f} (verify is inside rx).")
print("callgrind, BM_MessageCounted (3000 windows of 32 messages, CRC on).")
EOF
