#!/usr/bin/env python3
"""R3 publish figures on a 3-node cluster on loopback: an R3 file stream, 128 B messages published
to the stream leader's node in pipelined windows of 1,000 (msgs/s), then one at a time (PubAck
p50/p99). Raw NATS protocol over sockets; the same script drives either server binary.
Usage: r3_publish.py SERVER_BINARY [--sync-always] [--msgs N] [--requests R]"""
import json, os, re, shutil, socket, subprocess, sys, tempfile, time

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

def main():
    args = sys.argv[1:]
    binary = args[0]
    sync_always = "--sync-always" in args
    msgs = int(args[args.index("--msgs") + 1]) if "--msgs" in args else 50000
    requests = int(args[args.index("--requests") + 1]) if "--requests" in args else 2000
    workdir = tempfile.mkdtemp(prefix="r3bench-")
    procs, ports = start_cluster(binary, workdir, sync_always)
    try:
        conn = Conn(ports[0])
        config = json.dumps({"name": "R3", "subjects": ["r3.>"], "num_replicas": 3, "storage": "file"}).encode()
        deadline = time.time() + 60
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
            time.sleep(0.2)
        leader_conn = Conn(ports[int(leader[1:])])
        leader_conn.request(b"r3.warm", b"x")
        payload = b"x" * 128
        window = 1000
        started = time.time()
        sent = 0
        while sent < msgs:
            batch = b"".join(b"PUB r3.a _INBOX.r3.%d 128\r\n%s\r\n" % (sent + i, payload) for i in range(window))
            leader_conn.s.sendall(batch)
            for _ in range(window):
                body = leader_conn.message()
                if b'"seq"' not in body or b"error" in body: sys.exit(f"bad ack: {body!r}")
            sent += window
        elapsed = time.time() - started
        latencies = []
        for _ in range(requests):
            t = time.perf_counter()
            leader_conn.request(b"r3.b", payload)
            latencies.append(time.perf_counter() - t)
        latencies.sort()
        mode = "sync_interval: always" if sync_always else "default sync"
        print(f"{os.path.basename(binary)} R3 file ({mode}), 128 B, windows of {window}: {msgs / elapsed:,.0f} msgs/s; "
              f"one at a time: p50 {latencies[len(latencies) // 2] * 1e6:.0f} us, p99 {latencies[len(latencies) * 99 // 100] * 1e6:.0f} us")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try: p.wait(timeout=10)
            except subprocess.TimeoutExpired: p.kill(); p.wait()
        shutil.rmtree(workdir, ignore_errors=True)

if __name__ == "__main__":
    main()
