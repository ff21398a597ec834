"""Mirrors and sources configured through nats-py, driven by key_value_nats_py.rs: nats-py's
encoding of mirror/sources (transforms, filters, external) is accepted, the copies converge and
carry the Nats-Stream-Source header. Usage: python3 sources_nats_py.py nats://127.0.0.1:PORT."""

import asyncio
import sys

import nats
from nats.js.api import ExternalStream, StreamConfig, StreamSource, SubjectTransform


def check(condition, what):
    if not condition:
        raise AssertionError(what)


async def main(url):
    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="PO", subjects=["po.>"]))
    for index in range(3):
        await js.publish("po.a", b"x", headers={"Nats-Msg-Id": str(index)})
    await js.publish("po.b", b"y")
    await js.add_stream(StreamConfig(
        name="PM",
        mirror=StreamSource(name="PO", subject_transforms=[
            SubjectTransform(src="po.*", dest="pm.{{wildcard(1)}}")])))
    await js.add_stream(StreamConfig(name="PS", sources=[
        StreamSource(name="PO", filter_subject="po.a"),
        StreamSource(name="PX", external=ExternalStream(api="$JS.hub.API", deliver="dl"))]))
    for _ in range(400):
        mirror = await js.stream_info("PM")
        sourced = await js.stream_info("PS")
        if mirror.state.messages == 4 and sourced.state.messages == 3:
            break
        await asyncio.sleep(0.025)
    check(mirror.state.messages == 4, f"mirror holds {mirror.state.messages}")
    check(sourced.state.messages == 3, f"aggregate holds {sourced.state.messages}")
    check(mirror.mirror.name == "PO" and mirror.mirror.lag == 0, f"mirror info {mirror.mirror}")
    # nats-server lists sources in no particular order.
    by_name = {source.name: source for source in sourced.sources}
    check(sorted(by_name) == ["PO", "PX"], f"sources info {sourced.sources}")
    check(by_name["PX"].active == -1, "an external source with no one answering is inactive")

    first = await js.get_msg("PS", 1)
    check(first.subject == "po.a", f"sourced subject {first.subject}")
    check(first.headers["Nats-Stream-Source"].startswith("PO 1 po.a > po.a"),
          f"source header {first.headers}")
    check(first.headers["Nats-Msg-Id"] == "0", "origin headers kept")
    copied = await js.get_msg("PM", 4)
    check(copied.subject == "pm.b", f"mirrored subject {copied.subject}")
    await nc.close()
    print("nats-py sources and mirrors: all checks passed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
