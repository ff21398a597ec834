"""nats-py over its websocket transport (ws://, which needs aiohttp), driven by
websocket_nats_py.rs: pub/sub between a websocket client and a TCP client both ways,
request/reply between two websocket clients, and a JetStream publish over ws:// answered with
its PubAck (stream, sequence, duplicate detection), then the stored message read back.
Usage: python3 websocket_nats_py.py ws://127.0.0.1:WSPORT nats://127.0.0.1:PORT
(exit status 0 = all passed)."""

import asyncio
import sys

import nats


def check(condition, what):
    if not condition:
        raise AssertionError(what)


async def main(ws_url, tcp_url):
    ws = await nats.connect(ws_url, allow_reconnect=False)
    tcp = await nats.connect(tcp_url, allow_reconnect=False)
    check(ws.connected_url.scheme == "ws", f"websocket transport: {ws.connected_url}")

    # TCP -> websocket.
    sub = await ws.subscribe("py.ws.in")
    await ws.flush()
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
    await tcp.flush()
    await ws.publish("py.ws.out", big)
    await ws.flush()
    msg = await tcp_sub.next_msg(timeout=5)
    check(msg.data == big, f"large message of {len(msg.data)} bytes")

    # Request/reply between two websocket clients.
    responder = await nats.connect(ws_url, allow_reconnect=False)

    async def answer(msg):
        await msg.respond(b"re: " + msg.data)

    await responder.subscribe("py.ws.service", cb=answer)
    await responder.flush()
    reply = await ws.request("py.ws.service", b"ping", timeout=5)
    check(reply.data == b"re: ping", f"reply {reply.data!r}")

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

    for client in (responder, ws, tcp):
        await client.close()


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), 60))
