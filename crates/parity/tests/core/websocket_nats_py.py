"""nats-py over its websocket transport (ws://, which needs aiohttp), driven by
websocket_nats_py.rs: pub/sub between a websocket client and a TCP client both ways,
request/reply between two websocket clients (headers both ways, and nats-py's no-responders
error, which it reads from a header-only 503 status message), header messages published over
ws:// to websocket and TCP subscribers (a header-only one too), and a JetStream publish over
ws:// answered with its PubAck (stream, sequence, duplicate detection), then the stored message
read back.
Usage: python3 websocket_nats_py.py ws://127.0.0.1:WSPORT nats://127.0.0.1:PORT
(exit status 0 = all passed)."""

import asyncio
import sys

import nats
from nats.errors import NoRespondersError


def check(condition, what):
    if not condition:
        raise AssertionError(what)


async def subscribed(client):
    """Returns once the server has every subscription `client` made. nats-py 2.16's flush()
    writes its PING at once but leaves the commands queued before it (a SUB just made) to its
    flusher task, so the PONG can come before the server has the SUB (against either server,
    over TCP too: a publish from another connection then finds no interest). The first flush
    lets the flusher write them; the second's PING goes after them."""
    await client.flush()
    await client.flush()


async def main(ws_url, tcp_url):
    clients = []
    try:
        await exercise(ws_url, tcp_url, clients)
    finally:
        for client in clients:
            await client.close()


async def exercise(ws_url, tcp_url, clients):
    ws = await nats.connect(ws_url, allow_reconnect=False)
    clients.append(ws)
    tcp = await nats.connect(tcp_url, allow_reconnect=False)
    clients.append(tcp)
    check(ws.connected_url.scheme == "ws", f"websocket transport: {ws.connected_url}")

    # TCP -> websocket.
    sub = await ws.subscribe("py.ws.in")
    await subscribed(ws)
    for index in range(100):
        await tcp.publish("py.ws.in", f"to ws {index}".encode(), headers={"N": str(index)})
    await tcp.flush()
    for index in range(100):
        msg = await sub.next_msg(timeout=5)
        check(msg.data == f"to ws {index}".encode(), f"message {index}: {msg.data!r}")
        check(msg.headers and msg.headers.get("N") == str(index), f"headers {msg.headers}")

    # websocket -> TCP, a payload larger than one frame of a browser.
    big = bytes(range(256)) * 1024
    tcp_sub = await tcp.subscribe("py.ws.out")
    await subscribed(tcp)
    await ws.publish("py.ws.out", big)
    await ws.flush()
    msg = await tcp_sub.next_msg(timeout=5)
    check(msg.data == big, f"large message of {len(msg.data)} bytes")

    # Request/reply between two websocket clients.
    responder = await nats.connect(ws_url, allow_reconnect=False)
    clients.append(responder)

    async def answer(msg):
        await msg.respond(b"re: " + msg.data)

    await responder.subscribe("py.ws.service", cb=answer)
    await subscribed(responder)
    reply = await ws.request("py.ws.service", b"ping", timeout=5)
    check(reply.data == b"re: ping", f"reply {reply.data!r}")

    # Header messages published over ws://, to a websocket and a TCP subscriber.
    ws_headers = await responder.subscribe("py.ws.headers")
    tcp_headers = await tcp.subscribe("py.ws.headers")
    await subscribed(responder)
    await subscribed(tcp)
    sent = {"Trace-Id": "abc 123", "X-Empty": "", "Nats-Custom": "v:1"}
    await ws.publish("py.ws.headers", b"with headers", headers=sent)
    await ws.publish("py.ws.headers", b"", headers={"Only": "headers"})
    await ws.flush()
    for sub in (ws_headers, tcp_headers):
        msg = await sub.next_msg(timeout=5)
        check(msg.data == b"with headers", f"header message payload {msg.data!r}")
        for key, value in sent.items():
            check(msg.headers and msg.headers.get(key) == value, f"header {key}: {msg.headers}")
        msg = await sub.next_msg(timeout=5)
        check(msg.data == b"", f"header-only payload {msg.data!r}")
        check(msg.headers == {"Only": "headers"}, f"header-only headers {msg.headers}")

    # Request/reply with headers both ways.
    async def answer_with_headers(msg):
        seen = msg.headers.get("Ask", "") if msg.headers else ""
        await responder.publish(msg.reply, msg.data, headers={"Seen": seen})

    await responder.subscribe("py.ws.headed", cb=answer_with_headers)
    await subscribed(responder)
    reply = await ws.request("py.ws.headed", b"q", timeout=5, headers={"Ask": "why"})
    check(reply.data == b"q" and reply.headers == {"Seen": "why"}, f"headed reply {reply}")

    # No responders: nats-py reads the server's 503 status (a header-only message) over ws://.
    try:
        await ws.request("py.ws.nobody", b"anyone?", timeout=5)
        check(False, "a request without responders was answered")
    except NoRespondersError:
        pass

    # JetStream over ws://: the PubAck comes back on the websocket connection.
    js = ws.jetstream()
    await js.add_stream(name="PYWS", subjects=["py.js.>"])
    first = await js.publish("py.js.one", b"stored", headers={"Nats-Msg-Id": "one"})
    check(first.stream == "PYWS" and first.seq == 1, f"first PubAck {first}")
    check(not first.duplicate, "first publish is not a duplicate")
    again = await js.publish("py.js.one", b"stored", headers={"Nats-Msg-Id": "one"})
    check(again.seq == 1 and again.duplicate, f"duplicate PubAck {again}")
    second = await js.publish("py.js.two", b"x" * 70000)
    check(second.seq == 2, f"second PubAck {second}")
    stored = await js.get_msg("PYWS", 1)
    check(stored.data == b"stored" and stored.subject == "py.js.one", f"stored {stored}")
    info = await js.stream_info("PYWS")
    check(info.state.messages == 2, f"stream state {info.state}")


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), 60))
