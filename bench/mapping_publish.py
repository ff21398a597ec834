#!/usr/bin/env python3
"""Core publish through a subject mapping (issue 16), ours beside nats-server in the same run.
Each server is started alone with `-a 127.0.0.1 -p PORT -c CONF`, the config holding one
transform mapping (`in.*.*` -> `out.$2.$1`, parsed as nats-server parses it). One raw-socket
subscriber on `out.>` counts deliveries; one raw-socket publisher writes N `PUB in.<a>.<b>`
lines in large writes. The rate is N / (time from the first write to the last delivery).
A second row publishes to `out.b.a<i>` directly (no mapping) as the control. `--before BINARY`
adds an older build of ours to the same run (the before/after of a change).
Usage: mapping_publish.py OURS_BINARY REF_BINARY [--before BINARY] [--messages N] [--rounds R]"""
import argparse, os, subprocess, sys, tempfile, threading, time
from rawnats import count_msgs, free_port, open_socket, wait_pong

CONFIG = 'mappings { "in.*.*": "out.$2.$1" }\n'


def connect(port):
    return open_socket(port)[0]


def run_once(port, messages, mapped):
    sub = connect(port)
    sub.sendall(b'CONNECT {"verbose":false}\r\nSUB out.> 1\r\nPING\r\n')
    wait_pong(sub)
    pub = connect(port)
    pub.sendall(b'CONNECT {"verbose":false}\r\nPING\r\n')
    wait_pong(pub)
    subject = b"in.a%d.b" if mapped else b"out.b.a%d"
    lines = [b"PUB " + (subject % (i % 100)) + b" 2\r\nhi\r\n" for i in range(1000)]
    block = b"".join(lines)
    done = threading.Event()

    def count():
        count_msgs(sub, messages)
        done.set()

    reader = threading.Thread(target=count, daemon=True)
    reader.start()
    started = time.perf_counter()
    for _ in range(messages // 1000):
        pub.sendall(block)
    if not done.wait(120):
        raise RuntimeError("deliveries missing")
    elapsed = time.perf_counter() - started
    pub.close(); sub.close()
    return messages / elapsed


def measure_once(binary, messages):
    with tempfile.TemporaryDirectory() as directory:
        conf = os.path.join(directory, "map.conf")
        open(conf, "w").write(CONFIG)
        port = free_port()
        server = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(port), "-c", conf],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            return {mapped: run_once(port, messages, mapped) for mapped in (True, False)}
        finally:
            server.terminate(); server.wait()


def measure(binaries, messages, rounds):
    """Each round runs every binary once, in turn, so load changes hit all of them alike;
    the median round per binary and row is kept."""
    rates = {name: {True: [], False: []} for name in binaries}
    for _ in range(rounds):
        for name, binary in binaries.items():
            for mapped, rate in measure_once(binary, messages).items():
                rates[name][mapped].append(rate)
    return {name: {mapped: sorted(values)[len(values) // 2] for mapped, values in rows.items()}
            for name, rows in rates.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ours"); parser.add_argument("reference")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before")
    args = parser.parse_args()
    binaries = {"ours": args.ours, "reference": args.reference}
    if args.before:
        binaries["before"] = args.before
    rates = measure(binaries, args.messages, args.rounds)
    ours, reference, before = rates["ours"], rates["reference"], rates.get("before")
    for mapped, label in ((True, "pub through mapping"), (False, "pub, no mapping")):
        line = (f"{label:22} nats-server {reference[mapped]:>12,.0f} msgs/s  ours {ours[mapped]:>12,.0f} msgs/s"
                f"  ratio {ours[mapped] / reference[mapped]:.2f}")
        if before:
            line += (f"  before {before[mapped]:>12,.0f} msgs/s"
                     f"  after/before {ours[mapped] / before[mapped]:.2f}")
        print(line)


if __name__ == "__main__":
    sys.exit(main())
