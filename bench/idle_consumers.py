#!/usr/bin/env python3
"""Idle cost of N R3 durable consumers on a 3-node cluster on loopback, ours beside nats-server in
the same run (issue 20's figure): an R3 file stream (max_consumers N) with 100 messages, N durable
pull consumers with explicit acks created 16 in flight, 5 s to settle, then the three servers' CPU
(utime + stime from /proc/PID/stat) over the window and their summed VmRSS. Raw NATS protocol over
sockets (the cluster set-up of r3_publish.py); the same script drives either server binary.
Usage: idle_consumers.py OURS_BINARY REF_BINARY [--consumers N] [--window S]"""
import json, os, sys, tempfile, time

from r3_publish import Conn, start_cluster

IN_FLIGHT = 16
SETTLE = 5


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def api(conn, subject, body, deadline):
    """The first answer without an error, asked again (every 0.5 s) until `deadline`."""
    while True:
        try:
            reply = json.loads(conn.request(subject, json.dumps(body).encode(), timeout=5))
            if "error" not in reply:
                return reply
        except (OSError, EOFError, ValueError) as error:
            reply = error
        if time.time() > deadline:
            sys.exit(f"{subject}: {reply}")
        time.sleep(0.5)


def measure(binary, consumers, window):
    workdir = tempfile.mkdtemp(prefix="idlebench-")
    procs, ports = start_cluster(binary, workdir, False)
    try:
        conn = Conn(ports[0])
        stream = {"name": "IDLE", "subjects": ["idle.msgs"], "num_replicas": 3, "storage": "file",
                  "max_consumers": consumers}
        api(conn, b"$JS.API.STREAM.CREATE.IDLE", stream, time.time() + 60)
        for _ in range(100):
            conn.request(b"idle.msgs", b"x" * 128)
        started = time.time()
        sent = answered = failed = 0
        conn.s.settimeout(30)
        while answered < consumers:
            while sent < consumers and sent - answered < IN_FLIGHT:
                body = json.dumps({"stream_name": "IDLE", "config": {
                    "durable_name": f"I{sent}", "ack_policy": "explicit", "num_replicas": 3,
                    "deliver_policy": "all"}}).encode()
                conn.s.sendall(b"PUB $JS.API.CONSUMER.CREATE.IDLE.I%d _INBOX.r3.%d %d\r\n%s\r\n"
                               % (sent, sent, len(body), body))
                sent += 1
            reply = conn.message()
            answered += 1
            failed += b'"error"' in reply
        creation = time.time() - started
        time.sleep(SETTLE)
        before = sum(cpu_seconds(p.pid) for p in procs)
        at = time.time()
        time.sleep(window)
        cpu = (sum(cpu_seconds(p.pid) for p in procs) - before) / (time.time() - at)
        rss = sum(rss_bytes(p.pid) for p in procs)
        return consumers - failed, creation, cpu, rss
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except Exception:
                p.kill()


def main():
    args = sys.argv[1:]
    ours, ref = args[0], args[1]
    consumers = int(args[args.index("--consumers") + 1]) if "--consumers" in args else 2000
    window = float(args[args.index("--window") + 1]) if "--window" in args else 60
    results = {}
    for label, binary in (("ours", ours), ("nats-server", ref)):
        results[label] = measure(binary, consumers, window)
        created, creation, cpu, rss = results[label]
        print(f"{label}: {created} R3 consumers created in {creation:.1f} s; idle CPU over {window:.0f} s "
              f"{cpu * 100:.2f} % of a core (3 nodes); RSS {rss / 2**20:.0f} MiB (3 nodes)", flush=True)
    (_, _, cpu_o, rss_o), (_, _, cpu_r, rss_r) = results["ours"], results["nats-server"]
    print(f"ours/nats-server: idle CPU {cpu_o / cpu_r:.3f}, RSS {rss_o / rss_r:.2f}")


if __name__ == "__main__":
    main()
