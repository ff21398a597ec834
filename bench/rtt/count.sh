#!/bin/bash
# Per-round-trip counts of one server process (bench/README.md, "Wake-ups per round trip").
# usage: count.sh SERVER_BIN SCENARIO MSGS [LABEL]
#   starts SERVER_BIN -js on a free port, runs natsbench SCENARIO (raw_rtt, core_rtt, req_reply,
#   js_pub_sync, ...) against it under `perf stat -p`, prints the p50 and per round trip (MSGS plus
#   natsbench's 200 warm-up): context switches, migrations, futex, epoll_wait, writev, server CPU (us).
#   PERFX=--per-thread SHOWN=20 also prints the per-thread counts. NATSBENCH overrides the natsbench path.
BIN=$1; SC=$2; N=$3; LABEL=${4:-server}
D=$(mktemp -d /tmp/rtt-count.XXXX)
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$BIN" -a 127.0.0.1 -p "$PORT" -js -sd "$D/store" >"$D/log" 2>&1 &
SPID=$!
for _ in $(seq 200); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.05; done
NB=${NATSBENCH:-$HOME/.cache/nats-bench/target/release/natsbench}
EVENTS=context-switches,cpu-migrations,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_writev,task-clock
perf stat $PERFX -e $EVENTS -p $SPID -o "$D/perf.txt" -- "$NB" "$SC" --url nats://127.0.0.1:$PORT --msgs "$N" > "$D/out.json" 2>"$D/nb.err"
sort -k2 -n -r "$D/perf.txt" | head -"${SHOWN:-0}"
kill $SPID; wait $SPID 2>/dev/null
python3 - "$D" "$N" "$LABEL" "$SC" <<'PY'
import json, re, sys
d, n, label, scenario = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
result = json.loads(open(d + '/out.json').read().strip().splitlines()[-1])
values = {}
for line in open(d + '/perf.txt'):
    m = re.match(r'\s*([\d,.]+)\s+(?:msec\s+)?(\S+)', line)
    if m:
        try:
            values[m.group(2)] = values.get(m.group(2), 0) + float(m.group(1).replace(',', ''))
        except ValueError:
            pass
total = n + min(200, n)
names = [('context-switches', 'cs', 1), ('cpu-migrations', 'mig', 1), ('syscalls:sys_enter_futex', 'futex', 1),
         ('syscalls:sys_enter_epoll_wait', 'epoll_wait', 1), ('syscalls:sys_enter_writev', 'writev', 1),
         ('task-clock', 'cpu_us', 1000)]
per = ' '.join(f'{short}={values.get(key, 0) * scale / total:.2f}' for key, short, scale in names)
print(label, scenario, 'ok' if result.get('ok') else 'FAILED', 'p50', result.get('p50_us'), 'per round trip:', per)
PY
rm -rf "$D"
