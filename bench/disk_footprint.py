#!/usr/bin/env python3
"""Disk footprint of a file stream (issue 21), ours beside nats-server in the same run: N messages
of SIZE bytes on K subjects (`d.<i mod K>`) published over a raw socket without replies into one
file stream, then the server is stopped (a clean shutdown: both write their index files) and the
store directory is measured: the total and the bytes per file kind (block files, index files...).
Each server is started alone with the same flags (`-a 127.0.0.1 -p PORT -js -sd STORE`).
ratio = ours / nats-server (lower is better).
Usage: disk_footprint.py OURS_BINARY REF_BINARY [--messages N] [--subjects K] [--size SIZE]"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import api_rates  # noqa: E402  (Conn, free_port)


def stream_info(conn):
    conn.next_id += 1
    conn.s.sendall(b"PUB $JS.API.STREAM.INFO.D _INBOX.api.%d 0\r\n\r\n" % conn.next_id)
    _, info = conn.read_answer()
    if "error" in info:
        raise RuntimeError(f"API error: {info['error']}")
    return info


def measure(binary, args):
    work = tempfile.mkdtemp(prefix="disk-footprint-")
    store = os.path.join(work, "store")
    port = api_rates.free_port()
    log = open(os.path.join(work, "server.log"), "w")
    server = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", store],
                              stdout=log, stderr=log)
    try:
        conn = api_rates.Conn(port)
        conn.run([("$JS.API.STREAM.CREATE.D", json.dumps(
            {"name": "D", "subjects": ["d.>"], "storage": "file"}))], 1)
        payload = b"x" * args.size
        chunk = 20_000
        for start in range(0, args.messages, chunk):
            end = min(args.messages, start + chunk)
            conn.s.sendall(b"".join(b"PUB d.%d %d\r\n%s\r\n" % (i % args.subjects, args.size, payload)
                                    for i in range(start, end)))
            # Wait for the server to catch up every chunk: its publish queue stays far from
            # its limit (a refused publish would be a missing message).
            deadline = time.time() + 60
            while stream_info(conn)["state"]["messages"] < end:
                if time.time() > deadline:
                    raise RuntimeError("messages not stored within 60 s")
                time.sleep(0.01)
        conn.s.close()
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill(); server.wait()
        log.close()
    kinds = {}
    total = 0
    for root, _, files in os.walk(store):
        for name in files:
            size = os.path.getsize(os.path.join(root, name))
            kind = name.rsplit(".", 1)[-1] if "." in name else name
            kinds[kind] = kinds.get(kind, 0) + size
            total += size
    shutil.rmtree(work, ignore_errors=True)
    return total, kinds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("ours")
    parser.add_argument("ref")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--subjects", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=128)
    args = parser.parse_args()
    mib = 1024 * 1024
    results = {side: measure(binary, args) for side, binary in (("ref", args.ref), ("ours", args.ours))}
    print(f"{args.messages} x {args.size} B on {args.subjects} subjects, file stream, after a clean stop")
    print("| server | total MiB | bytes per message | by file kind (MiB) |")
    print("| --- | --- | --- | --- |")
    for side in ("ref", "ours"):
        total, kinds = results[side]
        detail = ", ".join(f"{kind} {size / mib:.1f}" for kind, size in sorted(kinds.items())
                           if size >= mib // 10)
        print(f"| {'nats-server' if side == 'ref' else 'ours'} | {total / mib:.1f} | "
              f"{total / args.messages:.0f} | {detail} |")
    print(f"ratio ours / nats-server: {results['ours'][0] / results['ref'][0]:.2f} (lower is better)")


if __name__ == "__main__":
    main()
