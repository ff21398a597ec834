#!/usr/bin/env python3
"""$JS.API request rates (issue 21), ours beside nats-server in the same run: stream create and
delete (memory and file), Key-Value bucket create, consumer create and delete (ephemeral and
durable), STREAM.INFO, CONSUMER.INFO, and STREAM.NAMES / STREAM.LIST paged through while 10k
streams exist. Each server is started alone
with the same flags (`-a 127.0.0.1 -p PORT -js -sd STORE`) and driven over raw sockets with a
window of requests in flight (nats-server serves them on GOMAXPROCS goroutines, ours admin
requests one at a time on its admin thread). Every answer is decoded; an API error fails the run.
Rates are requests/s (pages/s for the paging rows); ratio = ours / nats-server (> 1: ours better);
CPU is the server process's user + system time per request (page) of the row, from /proc/PID/stat
(10 ms ticks; load moves it less than the rates); peak RSS is VmHWM after the whole sequence.
--groups runs part of the sequence: `memory` (the memory stream rows, INFO and the paging rows),
`file` (file stream create and delete), `kv` (KV bucket create), `consumers`; the KV row follows
the file rows' deletions (their spares, their trash) only when `file` runs too.
Usage: api_rates.py OURS_BINARY REF_BINARY [--streams N] [--file-streams N] [--buckets N] [--consumers N]
                    [--infos N] [--window W] [--rounds R] [--groups memory,file,kv,consumers]"""
import argparse, json, os, random, shutil, socket, subprocess, sys, tempfile, time


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def cpu_seconds(pid):
    """User + system CPU of process `pid` so far (its exited threads included)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Conn:
    """One client connection: requests go out with reply subjects `_INBOX.api.<n>` (one
    wildcard subscription), answers are matched by that number."""

    def __init__(self, port):
        for _ in range(200):
            try:
                self.s = socket.create_connection(("127.0.0.1", port)); break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError(f"no server on port {port}")
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.line()  # INFO
        self.s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\n'
                       b"SUB _INBOX.api.* 1\r\nPING\r\n")
        while self.line() != b"PONG":
            pass
        self.next_id = 0

    def fill(self):
        d = self.s.recv(1 << 20)
        if not d:
            raise EOFError("server closed the connection")
        self.buf += d

    def line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                l, self.buf = self.buf[:i], self.buf[i + 2:]
                return l
            self.fill()

    def read_answer(self):
        """The next answer: (request number, decoded JSON)."""
        while True:
            l = self.line()
            if l == b"PING":
                self.s.sendall(b"PONG\r\n"); continue
            if l.startswith(b"-ERR"):
                raise RuntimeError(l.decode())
            if not l.startswith(b"MSG ") and not l.startswith(b"HMSG "):
                continue
            parts = l.split()
            size = int(parts[-1])
            while len(self.buf) < size + 2:
                self.fill()
            body, self.buf = self.buf[:size], self.buf[size + 2:]
            if parts[0] == b"HMSG":
                header_size = int(parts[-2])
                status = body[:header_size].split(b"\r\n", 1)[0]
                raise RuntimeError(f"status answer {status!r} on {parts[1]!r}")
            return int(parts[1].rsplit(b".", 1)[1]), json.loads(body)

    def buffered_answer(self):
        """The next answer if it is wholly in the buffer already (no read), else None."""
        i = self.buf.find(b"\r\n")
        if i < 0:
            return None
        l = self.buf[:i]
        if l.startswith(b"MSG ") or l.startswith(b"HMSG "):
            if len(self.buf) < i + 2 + int(l.rsplit(b" ", 1)[1]) + 2:
                return None
        return self.read_answer()

    def run(self, requests, window):
        """Send (subject, body) requests with up to `window` in flight; returns the seconds
        from the first send to the last answer. Any API error aborts."""
        pending = 0
        sent = 0
        start = time.perf_counter()
        while sent < len(requests) or pending:
            out = []
            while sent < len(requests) and pending < window:
                subject, body = requests[sent]
                payload = body.encode() if isinstance(body, str) else body
                self.next_id += 1
                out.append(b"PUB %s _INBOX.api.%d %d\r\n%s\r\n" % (
                    subject.encode(), self.next_id, len(payload), payload))
                sent += 1; pending += 1
            if out:
                self.s.sendall(b"".join(out))
            # Every answer already received is taken before the window is refilled, so
            # requests go out in batches (one write for several) rather than one per answer:
            # the client's own cost per request (a Python process on one CPU) otherwise capped
            # the fastest rows at ~25-30k/s, for both servers alike.
            answer = self.read_answer()[1]
            while True:
                pending -= 1
                if "error" in answer:
                    raise RuntimeError(f"API error: {answer['error']}")
                answered = self.buffered_answer() if pending else None
                if answered is None:
                    break
                answer = answered[1]
        return time.perf_counter() - start


def stream_config(name, storage):
    return json.dumps({"name": name, "subjects": [f"{name}.>"], "storage": storage,
                       "retention": "limits", "num_replicas": 1})


def kv_config(bucket):
    """The STREAM.CREATE a Key-Value client sends for a new bucket (nats.go's defaults,
    history 1, file storage)."""
    return json.dumps({"name": f"KV_{bucket}", "subjects": [f"$KV.{bucket}.>"], "storage": "file",
                       "retention": "limits", "max_msgs_per_subject": 1, "discard": "new",
                       "max_msgs": -1, "max_bytes": -1, "max_age": 0, "max_msg_size": -1,
                       "num_replicas": 1, "duplicate_window": 120_000_000_000,
                       "allow_rollup_hdrs": True, "deny_delete": True, "allow_direct": True,
                       "mirror_direct": False})


GROUPS = ("memory", "file", "kv", "consumers")


def scenario_rows(port, pid, args):
    """The sequence, one server: returns [(scenario, unit, rate, server CPU us per request)]."""
    conn = Conn(port)
    rows = []

    def row(name, unit, requests, window):
        cpu = cpu_seconds(pid)
        elapsed = conn.run(requests, window)
        rows.append((name, unit, len(requests) / elapsed,
                     (cpu_seconds(pid) - cpu) * 1e6 / len(requests)))

    n = args.streams
    names = [f"S{i}" for i in range(n)]
    rng = random.Random(7)
    if "memory" in args.groups:
        create = [(f"$JS.API.STREAM.CREATE.{name}", stream_config(name, "memory")) for name in names]
        row("stream create (memory)", "req/s", create, args.window)

        infos = [(f"$JS.API.STREAM.INFO.{rng.choice(names)}", "") for _ in range(args.infos)]
        row(f"STREAM.INFO ({n} streams)", "req/s", infos, args.window)

        names_pages = [("$JS.API.STREAM.NAMES", json.dumps({"offset": offset}))
                       for offset in range(0, n, 1024)] * args.page_passes
        row(f"STREAM.NAMES page ({n} streams)", "pages/s", names_pages, 1)
        # As many passes as for NAMES: one pass through 2,000 streams is 8 pages (~50 ms), which
        # one descheduling of either side on a loaded machine could halve.
        list_pages = [("$JS.API.STREAM.LIST", json.dumps({"offset": offset}))
                      for offset in range(0, n, 256)] * args.page_passes
        row(f"STREAM.LIST page ({n} streams)", "pages/s", list_pages, 1)

        delete = [(f"$JS.API.STREAM.DELETE.{name}", "") for name in names]
        row("stream delete (memory)", "req/s", delete, args.window)

    if "file" in args.groups:
        f = args.file_streams
        file_names = [f"F{i}" for i in range(f)]
        create = [(f"$JS.API.STREAM.CREATE.{name}", stream_config(name, "file"))
                  for name in file_names]
        row("stream create (file)", "req/s", create, args.window)
        delete = [(f"$JS.API.STREAM.DELETE.{name}", "") for name in file_names]
        row("stream delete (file)", "req/s", delete, args.window)

    if "kv" in args.groups:
        b = args.buckets
        buckets = [f"B{i}" for i in range(b)]
        create = [(f"$JS.API.STREAM.CREATE.KV_{name}", kv_config(name)) for name in buckets]
        row("KV bucket create (file)", "req/s", create, args.window)
        conn.run([(f"$JS.API.STREAM.DELETE.KV_{name}", "") for name in buckets], args.window)

    c = args.consumers
    for storage in ("memory", "file") if "consumers" in args.groups else ():
        stream = f"CONSUMERS_{storage.upper()}"
        conn.run([(f"$JS.API.STREAM.CREATE.{stream}", stream_config(stream, storage))], 1)
        for kind in ("ephemeral", "durable"):
            consumers = [f"{kind[0]}{i}" for i in range(c)]
            def body(name):
                config = {"name": name, "ack_policy": "explicit", "deliver_policy": "all"}
                if kind == "durable":
                    config["durable_name"] = name
                return json.dumps({"stream_name": stream, "config": config})
            create = [(f"$JS.API.CONSUMER.CREATE.{stream}.{name}", body(name)) for name in consumers]
            row(f"consumer create ({kind}, {storage})", "req/s", create, args.window)
            if kind == "durable":
                infos = [(f"$JS.API.CONSUMER.INFO.{stream}.{rng.choice(consumers)}", "")
                         for _ in range(args.infos)]
                row(f"CONSUMER.INFO ({storage}, {c} consumers)", "req/s", infos, args.window)
            delete = [(f"$JS.API.CONSUMER.DELETE.{stream}.{name}", "") for name in consumers]
            row(f"consumer delete ({kind}, {storage})", "req/s", delete, args.window)
        conn.run([(f"$JS.API.STREAM.DELETE.{stream}", "")], 1)
    conn.s.close()
    return rows


def start_server(binary, work):
    """Start `binary` alone on a fresh store under `work`: (process, port, log file)."""
    port = free_port()
    log = open(os.path.join(work, "server.log"), "w")
    server = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd",
                               os.path.join(work, "store")], stdout=log, stderr=log)
    return server, port, log


def stop_server(server, log, work):
    server.terminate()
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill(); server.wait()
    log.close()
    shutil.rmtree(work, ignore_errors=True)


def measure(binary, args):
    work = tempfile.mkdtemp(prefix="api-rates-")
    server, port, log = start_server(binary, work)
    try:
        rows = scenario_rows(port, server.pid, args)
        rss = peak_rss_mib(server.pid)
    finally:
        stop_server(server, log, work)
    return rows, rss


# Runs of one round on one server before the bench gives up.
ATTEMPTS = 6


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("ours")
    parser.add_argument("ref")
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--file-streams", type=int, default=1_000)
    parser.add_argument("--consumers", type=int, default=500)
    parser.add_argument("--buckets", type=int, default=500)
    parser.add_argument("--infos", type=int, default=10_000)
    parser.add_argument("--page-passes", type=int, default=5)
    parser.add_argument("--window", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", choices=["ours", "ref"], help="run one server only")
    parser.add_argument("--groups", default=",".join(GROUPS),
                        help="comma-separated parts of the sequence to run: " + ", ".join(GROUPS))
    args = parser.parse_args()
    args.groups = set(args.groups.split(","))
    unknown = args.groups - set(GROUPS)
    if unknown:
        parser.error(f"unknown groups {sorted(unknown)}: the groups are {', '.join(GROUPS)}")

    failures = []
    results = {"ours": [], "ref": []}
    rss = {"ours": [], "ref": []}
    for round_number in range(args.rounds):
        for side in ("ours", "ref"):
            if args.only and side != args.only:
                continue
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    rows, peak = measure(args.ours if side == "ours" else args.ref, args)
                    break
                except RuntimeError as error:
                    # nats-server 2.15.1 now and then refuses the file stream created right
                    # after its file stream deletes (10049); the round is run again from a
                    # fresh server and the failure reported.
                    failures.append(f"round {round_number + 1} {side} attempt {attempt}: {error}")
                    print(failures[-1], file=sys.stderr)
                    if attempt == ATTEMPTS:
                        raise
            results[side].append(rows)
            rss[side].append(peak)
            print(f"round {round_number + 1} {side}: " +
                  ", ".join(f"{name} {rate:.0f} ({cpu:.0f} us CPU)" for name, _, rate, cpu in rows),
                  file=sys.stderr)

    sides = [side for side in ("ref", "ours") if results[side]]
    first = results[sides[0]][0]
    both = len(sides) == 2
    label = {"ref": "nats-server", "ours": "ours"}
    print("| scenario | unit | " + " | ".join(label[s] for s in sides) + (" | ratio" if both else "")
          + " | " + " | ".join(f"CPU us/op {label[s]}" for s in sides) + (" | CPU ratio |" if both else " |"))
    columns = 2 + 2 * len(sides) + (2 if both else 0)
    print("|" + " --- |" * columns)
    for index, (name, unit, _, _) in enumerate(first):
        rates = {side: median([rows[index][2] for rows in results[side]]) for side in sides}
        cpus = {side: median([rows[index][3] for rows in results[side]]) for side in sides}
        cells = " | ".join(f"{rates[side]:.0f}" for side in sides)
        ratio = f" | {rates['ours'] / rates['ref']:.2f}" if both else ""
        cpu_cells = " | ".join(f"{cpus[side]:.0f}" for side in sides)
        # CPU ratio: nats-server's CPU per request over ours (> 1: ours spends less).
        cpu_ratio = (f" | {cpus['ref'] / cpus['ours']:.2f} |" if both and cpus["ours"] > 0
                     else " | - |" if both else " |")
        print(f"| {name} | {unit} | {cells}{ratio} | {cpu_cells}{cpu_ratio}")
    cells = " | ".join(f"{median(rss[side]):.0f}" for side in sides)
    ratio = (f" | {median(rss['ours']) / median(rss['ref']):.2f} (lower is better)" if both else "")
    print(f"| peak RSS | MiB | {cells}{ratio} |" + " |" * (len(sides) + (1 if both else 0)))
    for failure in failures:
        print(f"(retried: {failure})")


if __name__ == "__main__":
    main()
