#!/usr/bin/env python3
"""bench/client_cost.py: what one natsbench run costs the client and the server, per message.

usage: bench/client_cost.py [--rounds R] [--per-thread] SCENARIO MSGS LABEL=BIN [LABEL=BIN ...] [-- natsbench args]

For each round and each server (alternated), starts BIN on a free 127.0.0.1 port, runs
`natsbench SCENARIO --msgs MSGS` under two `perf stat`s at once: one around natsbench (the client
process, every thread) and one attached to the server's pid for the same span (--per-thread: the
server's threads one by one). Prints per published
message: CPU (task-clock, us), context switches, read-side syscalls (read + recvfrom), write-side
syscalls (write + writev + sendto; a tokio worker's wake-up of another is an eventfd write), epoll
waits, futex calls, packets sent (net_dev_xmit: data segments and ACKs sent from that process's
context), and the bytes per client read / write (the server's /proc/PID/io wchar / rchar over the
run divided by the client's read / write syscalls: every byte the client reads, the server wrote,
and the other way round; rchar misses recvfrom(2), so B/write is n/a for a server reading with it).
Also each side's CPUs used (task-clock over the wall time of the natsbench process, start-up
included) and the load average at the end of the run.
natsbench is the shared bench's client (~/.cache/nats-bench/target/release/natsbench, or $NATSBENCH).

e.g. bench/client_cost.py --rounds 3 core_fanout 300k ours=target/release/nats-server \
         go=$(pyenv which nats-server) -- --subs 4
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time

NATSBENCH = os.environ.get(
    "NATSBENCH", os.path.expanduser("~/.cache/nats-bench/target/release/natsbench"))
EVENTS = ["task-clock", "context-switches", "cpu-migrations",
          "syscalls:sys_enter_read", "syscalls:sys_enter_recvfrom",
          "syscalls:sys_enter_write", "syscalls:sys_enter_writev", "syscalls:sys_enter_sendto",
          "syscalls:sys_enter_epoll_wait", "syscalls:sys_enter_epoll_pwait", "syscalls:sys_enter_futex", "net:net_dev_xmit"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def count_msgs(text):
    text = text.replace("_", "")
    mult = 1
    if text[-1] in "kK":
        mult, text = 1000, text[:-1]
    elif text[-1] in "mM":
        mult, text = 1000000, text[:-1]
    return int(float(text) * mult)


def parse_perf(path, per_thread):
    """{event: value} summed, and with per_thread {thread: {event: value}}."""
    total, threads = {}, {}
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(",")
        if per_thread:
            # comm-tid,value,unit,event,...
            if len(fields) < 4:
                continue
            thread, value, event = fields[0], fields[1], fields[3]
        else:
            if len(fields) < 3:
                continue
            thread, value, event = None, fields[0], fields[2]
        try:
            value = float(value)
        except ValueError:
            continue
        total[event] = total.get(event, 0) + value
        if thread:
            threads.setdefault(thread, {})[event] = value
    return total, threads


def proc_io(pid):
    io = {}
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            key, value = line.split(":")
            io[key] = int(value)
    return io


def one_run(label, binary, scenario, msgs, extra, per_thread):
    port = free_port()
    work = tempfile.mkdtemp(prefix="client-cost.")
    server = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise SystemExit(f"{label}: server did not start")
                time.sleep(0.05)
        events = ",".join(EVENTS)
        pt = ["--per-thread"] if per_thread else []
        io0 = proc_io(server.pid)
        command = ["perf", "stat", "-x,", *pt, "-e", events, "-p", str(server.pid),
                   "-o", f"{work}/server.txt", "--",
                   "perf", "stat", "-x,", "-e", events, "-o", f"{work}/client.txt", "--",
                   NATSBENCH, scenario, "--url", f"nats://127.0.0.1:{port}", "--msgs", str(msgs),
                   *extra]
        started = time.time()
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        wall = time.time() - started
        io1 = proc_io(server.pid)
        load = open("/proc/loadavg").read().split()[0]
        lines = [l for l in done.stdout.splitlines() if l.startswith("{")]
        result = json.loads(lines[-1]) if lines else {"error": done.stderr[-400:]}
        client, client_threads = parse_perf(f"{work}/client.txt", False)
        srv, server_threads = parse_perf(f"{work}/server.txt", per_thread)
        return {
            "label": label, "result": result, "client": client, "server": srv, "load": load, "wall": wall,
            "client_threads": client_threads, "server_threads": server_threads,
            "server_wrote": io1["wchar"] - io0["wchar"], "server_read": io1["rchar"] - io0["rchar"],
        }
    finally:
        server.terminate()
        server.wait(timeout=10)
        subprocess.run(["rm", "-rf", work])


def per_message(counts, msgs):
    g = lambda key: counts.get(key, 0.0)
    return {
        "cpu_us": g("task-clock") * 1000 / msgs,  # task-clock is in msec
        "cs": g("context-switches") / msgs,
        "mig": g("cpu-migrations") / msgs,
        "reads": (g("syscalls:sys_enter_read") + g("syscalls:sys_enter_recvfrom")) / msgs,
        "writes": (g("syscalls:sys_enter_write") + g("syscalls:sys_enter_writev")
                   + g("syscalls:sys_enter_sendto")) / msgs,
        "epoll": (g("syscalls:sys_enter_epoll_wait") + g("syscalls:sys_enter_epoll_pwait")) / msgs,
        "futex": g("syscalls:sys_enter_futex") / msgs,
        "xmit": g("net:net_dev_xmit") / msgs,
    }


def show(run, msgs):
    r = run["result"]
    rate = r.get("msgs_per_s", r.get("error", "?"))
    c, s = per_message(run["client"], msgs), per_message(run["server"], msgs)
    creads = run["client"].get("syscalls:sys_enter_read", 0) + run["client"].get("syscalls:sys_enter_recvfrom", 0)
    cwrites = sum(run["client"].get(k, 0) for k in (
        "syscalls:sys_enter_write", "syscalls:sys_enter_writev", "syscalls:sys_enter_sendto"))
    bpr = run["server_wrote"] / creads if creads else 0
    # rchar counts read(2), not recvfrom(2): ours reads with recvfrom, so its figure is n/a
    bpw = f"{run['server_read'] / cwrites:.0f}" if cwrites and run["server_read"] >= cwrites else "n/a"
    fmt = lambda d: " ".join(f"{k}={v:.3f}" for k, v in d.items())
    cpus = run["client"].get("task-clock", 0) / 1000 / run["wall"]
    scpus = run["server"].get("task-clock", 0) / 1000 / run["wall"]
    print(f"{run['label']:>6} rate={rate} load={run['load']} wall={run['wall']:.2f}s client_cpus={cpus:.2f} "
          f"server_cpus={scpus:.2f} | client/msg {fmt(c)} "
          f"B/read={bpr:.0f} B/write={bpw} | server/msg {fmt(s)}", flush=True)
    for side in ("client_threads", "server_threads"):
        for thread, values in sorted(run[side].items(), key=lambda kv: -kv[1].get("task-clock", 0)):
            if values.get("task-clock", 0) < 1:
                continue
            print(f"        {side[:6]} {thread:>24} cpu_ms={values.get('task-clock', 0):.0f} "
                  f"cs={values.get('context-switches', 0):.0f} "
                  f"reads={values.get('syscalls:sys_enter_read', 0) + values.get('syscalls:sys_enter_recvfrom', 0):.0f} "
                  f"writes={values.get('syscalls:sys_enter_write', 0) + values.get('syscalls:sys_enter_writev', 0) + values.get('syscalls:sys_enter_sendto', 0):.0f} "
                  f"epoll={values.get('syscalls:sys_enter_epoll_wait', 0):.0f}", flush=True)


def main():
    args = sys.argv[1:]
    rounds, per_thread = 1, False
    while args and args[0].startswith("--"):
        if args[0] == "--rounds":
            rounds, args = int(args[1]), args[2:]
        elif args[0] == "--per-thread":
            per_thread, args = True, args[1:]
        else:
            raise SystemExit(__doc__)
    extra = []
    if "--" in args:
        at = args.index("--")
        args, extra = args[:at], args[at + 1:]
    if len(args) < 3:
        raise SystemExit(__doc__)
    scenario, msgs_text, servers = args[0], args[1], [a.split("=", 1) for a in args[2:]]
    msgs = count_msgs(msgs_text)
    for _ in range(rounds):
        for label, binary in servers:
            show(one_run(label, binary, scenario, msgs, extra, per_thread), msgs)


if __name__ == "__main__":
    main()
