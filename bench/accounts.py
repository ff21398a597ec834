#!/usr/bin/env python3
"""Accounts (issue 16): four figures, ours beside nats-server in the same run. Each server is
started alone with `-a 127.0.0.1 -p PORT -c CONF`; every round runs each binary once, in turn,
and the median round is kept.

- pubsub: 100 accounts of 10 users each (plain passwords); PAIRS publisher/subscriber pairs,
  each pair in its own account, all on the same subject (each subscriber sees its account's
  messages only). The rate is all deliveries / (first write to last delivery).
- service import: account CLI imports account SVC's exported service `svc.echo` as `echo`; a
  responder in SVC answers; a requester in CLI sends REQUESTS requests one at a time: p50 RTT.
- JWT connect: operator mode, `resolver: MEMORY` with the account preloaded; CONNECTS
  connections one after another, each signing the server's nonce with its user nkey
  (CONNECT with `jwt` and `sig`, then PING/PONG, then close): connections/s.
- RSS: operator mode with ACCOUNTS account JWTs in `resolver_preload`; VmRSS once the server
  sends its INFO (and one second later, the larger kept).

Keys and JWTs are made here (ed25519 from `cryptography`, nkeys' encoding).
Usage: accounts.py OURS_BINARY REF_BINARY [--rounds R] [--messages N] [--pairs P]
       [--requests N] [--connects N] [--accounts N]"""
import argparse, base64, hashlib, json, os, socket, subprocess, sys, tempfile, threading, time
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives import serialization
from rawnats import count_msgs, free_port, open_socket, wait_pong

PREFIX = {"operator": 14 << 3, "account": 0, "user": 20 << 3}


def crc16(data):
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


class Key:
    def __init__(self, kind):
        self.private = Ed25519PrivateKey.generate()
        raw = self.private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        body = bytes([PREFIX[kind]]) + raw
        self.public = base64.b32encode(body + crc16(body).to_bytes(2, "little")).decode().rstrip("=")

    def sign(self, data):
        return self.private.sign(data)


def b64(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jwt(subject, signer, name, nats):
    claims = {"iat": int(time.time()), "iss": signer.public, "name": name, "sub": subject, "nats": nats}
    claims["jti"] = base64.b32encode(hashlib.sha256(json.dumps(claims).encode()).digest()[:20]).decode()
    head = b64(b'{"typ":"JWT","alg":"ed25519-nkey"}') + "." + b64(json.dumps(claims).encode())
    return head + "." + b64(signer.sign(head.encode()))


ACCOUNT_LIMITS = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
                  "wildcards": True, "conn": -1, "leaf": -1}


def account_jwt(account, operator, name="A"):
    return jwt(account.public, operator, name, {"limits": ACCOUNT_LIMITS, "type": "account", "version": 2,
                                                "default_permissions": {"pub": {}, "sub": {}}})


def operator_config(accounts):
    """Operator mode with a memory resolver preloading `accounts` (Key list) and a system account."""
    operator, system = Key("operator"), Key("account")
    op = jwt(operator.public, operator, "OP", {"type": "operator", "version": 2,
                                              "system_account": system.public})
    preload = [f"  {system.public}: {account_jwt(system, operator, 'SYS')}"]
    preload += [f"  {account.public}: {account_jwt(account, operator)}" for account in accounts]
    return (f"operator: {op}\nsystem_account: {system.public}\nresolver: MEMORY\n"
            "resolver_preload {\n" + "\n".join(preload) + "\n}\n")


def connect(port, connect_fields=None):
    """A connection that sent CONNECT (`connect_fields`, or a function of the INFO giving them)
    and got its PONG."""
    s, info = open_socket(port)
    fields = {"verbose": False}
    fields.update(connect_fields(info) if callable(connect_fields) else connect_fields or {})
    s.sendall(b"CONNECT " + json.dumps(fields).encode() + b"\r\nPING\r\n")
    wait_pong(s)
    return s


class Server:
    def __init__(self, binary, config):
        self.directory = tempfile.TemporaryDirectory()
        conf = os.path.join(self.directory.name, "server.conf")
        open(conf, "w").write(config)
        self.port = free_port()
        self.process = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(self.port), "-c", conf],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def rss_kib(self):
        for line in open(f"/proc/{self.process.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def close(self):
        self.process.terminate(); self.process.wait(); self.directory.cleanup()


def pubsub_config():
    lines = ["accounts {"]
    for a in range(100):
        users = ", ".join(f"{{user: u{a}_{u}, password: p}}" for u in range(10))
        lines.append(f"  A{a}: {{ users: [{users}] }}")
    return "\n".join(lines + ["}"]) + "\n"


def pubsub(server, messages, pairs):
    per_pair = messages // pairs // 1000 * 1000
    block = b"PUB bench 2\r\nhi\r\n" * 1000
    subscribers, publishers = [], []
    for pair in range(pairs):
        account = pair * (100 // pairs)
        sub = connect(server.port, {"user": f"u{account}_0", "pass": "p"})
        sub.sendall(b"SUB bench 1\r\nPING\r\n"); wait_pong(sub)
        subscribers.append(sub)
        publishers.append(connect(server.port, {"user": f"u{account}_1", "pass": "p"}))
    counted = []

    def count(sub):
        counted.append(count_msgs(sub, per_pair))

    def publish(pub):
        for _ in range(per_pair // 1000):
            pub.sendall(block)

    readers = [threading.Thread(target=count, args=(s,), daemon=True) for s in subscribers]
    writers = [threading.Thread(target=publish, args=(p,), daemon=True) for p in publishers]
    for thread in readers:
        thread.start()
    started = time.perf_counter()
    for thread in writers:
        thread.start()
    for thread in readers:
        thread.join(120)
    elapsed = time.perf_counter() - started
    if sum(counted) != per_pair * pairs:
        raise RuntimeError(f"delivered {sum(counted)} of {per_pair * pairs}")
    for s in subscribers + publishers:
        s.close()
    return per_pair * pairs / elapsed


SERVICE_CONFIG = """accounts {
  SVC: { users: [{user: svc, password: p}], exports: [{service: svc.echo}] }
  CLI: { users: [{user: cli, password: p}], imports: [{service: {account: SVC, subject: svc.echo}, to: echo}] }
}
"""


def read_msg(s, buffer):
    """One MSG from `s`: (reply, rest of buffer)."""
    while True:
        end = buffer.find(b"\r\n")
        if end >= 0:
            head = buffer[:end].split()
            if head and head[0] == b"MSG":
                size = int(head[-1])
                total = end + 2 + size + 2
                while len(buffer) < total:
                    buffer += s.recv(1 << 16)
                reply = head[3] if len(head) == 5 else None
                return reply, buffer[total:]
            buffer = buffer[end + 2:]
            continue
        chunk = s.recv(1 << 16)
        if not chunk:
            raise EOFError
        buffer += chunk


def service_import(server, requests):
    responder = connect(server.port, {"user": "svc", "pass": "p"})
    responder.sendall(b"SUB svc.echo 1\r\nPING\r\n"); wait_pong(responder)
    requester = connect(server.port, {"user": "cli", "pass": "p"})
    requester.sendall(b"SUB _INBOX.bench.* 1\r\nPING\r\n"); wait_pong(requester)

    def respond():
        buffer = b""
        try:
            while True:
                reply, buffer = read_msg(responder, buffer)
                if reply:
                    responder.sendall(b"PUB " + reply + b" 2\r\nok\r\n")
        except (EOFError, OSError):
            return

    threading.Thread(target=respond, daemon=True).start()
    times, buffer = [], b""
    for i in range(requests):
        started = time.perf_counter()
        requester.sendall(b"PUB echo _INBOX.bench.%d 2\r\nhi\r\n" % i)
        _, buffer = read_msg(requester, buffer)
        times.append(time.perf_counter() - started)
    requester.close(); responder.close()
    times.sort()
    return times[len(times) // 2]


def jwt_connects(server, connects, user_jwt, user):
    def fields(info):
        return {"jwt": user_jwt, "sig": b64(user.sign(info["nonce"].encode()))}
    started = time.perf_counter()
    for _ in range(connects):
        connect(server.port, fields).close()
    return connects / (time.perf_counter() - started)


def rss(server):
    open_socket(server.port)[0].close()  # its INFO came: the server is up
    first = server.rss_kib()
    time.sleep(1)
    return max(first, server.rss_kib())


def median(values):
    return sorted(values)[len(values) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ours"); parser.add_argument("reference")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=2_000_000)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--requests", type=int, default=5_000)
    parser.add_argument("--connects", type=int, default=2_000)
    parser.add_argument("--accounts", type=int, default=10_000)
    args = parser.parse_args()
    binaries = {"ours": args.ours, "reference": args.reference}

    account = Key("account")
    user = Key("user")
    user_jwt = jwt(user.public, account, "U", {"pub": {}, "sub": {}, "subs": -1, "data": -1,
                                               "payload": -1, "type": "user", "version": 2})
    jwt_config = operator_config([account])
    many_config = operator_config([Key("account") for _ in range(args.accounts)])

    rows = {name: {"pubsub": [], "service": [], "connect": [], "rss": []} for name in binaries}
    for _ in range(args.rounds):
        for name, binary in binaries.items():
            server = Server(binary, pubsub_config())
            try:
                rows[name]["pubsub"].append(pubsub(server, args.messages, args.pairs))
            finally:
                server.close()
            server = Server(binary, SERVICE_CONFIG)
            try:
                rows[name]["service"].append(service_import(server, args.requests))
            finally:
                server.close()
            server = Server(binary, jwt_config)
            try:
                rows[name]["connect"].append(jwt_connects(server, args.connects, user_jwt, user))
            finally:
                server.close()
            server = Server(binary, many_config)
            try:
                rows[name]["rss"].append(rss(server))
            finally:
                server.close()
    ours = {row: median(values) for row, values in rows["ours"].items()}
    ref = {row: median(values) for row, values in rows["reference"].items()}
    print(f"pub/sub, 100 accounts x 10 users, {args.pairs} pairs: nats-server {ref['pubsub']:,.0f} msgs/s"
          f"  ours {ours['pubsub']:,.0f} msgs/s  ratio {ours['pubsub'] / ref['pubsub']:.2f}")
    print(f"request across a service import, p50: nats-server {ref['service'] * 1e6:.1f} us"
          f"  ours {ours['service'] * 1e6:.1f} us  ratio (ref/ours) {ref['service'] / ours['service']:.2f}")
    print(f"connect with JWT auth (memory resolver): nats-server {ref['connect']:,.0f}/s"
          f"  ours {ours['connect']:,.0f}/s  ratio {ours['connect'] / ref['connect']:.2f}")
    print(f"RSS with {args.accounts:,} accounts preloaded: nats-server {ref['rss'] / 1024:.1f} MiB"
          f"  ours {ours['rss'] / 1024:.1f} MiB  ratio (ours/ref) {ours['rss'] / ref['rss']:.2f}")


if __name__ == "__main__":
    sys.exit(main())
