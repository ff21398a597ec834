#!/usr/bin/env python3
"""Key-Value bucket creation (issue 21), several binaries alternated in one run: each round starts
every binary alone on a fresh store (`-a 127.0.0.1 -p PORT -js -sd STORE`, the order rotated from
round to round), creates N buckets with the STREAM.CREATE a Key-Value client sends
(`api_rates.kv_config`) keeping W requests in flight, then deletes them. Reports the creation
rate and the per-request latency (send to answer) of each binary in each round, the medians, and
each binary's ratio to the first one named.
With --sample, the server's threads are sampled every 5 ms during the creations
(`/proc/PID/task/*/stat` state and `wchan`): where the threads wait, per binary.
Usage: api_rates_kv.py NAME=BINARY [NAME=BINARY ...] [--buckets N] [--window W] [--rounds R]
                       [--sample] [--store-dir DIR]"""
import argparse, collections, os, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from api_rates import Conn, kv_config, start_server, stop_server  # noqa: E402


def percentile(values, fraction):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * fraction))]


def timed_run(conn, requests, window):
    """As `Conn.run`, also keeping each request's latency (seconds)."""
    sent_at = {}
    latencies = []
    sent = 0
    start = time.perf_counter()
    while sent < len(requests) or sent_at:
        out = []
        while sent < len(requests) and len(sent_at) < window:
            subject, body = requests[sent]
            payload = body.encode()
            conn.next_id += 1
            sent_at[conn.next_id] = time.perf_counter()
            out.append(b"PUB %s _INBOX.api.%d %d\r\n%s\r\n" % (
                subject.encode(), conn.next_id, len(payload), payload))
            sent += 1
        if out:
            conn.s.sendall(b"".join(out))
        number, answer = conn.read_answer()
        latencies.append(time.perf_counter() - sent_at.pop(number))
        if "error" in answer:
            raise RuntimeError(f"API error: {answer['error']}")
    return time.perf_counter() - start, latencies


class Sampler(threading.Thread):
    """Counts (thread name, state, wchan) of every thread of `pid` every 5 ms until stopped."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.counts, self.stop, self.samples = pid, collections.Counter(), False, 0

    def run(self):
        base = f"/proc/{self.pid}/task"
        while not self.stop:
            try:
                tasks = os.listdir(base)
            except OSError:
                return
            for task in tasks:
                try:
                    with open(f"{base}/{task}/stat") as f:
                        stat = f.read()
                    with open(f"{base}/{task}/wchan") as f:
                        wchan = f.read().strip() or "-"
                except OSError:
                    continue
                name = stat[stat.index("(") + 1:stat.rindex(")")]
                state = stat[stat.rindex(")") + 2]
                if state == "S" and wchan in ("futex_wait_queue", "futex_wait_queue_me", "futex_do_wait",
                                              "do_epoll_wait", "ep_poll", "hrtimer_nanosleep"):
                    continue  # idle
                # Runtime workers and blocking-pool threads alike, by role.
                name = name.rstrip("0123456789-")
                self.counts[(name, state, wchan)] += 1
            self.samples += 1
            time.sleep(0.005)


def measure(binary, args):
    work = tempfile.mkdtemp(prefix="api-kv-", dir=args.store_dir)
    server, port, log = start_server(binary, work)
    try:
        conn = Conn(port)
        buckets = [f"B{i}" for i in range(args.buckets)]
        create = [(f"$JS.API.STREAM.CREATE.KV_{name}", kv_config(name)) for name in buckets]
        sampler = Sampler(server.pid) if args.sample else None
        if sampler:
            sampler.start()
        seconds, latencies = timed_run(conn, create, args.window)
        if sampler:
            sampler.stop = True
            sampler.join()
        timed_run(conn, [(f"$JS.API.STREAM.DELETE.KV_{name}", "") for name in buckets], args.window)
        conn.s.close()
    finally:
        stop_server(server, log, work)
    return args.buckets / seconds, latencies, sampler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binaries", nargs="+", help="NAME=BINARY")
    parser.add_argument("--buckets", type=int, default=500)
    parser.add_argument("--window", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sample", action="store_true")
    parser.add_argument("--store-dir", default=None, help="where the stores go (default: $TMPDIR)")
    args = parser.parse_args()
    named = [entry.split("=", 1) for entry in args.binaries]

    rates = collections.defaultdict(list)
    for round_number in range(args.rounds):
        shift = round_number % len(named)
        for name, binary in named[shift:] + named[:shift]:
            rate, latencies, sampler = measure(binary, args)
            rates[name].append(rate)
            print(f"round {round_number + 1} {name}: {rate:.0f} creates/s, latency p50 "
                  f"{percentile(latencies, 0.5) * 1e3:.1f} ms p99 {percentile(latencies, 0.99) * 1e3:.1f} ms "
                  f"max {max(latencies) * 1e3:.1f} ms (load {os.getloadavg()[0]:.1f})", flush=True)
            if sampler:
                total = sum(sampler.counts.values())
                for (thread, state, wchan), count in sampler.counts.most_common(12):
                    print(f"    {count * 100 / max(sampler.samples, 1):5.1f}% of samples  {thread} "
                          f"{state} {wchan}")
                print(f"    ({sampler.samples} samples, {total} busy thread sightings)")
    first = named[0][0]
    base = sorted(rates[first])[len(rates[first]) // 2]
    print(f"| binary | creates/s per round | median | / {first} |")
    print("| --- | --- | --- | --- |")
    for name, _ in named:
        median = sorted(rates[name])[len(rates[name]) // 2]
        print(f"| {name} | {', '.join(f'{r:.0f}' for r in rates[name])} | {median:.0f} | "
              f"{median / base:.2f} |")


if __name__ == "__main__":
    main()
