"""Key-Value through nats-py's KV API, driven by key_value_nats_py.rs: put, get, update with a
revision, create, delete, purge, history, keys, watch, status, and the errors each gives.
Usage: python3 key_value_nats_py.py nats://127.0.0.1:PORT  (exit status 0 = all passed)."""

import asyncio
import sys

import nats
from nats.js import errors


def check(condition, what):
    if not condition:
        raise AssertionError(what)


async def expect_error(kind, call, what):
    try:
        await call
    except kind:
        return
    raise AssertionError(f"{what}: expected {kind.__name__}")


async def main(url):
    nc = await nats.connect(url)
    js = nc.jetstream()
    kv = await js.create_key_value(bucket="PYKV", history=5, description="from nats-py")

    status = await kv.status()
    check(status.bucket == "PYKV", f"status bucket {status.bucket}")
    check(status.history == 5, f"status history {status.history}")

    first = await kv.put("color", b"red")
    entry = await kv.get("color")
    check(entry.value == b"red" and entry.revision == first, f"get after put {entry}")

    second = await kv.update("color", b"green", last=first)
    check(second > first, "update gives a newer revision")
    await expect_error(errors.KeyWrongLastSequenceError,
                       kv.update("color", b"blue", last=first), "update with a stale revision")

    created = await kv.create("shape", b"circle")
    check(created > second, "create gives a new revision")
    await expect_error(errors.KeyWrongLastSequenceError,
                       kv.create("shape", b"square"), "create of an existing key")

    await kv.put("color", b"blue")
    history = await kv.history("color")
    check([item.value for item in history] == [b"red", b"green", b"blue"],
          f"history {[item.value for item in history]}")

    keys = sorted(await kv.keys())
    check(keys == ["color", "shape"], f"keys {keys}")

    await kv.delete("shape")
    await expect_error(errors.KeyNotFoundError, kv.get("shape"), "get of a deleted key")
    # A deleted key can be created again.
    await kv.create("shape", b"triangle")
    check((await kv.get("shape")).value == b"triangle", "create after delete")

    await kv.purge("color")
    await expect_error(errors.KeyNotFoundError, kv.get("color"), "get of a purged key")
    history = await kv.history("color")
    check(len(history) == 1 and history[0].operation == "PURGE", f"history after purge {history}")

    await expect_error(errors.KeyNotFoundError, kv.get("never"), "get of a missing key")

    watcher = await kv.watchall()
    seen = []
    while True:
        update = await asyncio.wait_for(watcher.updates(timeout=5), 10)
        if update is None:  # end of the initial values
            break
        seen.append((update.key, update.value))
    check(("shape", b"triangle") in seen, f"watch initial values {seen}")
    await kv.put("live", b"1")
    update = await asyncio.wait_for(watcher.updates(timeout=5), 10)
    check(update is not None and update.key == "live" and update.value == b"1",
          f"watch live update {update}")
    await watcher.stop()

    await expect_error(errors.BucketNotFoundError, js.key_value("NOPE"), "missing bucket")
    await js.delete_key_value("PYKV")
    await expect_error(errors.BucketNotFoundError, js.key_value("PYKV"), "deleted bucket")
    await nc.close()
    print("nats-py key-value: all checks passed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
