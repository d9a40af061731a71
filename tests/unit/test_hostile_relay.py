"""Hostile peer batches at the batching relay (protocol/peer_relay.py) with real CADR-LDP
device machines on both sides (helper W's sweep, docs/reliability.md "Hostile input at
every intake"): what the relay refuses it counts and never forwards, and what it forwards
must not stop an honest device.

The pump below is the device agent's (``devices/cadr_agent.py``): a delivery a device
refuses (``RemoteProtocolError``) is dropped and counted, and the device goes on.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_device import CadrDevice
from ldpfleet.protocol.cadr_messages import CadrPlan, CadrTheta
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.peer_relay import (
    MAX_PEER_ITEMS,
    PeerBatch,
    PeerItem,
    PeerRelay,
    PhaseAborted,
    PhaseFinished,
)

RUN = "hostile-relay"
GRAPH = generate("barabasi_albert", 12, seed=4, m=2)
NAMES = [f"n{i:02d}" for i in range(GRAPH.n)]
HOSTILE = "n03"
STEP_TIMEOUT = 5.0


def neighbours(name: str) -> list[str]:
    return [NAMES[j] for j in GRAPH.neighbours(NAMES.index(name))]


def stranger_of(name: str) -> str:
    return next(n for n in NAMES if n != name and n not in neighbours(name))


class Fleet:
    """Devices and the relay, moved by hand; ``tamper(batch) -> [batches]`` rewrites what
    ``HOSTILE`` sends the relay (its genuine batch among them, or not)."""

    def __init__(self, tamper=None) -> None:
        self.devices = {
            name: CadrDevice(RUN, name, neighbours(name), np.random.default_rng([9, i]))
            for i, name in enumerate(NAMES)
        }
        self.relay = PeerRelay(RUN, NAMES, step_timeout=STEP_TIMEOUT)
        self.tamper = tamper
        self.refused_by_devices = 0
        self.notices: list = []  # the relay's Reject notices
        self.now = 0.0
        ctl = topics.parse(topics.ctl(RUN, "cadr_plan"))
        plan = CadrPlan(run=RUN, sender=topics.COLLECTOR_ID, eps=3.0, alpha=0.1, method="ll",
                        degree_bound=GRAPH.n - 1, ndoe_parts=4)  # fmt: skip
        theta = CadrTheta(run=RUN, sender=topics.COLLECTOR_ID, theta=3)
        for device in self.devices.values():
            device.receive(ctl, plan, 0.0)
            device.receive(topics.parse(topics.ctl(RUN, "cadr_theta")), theta, 0.0)

    def _to_device(self, name: str, out) -> None:
        try:  # through the wire, as the agent gets it
            message = codec.decode(codec.encode(out.message))
            self.devices[name].receive(topics.parse(out.topic), message, self.now)
        except RemoteProtocolError:
            self.refused_by_devices += 1

    def _to_relay(self, out) -> None:
        batches = [out.message]
        if out.message.sender == HOSTILE and self.tamper is not None:
            batches = self.tamper(out.message)
        for batch in batches:
            payload = codec.encode(batch) if isinstance(batch, PeerBatch) else batch
            try:
                message = codec.decode(payload)
            except RemoteProtocolError as error:
                self.relay.reject(out.topic, "invalid", error)
                continue
            self.relay.receive(topics.parse(out.topic), message, self.now)

    def phase(self, name: str, **options) -> list:
        """Run one phase to its end (step timeouts fire when the fleet is quiet)."""
        self.relay.start_phase(name, self.now, **options)
        events: list = []
        ended = False
        while not ended:
            ended = any(isinstance(e, PhaseFinished | PhaseAborted) for e in events)
            queue = self.relay.pop_outbound()
            self.notices += [o.message for o in queue if o.topic.endswith("/svc/relay/reject")]
            queue = [o for o in queue if "/svc/" not in o.topic]
            if not queue and not ended:
                self.now = self.relay.next_timer()
                self.relay.handle_timer(self.now)
            for out in queue:
                if out.topic == topics.ctl(RUN, "peer_step"):
                    for device in NAMES:
                        self._to_device(device, out)
                else:
                    self._to_device(topics.parse(out.topic).recipient, out)
            for device in NAMES:
                for out in self.devices[device].pop_outbound():
                    if out.topic.endswith("/up/peer_batch"):
                        self._to_relay(out)
            events += self.relay.pop_events()
        return events

    def run(self) -> tuple[list, dict[str, float]]:
        events = self.phase("ndoe")
        if isinstance(events[-1], PhaseFinished):
            events += self.phase("lpea", until_quiet=True, max_rounds=20, padded=True)
        released = {n: d.released for n, d in self.devices.items() if d.released is not None}
        return [e for e in events if isinstance(e, PhaseFinished | PhaseAborted)], released


def honest_release() -> dict[str, float]:
    events, released = Fleet().run()
    assert [type(e) for e in events] == [PhaseFinished, PhaseFinished]
    assert set(released) == set(NAMES)
    return released


def with_items(batch: PeerBatch, *extra: PeerItem) -> PeerBatch:
    return PeerBatch(run=batch.run, sender=batch.sender, seq=batch.seq, phase=batch.phase,
                     round=batch.round, step=batch.step, items=[*batch.items, *extra],
                     done=batch.done, added=batch.added)  # fmt: skip


def raw(batch: PeerBatch, **changes) -> bytes:
    return json.dumps(json.loads(codec.encode(batch)) | changes).encode()


def _first(batch: PeerBatch) -> bool:
    return batch.round == 0 and batch.step == 0


REFUSED_BY_THE_RELAY = {
    # a batch from a device of another run / for another phase, round or step
    "wrong run": lambda b: [raw(b, run="other"), b],
    "wrong phase": lambda b: [raw(b, phase="lpea" if b.phase == "ndoe" else "ndoe"), b],
    "wrong round": lambda b: [raw(b, round=b.round + 1), b],
    "wrong step": lambda b: [raw(b, step=b.step + 7), b],
    # an item to itself, to a device not in the run, of a kind that does not exist
    "to itself": lambda b: [with_items(b, PeerItem(HOSTILE, "code", 1)), b],
    "to an outsider": lambda b: [with_items(b, PeerItem("intruder", "code", 1)), b],
    "unknown kind": lambda b: [raw(b, items=[["n00", "teleport", 1]]), b],
    "value past 2^31": lambda b: [raw(b, items=[["n00", "req", 2**40]]), b],
    # garbage, truncation, NaN, extra and missing fields, oversize
    "not json": lambda b: [b"\xff\xfe", b],
    "truncated": lambda b: [codec.encode(b)[:-5], b],
    "NaN added": lambda b: [codec.encode(b).replace(b'"added":', b'"added":NaN,"x":'), b],
    "extra field": lambda b: [raw(b, colour="red"), b],
    "missing field": lambda b: [codec.encode(b).replace(b'"phase":', b'"fase":'), b],
    # the two large ones once a phase (at its first step): ~2 MB each to build and decode
    "too many items": lambda b: [
        *([raw(b, items=[["n00", "req", 0]] * (MAX_PEER_ITEMS + 1))] if _first(b) else []),
        b,
    ],
    "oversize": lambda b: [*([b"{" + b" " * codec.MAX_PAYLOAD + b"}"] if _first(b) else []), b],
    # the same batch again, identical or changed: the first one stands
    "replayed": lambda b: [b, b, b],
    "second, changed": lambda b: [b, with_items(b, PeerItem("intruder", "req", 0))],
}


@pytest.mark.parametrize("case", list(REFUSED_BY_THE_RELAY))
def test_a_hostile_batch_is_refused_counted_and_the_run_releases_the_same(case):
    """The hostile device also sends its genuine batch: the phase must end as without the
    attack, every device releasing the same value (the relay forwards nothing refused)."""
    tamper = REFUSED_BY_THE_RELAY[case]
    fleet = Fleet(tamper=tamper)
    events, released = fleet.run()
    assert [type(e) for e in events] == [PhaseFinished, PhaseFinished]
    assert released == honest_release()
    assert fleet.refused_by_devices == 0
    assert fleet.relay.rejected >= 1 and len(fleet.notices) == fleet.relay.rejected


@pytest.mark.parametrize("item", ["stranger code", "code out of range", "answer out of turn"])
def test_an_item_the_relay_cannot_judge_does_not_stop_an_honest_device(item):
    def tamper(batch: PeerBatch) -> list[PeerBatch]:
        if batch.phase == "ndoe" and batch.step == 0 and item != "answer out of turn":
            peer = stranger_of(HOSTILE) if item == "stranger code" else neighbours(HOSTILE)[0]
            value = 1 if item == "stranger code" else 4  # ndoe_parts = 4: 0..3
            extra = [PeerItem(peer, "code", value)]
            if item == "code out of range":  # replaces the genuine code to that neighbour
                return [PeerBatch(**{**_fields(batch), "items": [
                    i for i in batch.items if i.peer != peer] + extra})]  # fmt: skip
            return [with_items(batch, *extra)]
        if batch.phase == "lpea" and batch.round == 0 and batch.step == 0:
            return [with_items(batch, PeerItem(neighbours(HOSTILE)[0], "ans", 1))]
        return [batch]

    fleet = Fleet(tamper=tamper)
    events, released = fleet.run()
    assert [type(e) for e in events] == [PhaseFinished, PhaseFinished]
    assert set(released) >= set(NAMES) - {HOSTILE}
    # each victim refused (and counted) the one item, used the rest and answered the step:
    # the out-of-turn answer is sent in every case, the NDOE code in the first two
    refusals = 1 if item == "answer out of turn" else 2
    assert fleet.refused_by_devices == refusals
    assert sum(d.refused_items for d in fleet.devices.values()) == refusals


def _fields(batch: PeerBatch) -> dict:
    return {f: getattr(batch, f) for f in batch.__struct_fields__}


def test_a_refused_second_added_count_is_neither_used_nor_waited_on():
    """A device that reported ``done`` with edges added and then, later in the round,
    reports ``added`` again is refused ("added reported twice") — but the relay stored the
    batch before it refused it: the refused batch's items were forwarded at the step's close,
    and when it was the step's last expected batch the step never closed (the phase aborted
    at the step timeout). Found by this sweep; now nothing changes before the refusal."""
    relay = PeerRelay(RUN, ["a", "b", "c"], step_timeout=STEP_TIMEOUT)
    relay.start_phase("lpea", 0.0, until_quiet=True, max_rounds=3)

    def send(sender: str, step: int, items=(), *, done=False, added=0) -> None:
        message = PeerBatch(
            run=RUN, sender=sender, phase="lpea", round=0, step=step,
            items=[PeerItem(*i) for i in items], done=done, added=added,
        )  # fmt: skip
        relay.receive(topics.parse(topics.up(RUN, sender, "peer_batch")), message, 0.0)

    send("a", 0, [("b", "req", 0)], done=True, added=1)
    send("b", 0, [("a", "req", 0)])
    send("c", 0, [("a", "req", 0)], done=True)
    relay.pop_outbound()
    assert relay.step == 1 and relay.rejected == 0  # a and b get deliveries at step 1
    send("a", 1, [("c", "est", 1)], done=True, added=1)  # added again: refused
    assert relay.rejected == 1
    send("b", 1, [], done=True)
    assert relay.step == 1  # a's step-1 batch is still awaited
    send("a", 1, [], done=True)  # its valid batch is taken: the step closes
    out = relay.pop_outbound()
    assert not any(o.topic.endswith("/in/relay") and "c" in o.topic for o in out)
    events = [e for e in relay.pop_events() if isinstance(e, PhaseFinished | PhaseAborted)]
    assert relay.rejected == 1 and not any(isinstance(e, PhaseAborted) for e in events)
