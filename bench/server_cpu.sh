#!/bin/bash
# bench/server_cpu.sh BIN SCENARIO MSGS [natsbench args...]
# The server's own CPU (utime + stime, clock ticks from /proc/PID/stat) for one natsbench run against a
# fresh server: a figure the machine's load moves far less than a rate. Alternate two builds, e.g.
#   for r in 1 2 3; do for b in OLD NEW; do bench/server_cpu.sh $b raw_pub 8M; done; done
# natsbench is the shared bench's client (../shared/bench; `compare` builds it into ~/.cache/nats-bench).
set -u
BIN=$1 SCENARIO=$2 MSGS=$3
shift 3
NATSBENCH=${NATSBENCH:-$HOME/.cache/nats-bench/target/release/natsbench}
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" -a 127.0.0.1 -p "$PORT" > /dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null' EXIT
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.05; done
ticks() { awk '{print $14 + $15}' /proc/$SERVER/stat; }
before=$(ticks)
out=$("$NATSBENCH" "$SCENARIO" --url nats://127.0.0.1:$PORT --msgs "$MSGS" "$@" 2>&1)
after=$(ticks)
rate=$(grep -o '"msgs_per_s":[0-9.]*' <<< "$out" | cut -d: -f2)
echo "$SCENARIO $(basename "$(dirname "$(dirname "$(dirname "$BIN")")")") server_ticks $((after - before)) msgs_per_s ${rate:-failed}"
