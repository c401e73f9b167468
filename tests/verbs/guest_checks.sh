#!/bin/sh
# Runs INSIDE the soft-RoCE guest (tests/verbs/run.sh boots it): the verbs provider on rxe0,
# through pollfab's drop-in libfabric.so.1. One check per line of output ("ok:"/"FAIL:"); exit
# status 0 only if every check passed. The guest has one CPU and no preemption: processes that
# wait on each other block on completion channels (--wait fd), and every step is bounded.
# Usage (in the guest): guest_checks.sh BUILD_DIR
build=$1
P="$build/apps/pollfab"
ip=${RXE_IP:-198.18.0.1}
logs=$(mktemp -d)
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }

out=$("$P" run -- fi_info -p verbs -v 2>&1)
check "fi_info -p verbs -v lists rxe0 (FI_EP_RDM)" 'echo "$out" | grep -q "name: rxe0" && echo "$out" | grep -q "type: FI_EP_RDM"'
check "fi_info -p verbs -v gives rxe0's address" 'echo "$out" | grep -q "src_addr: fi_verbs://q[0-9]*/$ip:\|src_addr: fi_verbs://$ip:"'

# A server and a client (the same program), both bounded; output shown, exit 0 on both sides.
pair() {  # pair NAME SERVER_CMD CLIENT_CMD (each a command line, word-split)
  name=$1
  timeout 120 $2 > "$logs/$name.server" 2>&1 &
  spid=$!
  sleep 1
  timeout 120 $3 > "$logs/$name.client" 2>&1
  crc=$?
  wait $spid
  src=$?
  grep -E '^(bytes|[0-9]+[kmg]?[[:space:]])' "$logs/$name.client" | head -60
  if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
    echo "--- $name client (exit $crc)"; tail -15 "$logs/$name.client"
    echo "--- $name server (exit $src)"; tail -15 "$logs/$name.server"
    return 1
  fi
}

# pollfab pingpong, RDM over the UD QP, the client naming the server by address and service
# (rdma_cm service ID resolution), blocking on the completion channel.
pp="$P pingpong -p verbs -S 64,1k,4k,64k -I 50 -c --wait fd"
check "pollfab pingpong -p verbs -e rdm --wait fd (64 B..64 KiB, data checked)" \
  'pair rdm_fd "$pp -P 4000" "$pp $ip:4000"'

# Debian's fi_pingpong on the drop-in (names exchanged on its out-of-band TCP socket; both
# sides poll their CQs, so the single guest CPU is shared by time slices).
fpp() {  # fpp NAME ARGS...
  name=$1; shift
  pair "$name" "$P run -- fi_pingpong $*" "$P run -- fi_pingpong $* $ip"
}
# fi_pingpong takes one size per run (-S n|all): inject-sized, and 16 KiB (16 UD datagrams per
# message). The whole -S all runs are not in the suite: in this guest every system call,
# clock_gettime included, is a ptrace round trip of ~45 us, so 6 MiB messages take minutes.
for m in msg tagged; do
  for sz in 64:50 16384:20; do
    check "fi_pingpong -p verbs -e rdm -m $m -S ${sz%:*} -I ${sz#*:} -c" \
      'fpp rdm_${m}_${sz%:*} -p verbs -e rdm -m $m -S ${sz%:*} -I ${sz#*:} -c'
  done
done
check "fi_pingpong -p verbs -e dgram -S 512 -I 50 -c" 'fpp dgram -p verbs -e dgram -S 512 -I 50 -c'

rm -rf "$logs"
exit $fail
