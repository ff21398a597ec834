"""nats-py's public API beyond Key-Value, driven by client_nats_py.rs (issue 19's client-library
sweep): core NATS (connect options the server reports, headers, requests and no responders,
auto-unsubscribe), JetStream (publish with a message id and its
duplicate, expected last sequence, pull fetch and acks, an ordered push consumer, stream and
consumer info, message gets, filtered purge, deletes; `jetstream_more`: direct gets, the
expected-stream header, queue push consumers, fetch heartbeats, consumer updates, multi-filter
consumers, purge keep; `domain`: a JetStream domain), more Key-Value (`key_value_more`: watch
options, purge_deletes, value size limits, gets by revision), the object store (a chunked put, get,
watch, metadata updates, list, delete, status, seal) and the service API (`nats.micro`: endpoints and the
`$SRV` PING/INFO/STATS discovery).
Usage: python3 client_nats_py.py nats://127.0.0.1:PORT SECTION  (exit status 0 = all passed)."""

import asyncio
import json
import sys

import nats
from nats.errors import NoRespondersError
from nats.js import api, errors

# The helpers of the Key-Value script beside this one (the script's directory is on sys.path).
from key_value_nats_py import check, expect_error

WAIT = 5


async def core(url):
    nc = await nats.connect(url, name="py-sweep", no_echo=False, pedantic=True)
    check(nc.is_connected, "connected")
    check(nc.max_payload == 1024 * 1024, f"max_payload {nc.max_payload}")
    check(nc.connected_server_version.major == 2, f"version {nc.connected_server_version}")
    check(nc.client_id is not None and nc.client_id > 0, f"client id {nc.client_id}")
    # Headers (nats-py's are a dict: one value per name), names' case kept.
    sub = await nc.subscribe("py.headers")
    await nc.publish("py.headers", b"body", headers={"X-One": "1", "x-two": "2"})
    msg = await sub.next_msg(timeout=WAIT)
    check(msg.headers == {"X-One": "1", "x-two": "2"}, f"headers {msg.headers}")
    check(msg.data == b"body", f"payload {msg.data}")

    # Request/reply, and a request nobody answers.
    async def answer(msg):
        await msg.respond(b"pong:" + msg.data)

    await nc.subscribe("py.service", cb=answer)
    reply = await nc.request("py.service", b"ping", timeout=WAIT)
    check(reply.data == b"pong:ping", f"reply {reply.data}")
    await expect_error(NoRespondersError, nc.request("py.nobody", b"x", timeout=WAIT),
                       "request without responders")

    # Auto-unsubscribe after two messages.
    limited = await nc.subscribe("py.limited")
    await limited.unsubscribe(limit=2)
    for i in range(4):
        await nc.publish("py.limited", str(i).encode())
    await nc.flush()
    got = [(await limited.next_msg(timeout=WAIT)).data for _ in range(2)]
    check(got == [b"0", b"1"], f"limited {got}")
    await expect_error(Exception, limited.next_msg(timeout=0.3), "a third message")

    await nc.close()


async def jetstream(url):
    nc = await nats.connect(url)
    js = nc.jetstream()
    info = await js.add_stream(name="PYJS", subjects=["pyjs.>"], duplicate_window=60)
    check(info.config.name == "PYJS", "stream created")

    first = await js.publish("pyjs.a", b"1", headers={"Nats-Msg-Id": "one"})
    check(first.seq == 1 and not first.duplicate, f"first {first}")
    again = await js.publish("pyjs.a", b"1", headers={"Nats-Msg-Id": "one"})
    check(again.seq == 1 and again.duplicate, f"duplicate {again}")
    await js.publish("pyjs.b", b"2", headers={"Nats-Expected-Last-Sequence": "1"})
    await expect_error(errors.BadRequestError,
                       js.publish("pyjs.b", b"x", headers={"Nats-Expected-Last-Sequence": "1"}),
                       "a wrong expected last sequence")
    for i in range(3, 6):
        await js.publish(f"pyjs.c.{i}", str(i).encode())

    # Pull: fetch and ack.
    psub = await js.pull_subscribe("pyjs.>", durable="puller")
    msgs = await psub.fetch(3, timeout=WAIT)
    check([m.data for m in msgs] == [b"1", b"2", b"3"], f"fetched {[m.data for m in msgs]}")
    meta = msgs[0].metadata
    check(meta.sequence.stream == 1 and meta.sequence.consumer == 1, f"metadata {meta}")
    check(meta.num_pending == 4, f"num_pending {meta.num_pending}")
    for m in msgs:
        await m.ack_sync()
    cinfo = await js.consumer_info("PYJS", "puller")
    check(cinfo.num_ack_pending == 0 and cinfo.ack_floor.stream_seq == 3, f"ack floor {cinfo}")
    check(cinfo.num_pending == 2, f"consumer pending {cinfo.num_pending}")
    rest = await psub.fetch(10, timeout=1)
    check([m.data for m in rest] == [b"4", b"5"], f"rest {[m.data for m in rest]}")

    # An ordered push consumer sees everything in order.
    ordered = await js.subscribe("pyjs.>", ordered_consumer=True)
    seen = [(await ordered.next_msg(timeout=WAIT)).data for _ in range(5)]
    check(seen == [b"1", b"2", b"3", b"4", b"5"], f"ordered {seen}")
    await js.publish("pyjs.a", b"6")
    check((await ordered.next_msg(timeout=WAIT)).data == b"6", "ordered live")
    await ordered.unsubscribe()

    # Stream reads.
    sinfo = await js.stream_info("PYJS", subjects_filter=">")
    check(sinfo.state.messages == 6, f"messages {sinfo.state.messages}")
    check(sinfo.state.subjects == {"pyjs.a": 2, "pyjs.b": 1, "pyjs.c.3": 1, "pyjs.c.4": 1,
                                   "pyjs.c.5": 1}, f"subjects {sinfo.state.subjects}")
    got = await js.get_msg("PYJS", seq=2)
    check(got.data == b"2" and got.subject == "pyjs.b", f"get_msg {got}")
    last = await js.get_last_msg("PYJS", "pyjs.a")
    check(last.data == b"6" and last.seq == 6, f"get_last_msg {last}")
    await expect_error(errors.NotFoundError, js.get_msg("PYJS", seq=99), "get of a missing seq")

    # Filtered purge and deletes.
    purged = await js.purge_stream("PYJS", subject="pyjs.c.>")
    check(purged, "purge answered")
    sinfo = await js.stream_info("PYJS")
    check(sinfo.state.messages == 3, f"after purge {sinfo.state.messages}")
    check(await js.delete_msg("PYJS", 2), "delete_msg")
    try:
        await js.delete_msg("PYJS", 2)
        raise AssertionError("delete twice: expected an error")
    except errors.BadRequestError as error:
        check(error.err_code == 10043 and error.description == "sequence 2 not found",
              f"delete twice: {error}")
    names = await js.streams_info()
    check([s.config.name for s in names] == ["PYJS"], f"streams {names}")
    account = await js.account_info()
    # The ordered consumer is gone once its inactive threshold has passed: 1 or 2 here.
    check(account.streams == 1 and account.consumers >= 1, f"account {account}")
    check(await js.delete_consumer("PYJS", "puller"), "delete consumer")
    check(await js.delete_stream("PYJS"), "delete stream")
    await expect_error(errors.NotFoundError, js.stream_info("PYJS"), "info of a deleted stream")
    await nc.close()


async def object_store(url):
    nc = await nats.connect(url)
    js = nc.jetstream()
    obs = await js.create_object_store("PYOBJ", config=api.ObjectStoreConfig(
        description="from nats-py"))
    watcher = await obs.watch(include_history=False)
    big = bytes(i % 251 for i in range(300 * 1024))
    info = await obs.put("big.bin", big, meta=api.ObjectMeta(description="large"))
    check(info.size == len(big) and info.chunks == 3, f"put {info.size} {info.chunks}")
    got = await obs.get("big.bin")
    check(got.data == big, "get returns the bytes put")
    check(got.info.description == "large", f"description {got.info.description}")
    # The watcher first marks the end of the (skipped) history with None.
    seen = await watcher.updates(timeout=WAIT)
    while seen is None:
        seen = await watcher.updates(timeout=WAIT)
    check(seen.name == "big.bin", f"watch {seen}")

    await obs.put("small.txt", b"hello")
    # nats-py renames only onto a deleted name: a description update here.
    await obs.update_meta("small.txt", api.ObjectMeta(name="small.txt", description="updated"))
    updated = await obs.get("small.txt")
    check(updated.data == b"hello" and updated.info.description == "updated", f"meta {updated}")

    listed = sorted(entry.name for entry in await obs.list())
    check(listed == ["big.bin", "small.txt"], f"list {listed}")
    await obs.delete("small.txt")
    await expect_error(errors.ObjectNotFoundError, obs.get("small.txt"),
                       "get of a deleted object")
    listed = sorted((entry.name, bool(entry.deleted)) for entry in await obs.list())
    check(listed == [("big.bin", False), ("small.txt", True)], f"list after delete {listed}")
    listed = [entry.name for entry in await obs.list(ignore_deletes=True)]
    check(listed == ["big.bin"], f"list without deletes {listed}")
    status = await obs.status()
    check(status.bucket == "PYOBJ" and status.description == "from nats-py", f"status {status}")
    check(not status.sealed, "not sealed")
    await obs.seal()
    check((await obs.status()).sealed, "sealed")
    await expect_error(Exception, obs.put("late", b"x"), "a put to a sealed bucket")
    check(await js.delete_object_store("PYOBJ"), "delete bucket")
    await nc.close()


async def service(url):
    from nats import micro

    nc = await nats.connect(url)
    svc = await micro.add_service(nc, name="pysvc", version="1.2.3", description="sweep")

    async def echo(request):
        await request.respond(b"echo:" + request.data)

    async def fail(request):
        await request.respond_error("500", "broken")

    group = svc.add_group(name="grp")
    await group.add_endpoint(name="echo", handler=echo)
    await svc.add_endpoint(name="fail", handler=fail)

    reply = await nc.request("grp.echo", b"hi", timeout=WAIT)
    check(reply.data == b"echo:hi", f"echo {reply.data}")
    failed = await nc.request("fail", b"", timeout=WAIT)
    check(failed.headers.get("Nats-Service-Error-Code") == "500", f"error {failed.headers}")

    for subject, kind in [("$SRV.PING", "io.nats.micro.v1.ping_response"),
                          ("$SRV.INFO.pysvc", "io.nats.micro.v1.info_response"),
                          ("$SRV.STATS.pysvc", "io.nats.micro.v1.stats_response")]:
        answer = json.loads((await nc.request(subject, b"", timeout=WAIT)).data)
        check(answer["type"] == kind and answer["name"] == "pysvc", f"{subject}: {answer}")
    stats = json.loads((await nc.request("$SRV.STATS.pysvc", b"", timeout=WAIT)).data)
    by_name = {e["name"]: e for e in stats["endpoints"]}
    check(by_name["echo"]["num_requests"] == 1, f"stats {by_name}")
    check(by_name["fail"]["num_requests"] == 1, f"stats {by_name}")
    await svc.stop()
    await nc.close()


async def jetstream_more(url):
    """Stream lookup by subject, direct gets, the expected-stream header, a queue push consumer,
    pull fetches with heartbeats, consumer updates and multi-filter consumers, purge keep."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.add_stream(name="EX", subjects=["ex.>"], allow_direct=True)
    for i in range(6):
        await js.publish(f"ex.{i % 3}", f"v{i}".encode())
    check(await js.find_stream_name_by_subject("ex.1") == "EX", "stream by subject")
    direct = await js.get_msg("EX", seq=2, direct=True)
    check((direct.seq, direct.subject, direct.data) == (2, "ex.1", b"v1"), f"direct {direct}")
    check(sorted(direct.headers) == ["Nats-Sequence", "Nats-Stream", "Nats-Subject",
                                     "Nats-Time-Stamp"], f"direct headers {direct.headers}")
    following = await js.get_msg("EX", subject="ex.1", direct=True, next=True, seq=3)
    check(following.seq == 5, f"direct next {following.seq}")
    try:
        await js.publish("ex.0", b"x", stream="OTHER")
        raise AssertionError("a publish expecting another stream was stored")
    except errors.BadRequestError as error:
        check(error.err_code == 10060, f"expected stream: {error}")

    got = []

    async def work(msg):
        got.append(msg.data)
        await msg.ack()

    await js.subscribe("ex.>", queue="workers", cb=work, manual_ack=True)
    await js.subscribe("ex.>", queue="workers", cb=work, manual_ack=True)
    for _ in range(250):
        if len(got) >= 6:
            break
        await asyncio.sleep(0.02)
    check(sorted(got) == [f"v{i}".encode() for i in range(6)], f"queue push {got}")
    info = await js.consumer_info("EX", "workers")
    check(info.config.deliver_group == "workers" and info.push_bound, f"queue consumer {info}")

    puller = await js.pull_subscribe("ex.2", durable="P2")
    fetched = await puller.fetch(5, timeout=2, heartbeat=0.2)
    check([m.data for m in fetched] == [b"v2", b"v5"], f"fetch {[m.data for m in fetched]}")
    await expect_error(nats.errors.TimeoutError, puller.fetch(5, timeout=1, heartbeat=0.2),
                       "a fetch with nothing left")
    config = (await js.consumer_info("EX", "P2")).config
    config.description = "changed"
    config.max_ack_pending = 10
    updated = await js.add_consumer("EX", config)
    check((updated.config.description, updated.config.max_ack_pending) == ("changed", 10),
          f"update {updated.config}")
    config.ack_policy = api.AckPolicy.NONE
    try:
        await js.add_consumer("EX", config)
        raise AssertionError("ack policy changed")
    except errors.ServerError as error:
        check(error.err_code == 10012, f"ack policy update: {error}")
    multi = await js.add_consumer("EX", api.ConsumerConfig(durable_name="MF",
                                                           filter_subjects=["ex.0", "ex.1"]))
    check(multi.num_pending == 4, f"multi-filter pending {multi.num_pending}")
    await js.purge_stream("EX", keep=2)
    state = (await js.stream_info("EX")).state
    check((state.messages, state.first_seq) == (2, 5), f"purge keep {state}")
    await nc.close()


async def key_value_more(url):
    """Watch options (meta only, ignoring deletes), purge_deletes, value size limits, gets by
    revision, a deleted bucket."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    kv = await js.create_key_value(bucket="K2", history=5)
    for key in ["a.1", "a.2", "b.1"]:
        await kv.put(key, b"v")
    await kv.delete("a.2")
    await kv.purge("b.1")

    async def drain_watch(watcher):
        seen = []
        while (entry := await watcher.updates(timeout=WAIT)) is not None:
            seen.append((entry.key, entry.value, entry.operation, entry.revision))
        return seen

    meta = await drain_watch(await kv.watch("a.>", meta_only=True, include_history=True))
    check(meta == [("a.1", b"", None, 1), ("a.2", b"", None, 2), ("a.2", b"", "DEL", 4)],
          f"meta only {meta}")
    live = await drain_watch(await kv.watch(">", ignore_deletes=True))
    check([item[0] for item in live] == ["a.1"], f"ignoring deletes {live}")
    await kv.purge_deletes(olderthan=-1)
    check((await js.stream_info("KV_K2")).state.messages == 1, "purge_deletes")
    await expect_error(errors.NoKeysError, kv.history("zz"), "history of a missing key")

    small = await js.create_key_value(config=api.KeyValueConfig(
        bucket="K3", history=2, direct=True, max_value_size=10))
    try:
        await small.put("x", b"01234567890")
        raise AssertionError("a value over max_value_size was stored")
    except errors.BadRequestError as error:
        check(error.err_code == 10054, f"too big: {error}")
    await small.put("x", b"1")
    await small.put("x", b"2")
    check((await small.get("x", revision=1)).value == b"1", "get by revision")
    await js.delete_key_value("K3")
    await expect_error(errors.BucketNotFoundError, js.key_value("K3"), "a deleted bucket")
    await nc.close()


async def domain(url):
    """A JetStream context with a domain (the server runs `jetstream { domain: hub }`)."""
    nc = await nats.connect(url)
    js = nc.jetstream(domain="hub")
    await js.add_stream(name="D", subjects=["d.>"])
    ack = await js.publish("d.1", b"x")
    check((ack.stream, ack.seq, ack.domain) == ("D", 1, "hub"), f"pub ack {ack}")
    account = await js.account_info()
    check((account.domain, account.streams) == ("hub", 1), f"account {account}")
    kv = await js.create_key_value(bucket="DK")
    await kv.put("k", b"v")
    check((await kv.get("k")).value == b"v", "kv through the domain")
    puller = await js.pull_subscribe("d.>", durable="DP")
    message = (await puller.fetch(1, timeout=WAIT))[0]
    await message.ack_sync()
    check(message.data == b"x", "fetch through the domain")
    ordered = await js.subscribe("d.>", ordered_consumer=True)
    check((await ordered.next_msg(timeout=WAIT)).data == b"x", "ordered through the domain")
    await expect_error(nats.js.errors.ServiceUnavailableError,
                       nc.jetstream(domain="other").account_info(), "another domain")
    await nc.close()


SECTIONS = {"core": core, "jetstream": jetstream, "jetstream_more": jetstream_more,
            "key_value_more": key_value_more, "domain": domain,
            "object_store": object_store, "service": service}

if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(SECTIONS[sys.argv[2]](sys.argv[1]), 50))
