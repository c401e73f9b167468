# Sourced by scripts/bench-compare.sh and scripts/demo.sh: one pair of Debian's fi_pingpong
# -e rdm processes, and reading their result line. The caller defines $out (a directory for
# the logs) and $bg (the background pid its cleanup trap kills).
#
# pp NAME SIZE ITERS PROV SERVER_WRAP CLIENT_WRAP PEER
#   Starts "SERVER_WRAP fi_pingpong -p PROV -e rdm -S SIZE -I ITERS", then the client with the
#   same options and PEER (each bounded to 300 s); the client's output lands in
#   $out/NAME.SIZE ("n/a" if the pair failed), the server's in $out/NAME.SIZE.s.
pp() {
  local name=$1 size=$2 iters=$3 prov=$4 swrap=$5 cwrap=$6 peer=$7
  timeout 300 $swrap fi_pingpong -p "$prov" -e rdm -S "$size" -I "$iters" > "$out/$name.$size.s" 2>&1 &
  bg=$!
  sleep 0.7
  if timeout 300 $cwrap fi_pingpong -p "$prov" -e rdm -S "$size" -I "$iters" "$peer" > "$out/$name.$size" 2>&1; then
    wait "$bg" || true
  else
    kill "$bg" 2>/dev/null || true; wait "$bg" 2>/dev/null || true
    echo "n/a" > "$out/$name.$size"
  fi
  bg=""
}

# val NAME COL: column COL (6 = MB/sec, 7 = usec/xfer) of fi_pingpong's result line in
# $out/NAME, or n/a.
val() { awk -v c="$2" '/^[0-9]+[kmg]? / {v=$c} END {print (v==""?"n/a":v)}' "$out/$1" 2>/dev/null || echo n/a; }
