#!/usr/bin/env python3
"""What monitoring scrapes cost (issue 18), ours beside nats-server in the same run: with 1,000
streams and 10,000 durable consumers, the latency of `GET /jsz?streams=true&consumers=true` (both
servers) and of `GET /metrics` (ours; nats-server has none: Prometheus users run
prometheus-nats-exporter, which polls the same JSON endpoints), the server CPU time per scrape, and
the throughput of a JetStream publishing workload with and without back-to-back scraping beside it.

Each server is started alone with the same flags (`-a 127.0.0.1 -p PORT -m HTTP -js -sd STORE`);
streams are memory streams `S<i>` on `S<i>.>`, each with ten durable pull consumers (explicit ack).
The workload publishes 128-byte messages round-robin over the streams with replies (PubAcks), up to
`--window` in flight, over raw sockets (bench/api_rates.py's client); the scraper runs in a process
of its own, fetching one URL back to back for as long as the workload runs.
Ratios: ours / nats-server for rates (> 1: ours better), nats-server / ours for times.
Usage: scrape.py OURS_BINARY REF_BINARY [--streams N] [--consumers-per-stream C]
                 [--messages M] [--scrapes K] [--window W]"""
import argparse, json, multiprocessing, os, shutil, statistics, subprocess, sys, tempfile, time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from api_rates import Conn, free_port  # noqa: E402


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fetch(url):
    """(seconds, bytes) of one GET."""
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as answer:
        body = answer.read()
        if answer.status != 200:
            raise RuntimeError(f"{url}: HTTP {answer.status}")
    return time.perf_counter() - start, len(body)


def scrape_loop(url, stop, results):
    latencies = []
    while not stop.is_set():
        latencies.append(fetch(url)[0])
    results.put(latencies)


def publish(conn, streams, messages, window):
    payload = "x" * 128
    requests = [(f"S{n % streams}.m", payload) for n in range(messages)]
    return messages / conn.run(requests, window)


def with_scraping(conn, url, streams, messages, window):
    """(workload rate, scrape latencies) with one process scraping `url` back to back."""
    stop = multiprocessing.Event()
    results = multiprocessing.Queue()
    scraper = multiprocessing.Process(target=scrape_loop, args=(url, stop, results))
    scraper.start()
    try:
        rate = publish(conn, streams, messages, window)
    finally:
        stop.set()
    latencies = results.get(timeout=120)
    scraper.join(timeout=60)
    return rate, latencies


def measure(binary, args, ours):
    work = tempfile.mkdtemp(prefix="scrape-")
    port, http = free_port(), free_port()
    log = open(os.path.join(work, "server.log"), "w")
    server = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(port), "-m", str(http), "-js",
                               "-sd", os.path.join(work, "store")], stdout=log, stderr=log)
    rows = {}
    try:
        conn = Conn(port)
        n, c = args.streams, args.consumers_per_stream
        conn.run([(f"$JS.API.STREAM.CREATE.S{i}",
                   json.dumps({"name": f"S{i}", "subjects": [f"S{i}.>"], "storage": "memory"}))
                  for i in range(n)], args.window)
        consumers = []
        for i in range(n):
            for j in range(c):
                config = {"durable_name": f"C{j}", "ack_policy": "explicit"}
                consumers.append((f"$JS.API.CONSUMER.CREATE.S{i}.C{j}",
                                  json.dumps({"stream_name": f"S{i}", "config": config})))
        conn.run(consumers, args.window)
        publish(conn, n, n, args.window)  # one message per stream before the first scrape

        urls = {"jsz": f"http://127.0.0.1:{http}/jsz?streams=true&consumers=true"}
        if ours:
            urls["metrics"] = f"http://127.0.0.1:{http}/metrics"
        for name, url in urls.items():
            fetch(url)
            before = cpu_seconds(server.pid)
            samples = [fetch(url) for _ in range(args.scrapes)]
            cpu = (cpu_seconds(server.pid) - before) / args.scrapes
            rows[f"{name} latency p50 (ms)"] = statistics.median(s[0] for s in samples) * 1000
            rows[f"{name} server CPU per scrape (ms)"] = cpu * 1000
            rows[f"{name} size (KiB)"] = samples[-1][1] / 1024

        rows["publish alone (msgs/s)"] = publish(conn, n, args.messages, args.window)
        for name, url in urls.items():
            rate, latencies = with_scraping(conn, url, n, args.messages, args.window)
            rows[f"publish while scraping {name} (msgs/s)"] = rate
            rows[f"publish kept while scraping {name} (%)"] = (
                100 * rate / rows["publish alone (msgs/s)"])
            rows[f"{name} scrapes during the workload"] = len(latencies)
        conn.s.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("ours")
    parser.add_argument("ref")
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--consumers-per-stream", type=int, default=10)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--scrapes", type=int, default=10)
    parser.add_argument("--window", type=int, default=256)
    args = parser.parse_args()
    ref = measure(args.ref, args, ours=False)
    ours = measure(args.ours, args, ours=True)
    higher_better = ("msgs/s", "(%)", "during the workload")
    print(f"{args.streams} streams x {args.consumers_per_stream} consumers, "
          f"{args.messages} publishes of 128 B with acks, window {args.window}")
    print(f"| figure | nats-server | rnats | ratio |")
    print(f"|---|---:|---:|---:|")
    for key in ours:
        theirs = ref.get(key)
        if theirs is None:
            print(f"| {key} | - | {ours[key]:,.1f} | - |")
            continue
        if any(marker in key for marker in higher_better):
            ratio = ours[key] / theirs if theirs else float("inf")
        else:
            ratio = theirs / ours[key] if ours[key] else float("inf")
        print(f"| {key} | {theirs:,.1f} | {ours[key]:,.1f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
