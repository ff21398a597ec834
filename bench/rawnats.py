"""Raw-socket NATS client pieces the bench scripts share: a free port, a connection opened
(INFO read, TCP_NODELAY) once the server listens, and waiting for a PONG."""
import json, socket, time


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def open_socket(port):
    """A socket to the server on `port` (retried while it starts) and its INFO as a dict."""
    for _ in range(400):
        try:
            s = socket.create_connection(("127.0.0.1", port)); break
        except OSError:
            time.sleep(0.05)
    else:
        raise RuntimeError(f"no server on port {port}")
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    info = b""
    while not info.endswith(b"\r\n"):
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError("closed before INFO")
        info += chunk
    return s, json.loads(info[5:])


def wait_pong(s):
    data = b""
    while b"PONG\r\n" not in data:
        chunk = s.recv(1 << 16)
        if not chunk or b"-ERR" in chunk:
            raise EOFError(chunk)
        data += chunk


def count_msgs(s, expected):
    """Read from `s` until `expected` MSG lines came (or the server closed): how many came."""
    seen, tail = 0, b""
    while seen < expected:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data = tail + chunk
        seen += data.count(b"MSG ")
        tail = data[-3:]
    return seen
