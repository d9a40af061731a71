"""Hostile input at the secure-sum server through its real pump (``collector.secure_sum``)
on the in-memory transport (helper W's sweep, docs/reliability.md "Hostile input at every
intake").

An attacker that got past the broker's ACL (a compromised device, a broker without ACLs)
listens to every device's uplink and, after each genuine message, publishes variants of it
on the same topic: identical replays, another run, session or round, another sender, the
wrong kind for the topic, a wrong-length vector, labels past the limit, out-of-field share
bytes, garbage, truncation, NaN, extra and missing fields, an oversize payload. Once the
unmask stage is open it also sends a masked input for the device that dropped out after its
shares (a late mask). The session must still return the exact sum of the survivors (every
honest device but the dropout), count every refusal per field, and never stall: on virtual
time (tests/virtual_time.py) the one silent dropout is found by its stage deadline however
slow the machine.
"""

from __future__ import annotations

import asyncio
import base64
import json

from ldpfleet.app.bench_secagg import _SecAggBench
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.secure_sum import secure_sum
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.secagg.encoding import FixedPoint
from ldpfleet.protocol.secagg.messages import SaMasked, SaShares, SaUnmask

from tests.virtual_time import VirtualTimeLoop

DEVICES, DIM = 10, 12
FIXED = FixedPoint(-1.0, 1.0, 2.0**16, 64)


def variants(topic: str, payload: bytes, members: list[str]) -> list[bytes]:
    """Hostile copies of one genuine upstream message, for its own topic."""
    doc = json.loads(payload)
    sender = doc["sender"]
    other = next(m for m in members if m != sender)

    def changed(**fields) -> bytes:
        return json.dumps(doc | fields).encode()

    out = [
        payload,  # identical replays: duplicates, counted as such
        payload,
        changed(run="another-run"),
        changed(session="another-session"),
        changed(round=doc.get("round", 0) + 1),
        changed(sender=other),
        changed(type="sa_abort" if doc["type"] != "sa_abort" else "sa_masked"),
        # a valid message of another kind on this topic: an abort on the masked topic
        # would have taken the device out of the session
        json.dumps(
            {k: doc[k] for k in ("v", "run", "sender", "seq", "session", "round")}
            | {"type": "sa_abort", "reason": "hostile"}
        ).encode(),
        changed(colour="red"),
        changed(v=2),
        b"\xff\xfe\x00",
        payload[: len(payload) // 2],
        payload.replace(b'"round":', b'"round":NaN,"x":', 1),
        payload.replace(b'"session":', b'"sesion":', 1),
        b"{" + b" " * codec.MAX_PAYLOAD + b"}",
    ]
    if doc["type"] == SaMasked.__struct_config__.tag:
        masked = base64.b64decode(doc["masked"])
        out.append(changed(masked=base64.b64encode(masked[:-4]).decode()))  # wrong length
    if doc["type"] == SaShares.__struct_config__.tag:
        out.append(changed(shares=[{"peer": 20_000, "ciphertext": doc["shares"][0]["ciphertext"]}]))
    if doc["type"] == SaUnmask.__struct_config__.tag:
        share = dict(doc["shares"][0], share=base64.b64encode(b"\xff" * 66).decode())
        out.append(changed(shares=[share, *doc["shares"][1:]]))  # not below the prime
    return out


async def attack(transport, bench, dropout: str, ready: asyncio.Event, sent: list) -> None:
    """Answer every genuine uplink message with its variants; once unmasking starts, send
    the dropped device's late masked input."""
    late_sent = False
    async with transport.connect(f"{bench.run}-attacker") as conn:
        # the uplinks, and the inboxes: the first unmask request says the masked stage closed
        await conn.subscribe(f"ldp/{bench.run}/dev/+/up/+", f"ldp/{bench.run}/dev/+/in/+")
        ready.set()
        async for delivery in conn.messages():
            if delivery.payload in sent:
                continue  # our own
            if "/in/" in delivery.topic:
                if late_sent or b'"sa_unmask_request"' not in delivery.payload:
                    continue
                late_sent = True
                late = SaMasked(run=bench.run, sender=dropout, session=bench.session,
                                masked=bytes(8 * DIM))  # fmt: skip
                items = [(topics.up(bench.run, dropout, "sa_masked"), codec.encode(late))]
            else:
                hostile = variants(delivery.topic, delivery.payload, bench.names)
                items = [(delivery.topic, p) for p in hostile]
            sent += [p for _, p in items]
            await conn.publish_many(items)


async def session_under_attack() -> tuple:
    transport = MemoryTransport()
    bench = _SecAggBench.draw(DEVICES, DIM, 0.1, 5, FIXED, False)
    dropout = str(*bench.dropping)
    agents = bench.agents(transport, "after_shares", silent=True)
    ready, sent = asyncio.Event(), []
    attacker = asyncio.create_task(attack(transport, bench, dropout, ready, sent))
    await ready.wait()
    tasks = [asyncio.create_task(agent.run()) for agent in agents]
    await asyncio.gather(*(agent.subscribed.wait() for agent in agents))
    try:
        result = await secure_sum(
            transport, bench.run, bench.session, bench.names, DIM, FIXED, degree=6,
            stage_timeout=5.0,
        )  # fmt: skip
        assert not attacker.done(), attacker  # the attack ran to the end of the session
    finally:
        for task in (*tasks, attacker):
            task.cancel()
        await asyncio.gather(*tasks, attacker, return_exceptions=True)
    return bench, dropout, result, sent


def test_the_secure_sum_is_exact_and_every_hostile_message_is_refused_and_counted():
    bench, dropout, result, sent = VirtualTimeLoop.run(session_under_attack())
    assert result.aborted is None
    exact, error = bench.exactness(result)
    assert exact is True and error < DEVICES / FIXED.scale
    assert set(result.survivors) == set(bench.names) - {dropout}
    summary = result.summary
    assert summary["late"] >= 1  # the dropped device's late mask: never summed
    assert summary["duplicates"] >= 2
    # each genuine message brings 13 refusable variants (+ 1 for vectors, shares, unmasks)
    # and the session ends on the last unmask answer: every earlier message's are counted
    assert summary["rejected"] >= 13 * 3 * (DEVICES - 1)
    fields = summary["rejections_by_field"]
    for name in ("run", "session", "round", "sender", "topic", "payload", "v", "masked"):
        assert fields.get(name, 0) >= 1, name
    # nothing the attacker sent was decoded into the sum: the refusals say so per reason
    assert result.survivors and len(sent) > summary["rejected"]


def test_the_attackers_variants_are_each_refused_by_the_codec_or_the_server():
    """Every variant but the replays is refused on its own (the sweep's table)."""
    doc = {"type": "sa_advertise", "v": 1, "run": "r", "sender": "d1", "seq": 0,
           "session": "s0", "round": 0, "c_public": base64.b64encode(bytes(32)).decode(),
           "s_public": base64.b64encode(bytes(range(32))).decode()}  # fmt: skip
    payload = json.dumps(doc).encode()
    refused_by_codec = 0
    for hostile in variants("t", payload, ["d1", "d2"])[2:]:
        try:
            message = codec.decode(hostile)
        except RemoteProtocolError:
            refused_by_codec += 1
            continue
        assert message != codec.decode(payload)  # the server refuses it on its envelope
    # another type missing its fields, unknown field, v, garbage, truncation, NaN, missing
    # field, oversize
    assert refused_by_codec == 8
