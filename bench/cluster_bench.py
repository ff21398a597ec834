#!/usr/bin/env python3
"""Cross-node figures for a 3-node cluster on loopback: pub on node 0 -> sub on node 1 (msgs/s),
fan-out (pub on node 0, one sub on each of nodes 1 and 2), request/reply (requester on node 0,
responder on node 2, p50/p99), and the CPU time the three server processes spent per message
(user + system from /proc: a figure a loaded machine distorts far less than the rates). Raw NATS
protocol over sockets; the same script drives either server binary.
Usage: cluster_bench.py SERVER_BINARY [--msgs N] [--size B] [--requests R]"""
import os, socket, subprocess, sys, tempfile, threading, time

def cpu_seconds(procs):
    """User + system CPU seconds the server processes used so far (from /proc)."""
    total = 0
    for p in procs:
        with open(f"/proc/{p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def start_cluster(binary, workdir):
    ports = [(free_port(), free_port()) for _ in range(3)]
    procs = []
    for i, (client, route) in enumerate(ports):
        routes = ",".join(f"nats://127.0.0.1:{r}" for j, (_, r) in enumerate(ports) if j != i)
        log = open(os.path.join(workdir, f"n{i}.log"), "w")
        procs.append(subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(client), "-n", f"n{i}",
            "--cluster", f"nats://127.0.0.1:{route}", "--cluster_name", "BENCH", "--routes", routes],
            stdout=log, stderr=log))
    return procs, [c for c, _ in ports]

class Conn:
    def __init__(self, port):
        for _ in range(100):
            try:
                self.s = socket.create_connection(("127.0.0.1", port)); break
            except OSError: time.sleep(0.05)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.line()
        self.s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\n')
    def line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(1 << 20)
            if not d: raise EOFError
            self.buf += d
        l, self.buf = self.buf.split(b"\r\n", 1); return l
    def ping(self):
        self.s.sendall(b"PING\r\n")
        while True:
            l = self.line()
            if l == b"PONG": return
            if l == b"PING": self.s.sendall(b"PONG\r\n")

def pubsub(ports, msgs, size, fanout):
    subs = [Conn(ports[1])] + ([Conn(ports[2])] if fanout else [])
    for s in subs:
        s.s.sendall(b"SUB bench 1\r\nSUB ready 2\r\n"); s.ping()
    pub = Conn(ports[0])
    # Interest barrier: publish 'ready' until every subscriber saw one.
    for s in subs:
        s.s.settimeout(0.05)
        while True:
            pub.s.sendall(b"PUB ready 0\r\n\r\n"); pub.ping()
            try:
                l = s.line()
                if l.startswith(b"MSG ready"): s.line(); break
            except socket.timeout: pass
        s.s.settimeout(None)
        time.sleep(0.1); s.buf = b""
        s.s.setblocking(True)
    # drain stray ready messages
    for s in subs:
        s.s.settimeout(0.2)
        try:
            while s.s.recv(1 << 20): pass
        except socket.timeout: pass
        s.s.settimeout(None); s.buf = b""
    payload = b"x" * size
    frame = b"PUB bench %d\r\n" % size + payload + b"\r\n"
    msg_len = len(b"MSG bench 1 %d\r\n" % size) + size + 2
    chunk = frame * 1000
    done = [0.0] * len(subs)
    def reader(i, s):
        want = msgs * msg_len; got = 0
        while got < want:
            d = s.s.recv(1 << 22)
            if not d: break
            got += len(d)
        done[i] = time.perf_counter()
    threads = [threading.Thread(target=reader, args=(i, s)) for i, s in enumerate(subs)]
    for t in threads: t.start()
    start = time.perf_counter()
    for _ in range(msgs // 1000): pub.s.sendall(chunk)
    for t in threads: t.join(60)
    elapsed = max(done) - start
    return msgs / elapsed

def request_reply(ports, requests):
    responder = Conn(ports[2]); responder.s.sendall(b"SUB svc 1\r\n"); responder.ping()
    def respond():
        try:
            while True:
                l = responder.line()
                if l.startswith(b"MSG svc"):
                    parts = l.split(); reply = parts[3]; responder.line()
                    responder.s.sendall(b"PUB " + reply + b" 2\r\nok\r\n")
                elif l == b"PING": responder.s.sendall(b"PONG\r\n")
        except (EOFError, OSError): pass
    threading.Thread(target=respond, daemon=True).start()
    req = Conn(ports[0]); req.s.sendall(b"SUB inbox.* 1\r\n"); req.ping()
    lat = []
    deadline = time.time() + 10
    # warm-up until the responder's interest arrived
    while time.time() < deadline:
        req.s.sendall(b"PUB svc inbox.w 2\r\nhi\r\n"); req.s.settimeout(0.1)
        try:
            l = req.line()
            if l.startswith(b"MSG inbox.w"): req.line(); break
        except socket.timeout: pass
    req.s.settimeout(None)
    for i in range(requests):
        t = time.perf_counter()
        req.s.sendall(b"PUB svc inbox.%d 2\r\nhi\r\n" % i)
        while True:
            l = req.line()
            if l.startswith(b"MSG inbox."):
                req.line(); break
        lat.append(time.perf_counter() - t)
    lat.sort()
    return lat[len(lat) // 2] * 1e6, lat[int(len(lat) * 0.99)] * 1e6

def main():
    binary = sys.argv[1]
    msgs = 500_000; size = 128; requests = 5000
    args = sys.argv[2:]
    for k, v in zip(args[::2], args[1::2]):
        if k == "--msgs": msgs = int(v)
        if k == "--size": size = int(v)
        if k == "--requests": requests = int(v)
    with tempfile.TemporaryDirectory() as work:
        procs, ports = start_cluster(binary, work)
        try:
            time.sleep(1.5)
            before = cpu_seconds(procs)
            rate = pubsub(ports, msgs, size, False)
            cpu_pubsub = (cpu_seconds(procs) - before) / msgs * 1e6
            before = cpu_seconds(procs)
            fan = pubsub(ports, msgs, size, True)
            cpu_fan = (cpu_seconds(procs) - before) / (2 * msgs) * 1e6
            p50, p99 = request_reply(ports, requests)
            print(f"{binary}: "
                  f"cross-node pub->sub {rate:,.0f} msgs/s; fan-out to 2 nodes {fan:,.0f} msgs/s; "
                  f"request/reply p50 {p50:.0f} us p99 {p99:.0f} us; "
                  f"server CPU per message: pub->sub {cpu_pubsub:.2f} us, fan-out {cpu_fan:.2f} us per delivery")
        finally:
            for p in procs: p.terminate()
            for p in procs: p.wait(5)

if __name__ == "__main__":
    main()
