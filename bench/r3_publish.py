#!/usr/bin/env python3
"""R3 publish figures on a 3-node cluster on loopback: an R3 file stream, 128 B messages published
to the stream leader's node in pipelined windows (1,000 by default: publish a window, wait for all
its PubAcks; msgs/s), then one at a time (PubAck p50/p99), and the three servers' CPU per message
over the windows (from /proc). Raw NATS protocol over sockets; the same script drives either
server binary. With --cli NATS the windows are our CLI's `nats bench js pub async --batch W`
(async-nats, natscli's mode) instead of the raw client.

Usage: r3_publish.py SERVER_BINARY [--sync-always] [--msgs N] [--requests R] [--window W] [--cli NATS]
       r3_publish.py --alternate OURS[,OURS2...] REF [--rounds K] [--msgs N] [--requests R] [--window W] [--cli NATS]
The second form runs, K times in turn, each OURS (default sync: durable quorum), REF (nats-server's
default) and REF with `sync_interval: always`, then prints each one's runs and medians.
R3_KEEP=1 keeps each run's directory (configs, stores, logs); with RNATS_RAFT_TIMELINE=1 our
servers' logs hold the replication timeline (nats-raft `timeline.rs`)."""
import json, os, re, shutil, socket, statistics, subprocess, sys, tempfile, time

from cluster_bench import cpu_seconds  # the servers' CPU from /proc, as that bench reads it

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def start_cluster(binary, workdir, sync_always):
    ports = [(free_port(), free_port()) for _ in range(3)]
    procs = []
    for i, (client, route) in enumerate(ports):
        routes = ", ".join(f'"nats://127.0.0.1:{r}"' for j, (_, r) in enumerate(ports) if j != i)
        sync = "sync_interval: always" if sync_always else ""
        config = os.path.join(workdir, f"n{i}.conf")
        with open(config, "w") as f:
            f.write(f"""server_name: n{i}
listen: 127.0.0.1:{client}
jetstream {{ store_dir: "{workdir}/s{i}", {sync} }}
cluster {{ name: R3, listen: 127.0.0.1:{route}, routes: [{routes}] }}
""")
        log = open(os.path.join(workdir, f"n{i}.log"), "w")
        procs.append(subprocess.Popen([binary, "-c", config], stdout=log, stderr=log))
    return procs, [c for c, _ in ports]

class Conn:
    def __init__(self, port):
        for _ in range(200):
            try:
                self.s = socket.create_connection(("127.0.0.1", port)); break
            except OSError: time.sleep(0.05)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.line()
        self.s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\nSUB _INBOX.r3.* 1\r\n')
    def fill(self):
        d = self.s.recv(1 << 20)
        if not d: raise EOFError
        self.buf += d
    def line(self):
        while b"\r\n" not in self.buf: self.fill()
        l, self.buf = self.buf.split(b"\r\n", 1); return l
    def message(self):
        """The next MSG's payload (PINGs answered)."""
        while True:
            l = self.line()
            if l.startswith(b"PING"): self.s.sendall(b"PONG\r\n"); continue
            if not l.startswith(b"MSG"): continue
            size = int(l.split()[-1])
            while len(self.buf) < size + 2: self.fill()
            body, self.buf = self.buf[:size], self.buf[size + 2:]
            return body
    def request(self, subject, body, timeout=5):
        self.s.settimeout(timeout)
        self.s.sendall(b"PUB %s _INBOX.r3.req %d\r\n%s\r\n" % (subject, len(body), body))
        return self.message()

def option(args, name, default):
    return type(default)(args[args.index(name) + 1]) if name in args else default

def run_once(binary, sync_always, msgs, requests, window, cli):
    """One cluster: its windows' msgs/s, CPU per message (us) and one-at-a-time p50/p99 (us)."""
    workdir = tempfile.mkdtemp(prefix="r3bench-")
    procs, ports = start_cluster(binary, workdir, sync_always)
    try:
        conn = Conn(ports[0])
        config = json.dumps({"name": "R3", "subjects": ["r3.>"], "num_replicas": 3, "storage": "file"}).encode()
        deadline = time.time() + 60
        reply = None
        while True:
            try:
                reply = json.loads(conn.request(b"$JS.API.STREAM.CREATE.R3", config, timeout=5))
                if "error" not in reply: break
            except (socket.timeout, EOFError): pass
            if time.time() > deadline: sys.exit(f"no R3 stream: {reply}")
            time.sleep(0.5)
        while True:
            info = json.loads(conn.request(b"$JS.API.STREAM.INFO.R3", b""))
            leader = info.get("cluster", {}).get("leader")
            if leader: break
            if time.time() > deadline: sys.exit("no R3 stream leader")
            time.sleep(0.2)
        leader_port = ports[int(leader[1:])]
        leader_conn = Conn(leader_port)
        leader_conn.request(b"r3.warm", b"x")
        payload = b"x" * 128
        cpu_before = cpu_seconds(procs)
        if cli:
            out = subprocess.run([cli, "-s", f"nats://127.0.0.1:{leader_port}", "bench", "js", "pub", "async",
                                  "r3.a", "--stream", "R3", "--msgs", str(msgs), "--batch", str(window),
                                  "--no-progress"], capture_output=True, text=True, timeout=600)
            found = re.search(r"([\d,]+) msgs/sec", out.stdout)
            if out.returncode != 0 or not found:
                sys.exit(f"nats bench failed: {out.stdout}{out.stderr}")
            rate = int(found.group(1).replace(",", ""))
        else:
            started = time.time()
            sent = 0
            while sent < msgs:
                batch = b"".join(b"PUB r3.a _INBOX.r3.%d 128\r\n%s\r\n" % (sent + i, payload) for i in range(window))
                leader_conn.s.sendall(batch)
                for _ in range(window):
                    body = leader_conn.message()
                    if b'"seq"' not in body or b"error" in body: sys.exit(f"bad ack: {body!r}")
                sent += window
            rate = msgs / (time.time() - started)
        cpu_per_msg = (cpu_seconds(procs) - cpu_before) / msgs * 1e6
        latencies = []
        for _ in range(requests):
            t = time.perf_counter()
            leader_conn.request(b"r3.b", payload)
            latencies.append(time.perf_counter() - t)
        latencies.sort()
        p50 = latencies[len(latencies) // 2] * 1e6 if latencies else 0
        p99 = latencies[len(latencies) * 99 // 100] * 1e6 if latencies else 0
        return {"rate": rate, "cpu": cpu_per_msg, "p50": p50, "p99": p99}
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try: p.wait(timeout=10)
            except subprocess.TimeoutExpired: p.kill(); p.wait()
        if os.environ.get("R3_KEEP"):
            print(f"kept {workdir} (servers' logs n0.log..n2.log)", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

def main():
    args = sys.argv[1:]
    msgs = option(args, "--msgs", 50000)
    requests = option(args, "--requests", 2000)
    window = option(args, "--window", 1000)
    cli = option(args, "--cli", "")
    how = f"our CLI's bench js pub async --batch {window}" if cli else f"windows of {window}"
    if "--alternate" in args:
        at = args.index("--alternate")
        ours, ref = args[at + 1].split(","), args[at + 2]
        rounds = option(args, "--rounds", 3)
        names = ["ours"] if len(ours) == 1 else [f"ours {os.path.basename(b)}" for b in ours]
        cases = [(name, binary, False) for name, binary in zip(names, ours)]
        cases += [("nats-server", ref, False), ("nats-server always", ref, True)]
        results = {name: [] for name, _, _ in cases}
        for round_ in range(rounds):
            for name, binary, always in cases:
                load = os.getloadavg()[0]
                r = run_once(binary, always, msgs, requests, window, cli)
                r["load"] = load
                results[name].append(r)
                print(f"round {round_ + 1} {name}: {r['rate']:,.0f} msgs/s, {r['cpu']:.1f} us CPU/msg, "
                      f"p50 {r['p50']:.0f} us, p99 {r['p99']:.0f} us (load {load:.1f})", flush=True)
        print(f"R3 file, 128 B, {msgs:,} msgs, {how}; medians of {rounds}:")
        median = {name: statistics.median(r["rate"] for r in rs) for name, rs in results.items()}
        for name, rs in results.items():
            print(f"  {name}: {median[name]:,.0f} msgs/s, {statistics.median(r['cpu'] for r in rs):.1f} us CPU/msg, "
                  f"p50 {statistics.median(r['p50'] for r in rs):.0f} us, p99 {statistics.median(r['p99'] for r in rs):.0f} us")
        for name in names:
            print(f"  {name} / nats-server: {median[name] / median['nats-server']:.2f}; "
                  f"/ nats-server always: {median[name] / median['nats-server always']:.2f}; per round: "
                  + ", ".join(f"{a['rate'] / b['rate']:.2f} / {a['rate'] / c['rate']:.2f}" for a, b, c in
                              zip(results[name], results["nats-server"], results["nats-server always"])))
        return
    binary = args[0]
    sync_always = "--sync-always" in args
    r = run_once(binary, sync_always, msgs, requests, window, cli)
    mode = "sync_interval: always" if sync_always else "default sync"
    print(f"{os.path.basename(binary)} R3 file ({mode}), 128 B, {how}: {r['rate']:,.0f} msgs/s, "
          f"{r['cpu']:.1f} us server CPU/msg; one at a time: p50 {r['p50']:.0f} us, p99 {r['p99']:.0f} us")

if __name__ == "__main__":
    main()
