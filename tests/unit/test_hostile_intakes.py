"""Hostile input at the collector's intakes other than the stream collector's (helper W's
sweep, docs/reliability.md "Hostile input at every intake"): messages written from the wire
schemas, fed through each pump's own routing, must be refused, counted and never used, and
must not stop the intake."""

from __future__ import annotations

import numpy as np
from ldpfleet.broker.transport import Delivery
from ldpfleet.collector.bulk import BulkStore, _handle
from ldpfleet.collector.cadr_fleet import CadrOutcome, _CadrRun
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.bulk import (
    BulkCollector,
    BulkHello,
    BulkPlan,
    encode_bulk,
    gateway_up,
    stage_topic,
)
from ldpfleet.protocol.cadr_messages import DsrReport
from ldpfleet.protocol.messages import BudgetRefused, Reject, Stage
from ldpfleet.protocol.peer_relay import RELAY_ID, PhaseReport


def bulk_plan(**kw) -> BulkPlan:
    base = dict(run="t", devices=20, steps=10, batch_steps=5, eps=2.0, w=5,
                gateway_devices=10, partitions=1, window=2, max_entries=40)  # fmt: skip
    base.update(kw)
    return BulkPlan(**base)


def bulk_handle(tmp_path, topic: str, payload: bytes):
    """One delivery through the bulk pump: (stage closed?, refusals, what it sent)."""
    plan = bulk_plan()
    machine = BulkCollector(plan, 0)
    store = BulkStore(tmp_path, machine.stored_dtype)
    sent, refusals = [], {}
    try:
        closed = _handle(machine, store, Delivery(topic, payload), sent.extend, 0.0, refusals)
    finally:
        store.close()
    return closed, refusals, sent


def test_a_stage_close_on_a_gateway_uplink_does_not_stop_the_bulk_collector(tmp_path):
    """A gateway may publish only on its own uplinks; a ``Stage(closed)`` it sends there
    ended the partition collector's loop (found by this sweep: the pump honoured any
    ``Stage`` whatever the topic), so one hostile gateway cut every other gateway's run
    short. It is refused (``schema``) and published as a ``Reject``."""
    closed_stage = Stage(run="t", sender="collector", stage="bulk", state="closed")
    for kind in ("bulk", "hello"):
        topic = gateway_up("t", 0, kind, None)
        closed, refusals, sent = bulk_handle(tmp_path, topic, encode_bulk(closed_stage))
        assert closed is False
        assert refusals == {"schema": 1}
        (notice,) = sent
        assert isinstance(notice.message, Reject) and notice.message.field == "topic"


def test_only_this_runs_collector_closes_the_bulk_stage(tmp_path):
    """On ``ctl/stage`` itself: a ``Stage`` of another run or sender is refused; the
    runner's own close still ends the loop."""
    topic = stage_topic("t")
    for fields in ({"run": "other"}, {"sender": "g0"}):
        message = Stage(**{"run": "t", "sender": "collector", "stage": "bulk"} | fields,
                        state="closed")  # fmt: skip
        closed, refusals, _ = bulk_handle(tmp_path, topic, encode_bulk(message))
        assert closed is False and refusals == {"schema": 1}
    honest = Stage(run="t", sender="collector", stage="bulk", state="closed")
    closed, refusals, sent = bulk_handle(tmp_path, topic, encode_bulk(honest))
    assert closed is True and refusals == {} and sent == []


def test_garbage_on_a_bulk_uplink_is_refused_counted_and_noticed(tmp_path):
    topic = gateway_up("t", 0, "bulk", None)
    for payload, code in (
        (b"\xff\x00", "undecodable"),
        (b'{"type": "bulk_report"', "undecodable"),
        (b'{"type": "bulk_report", "run": "t", "sender": "g0"}', "schema"),
        (b"[" * 100_000, "schema"),
        (b'{"type": "bulk_report", "entries": ' + b"[" * 100_000, "schema"),
        # another schema version: the bulk decoder read ``v`` and never checked it
        (
            b'{"type": "bulk_report", "v": 2, "run": "t", "sender": "g0", "mechanism": "sw", '
            b'"w": 5, "batch_steps": 5, "entries": ""}',
            "unsupported_version",
        ),
    ):
        closed, refusals, sent = bulk_handle(tmp_path, topic, payload)
        assert closed is False and refusals == {code: 1}
        assert isinstance(sent[0].message, Reject)
    assert np.fromfile(tmp_path / "reports.bin", dtype=np.uint8).size == 0


# ---- the CADR-LDP collector's pump (collector/cadr_fleet.py) ------------------------------

RUN = "c1"
MEMBERS = ["n0000", "n0001", "n0002"]
THETA, EPS_DSR = 5, 2.7


class FakeConn:
    """What the pump publishes: (topic, decoded message)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, object]] = []

    async def publish(self, topic: str, payload: bytes, retain: bool = False) -> None:
        self.sent.append((topic, codec.decode(payload)))

    async def publish_many(self, items) -> None:
        for topic, payload in items:
            await self.publish(topic, payload)

    def rejects(self) -> list[Reject]:
        reject_topic = topics.svc(RUN, topics.COLLECTOR_ID, "reject")
        return [m for t, m in self.sent if t == reject_topic]


def cadr_state() -> tuple[_CadrRun, FakeConn]:
    conn = FakeConn()
    outcome = CadrOutcome(theta=0, theta_rule="5", theta_rounds=0)
    return _CadrRun(RUN, MEMBERS, conn, outcome, None, 60.0, 0.0), conn


async def deliver(state: _CadrRun, items: list[tuple[str, bytes]]) -> None:
    async def inbound():
        for topic, payload in items:
            yield Delivery(topic, payload)

    await state.consume(inbound())


def refusal(device: str, request: str = "cadr_plan", **fields) -> bytes:
    message = BudgetRefused(
        run=RUN, sender=device, account="node", request=request, requested=0.5, remaining=0.1,
        **fields,
    )  # fmt: skip
    return codec.encode(message)


def release(device: str, value: float = 2.0) -> bytes:
    return codec.encode(DsrReport(run=RUN, sender=device, seq=1, value=value, theta=THETA,
                                  eps=EPS_DSR))  # fmt: skip


async def test_one_devices_flood_of_refusals_before_theta_does_not_evict_anothers():
    """Refusals that arrive before θ are held for the intake. The pump held at most
    len(devices) in all, first come: one device repeating its own refusal filled the list
    and an honest device's refusal after it was dropped, so the DSR stage waited for a
    release that device never sends and the run failed at the deadline (found by this
    sweep). Now one refusal a device is held."""
    state, _ = cadr_state()
    flood = [(topics.up(RUN, "n0001", "budget_refused"), refusal("n0001"))] * 50
    honest = (topics.up(RUN, "n0002", "budget_refused"), refusal("n0002", "ndoe"))
    await deliver(state, [*flood, honest])
    await state.announce_theta(THETA, EPS_DSR, local=True)
    assert set(state.intake.refusals) == {"n0001", "n0002"}
    assert state.intake.missing() == ["n0000"]


async def test_messages_on_the_wrong_topic_are_refused_counted_and_noticed():
    """A release on ``up/budget_refused``, a refusal on ``up/dsr`` (the DSR intake read the
    type and never the topic's kind), a phase report on a device's topic (dropped without a
    count) and undecodable bytes (counted without a ``Reject`` notice) are all refused,
    counted and published on ``svc/collector/reject``; nothing is released."""
    state, conn = cadr_state()
    early = [
        (topics.up(RUN, "n0000", "dsr"), b"\xff not json"),
        (topics.up(RUN, "n0000", "dsr"), release("n0000")),  # before θ
        (topics.up(RUN, "n0001", "dsr"), refusal("n0001")),  # a refusal on up/dsr
    ]
    await deliver(state, early)
    await state.announce_theta(THETA, EPS_DSR, local=True)
    phase = PhaseReport(run=RUN, sender=RELAY_ID, phase="ndoe", ok=True)
    late = [
        (topics.up(RUN, "n0000", "budget_refused"), release("n0000")),
        (topics.up(RUN, "n0001", "dsr"), refusal("n0001")),
        (topics.up(RUN, "n0002", "dsr"), codec.encode(phase)),
        (topics.up(RUN, "n0002", "dsr"), b'{"type": "dsr_report"'),
    ]
    await deliver(state, late)
    assert state.relay_wait.queued == 0
    assert state.intake.values == {} and state.intake.refusals == {}
    counted = state.outcome.rejected + state.intake.rejected
    assert counted == len(early) + len(late)
    rejects = conn.rejects()
    assert len(rejects) == counted
    assert {r.field for r in rejects} >= {"payload", "topic"}


async def test_honest_releases_still_complete_after_the_hostile_ones():
    state, conn = cadr_state()
    await state.announce_theta(THETA, EPS_DSR, local=True)
    hostile = [
        (topics.up(RUN, "n0000", "dsr"), release("n0000", value=1e300)),
        (topics.up(RUN, "n0000", "dsr"), release("n0000").replace(b'"seq":1', b'"seq":-1')),
        (topics.up(RUN, "intruder", "dsr"), release("intruder")),
        (topics.up(RUN, "n0001", "dsr"), release("n0000")),  # wrong sender for the topic
        (topics.up(RUN, "n0000", "dsr"), release("n0000").replace(b"}", b',"x":1}')),
        (topics.up(RUN, "n0000", "dsr"), b"{" + b" " * codec.MAX_PAYLOAD + b"}"),
    ]
    honest = [(topics.up(RUN, d, "dsr"), release(d, 1.0 + i)) for i, d in enumerate(MEMBERS)]
    replay = [honest[0]] * 3  # an identical replay: a duplicate, acknowledged again
    await deliver(state, [*hostile, *honest, *replay])
    assert state.stage.complete
    assert state.intake.values == {"n0000": 1.0, "n0001": 2.0, "n0002": 3.0}
    assert state.outcome.rejected + state.intake.rejected == len(hostile)
    assert state.outcome.duplicates == len(replay)
    assert len(conn.rejects()) == len(hostile)


def test_a_gateway_number_spelled_otherwise_is_not_that_gateways_uplink(tmp_path):
    """``g01``, ``g+1`` and ``g١`` (an Arabic-Indic one) all parse to gateway 1, but only
    ``g1`` is gateway 1's uplink (the topic its ACL grants): the others admitted gateway 1
    from a topic no ACL rule names. Now refused (field ``topic``) before the hello is read;
    the canonical topic still admits it."""
    plan = bulk_plan()
    hello = BulkHello(run="t", sender="g1", gateway=1, first=10, count=10, mechanism="sw",
                      eps=plan.eps, w=plan.w, eps0=plan.eps0, steps=plan.steps,
                      batch_steps=plan.batch_steps, lo=plan.lo, hi=plan.hi)  # fmt: skip
    for level in ("g01", "g+1", "g\u0661", "g-1"):
        topic = f"ldp/t/gw/{level}/up/hello"
        closed, refusals, sent = bulk_handle(tmp_path, topic, encode_bulk(hello))
        assert closed is False and refusals == {"schema": 1}, level
        assert sent[0].message.field == "topic", level
    closed, refusals, sent = bulk_handle(tmp_path, gateway_up("t", 1, "hello", None),
                                         encode_bulk(hello))  # fmt: skip
    assert refusals == {} and sent[0].message.type_name() == "bulk_admit"


# ---- a CADR-LDP partition worker's DSR intake (collector/cadr_partition.py) ---------------


async def test_one_devices_flood_before_theta_does_not_evict_anothers_at_a_partition():
    """A partition worker holds what reaches it before θ (module docstring of
    ``collector/cadr_partition.py``) and judges it once θ is heard. It held at most
    2 × devices messages in all, first come: one device repeating its refusal or its
    release filled the list and another device's refusal or release after it was dropped,
    so the partition never completed (helper W's sweep; the bug fixed in
    ``collector/cadr_fleet.py`` by 1665b90). Now the first refusal and the first release
    of each device are held; later ones are counted (a repeated refusal is ignored, as the
    intake does; an identical release is a duplicate; a changed one rejected)."""
    from ldpfleet.collector.cadr_partition import _Worker

    worker, conn = _Worker(RUN, (0, 1), MEMBERS, EPS_DSR, None), FakeConn()
    flood = [(topics.up(RUN, "n0001", "budget_refused"), refusal("n0001"))] * 20
    flood += [(topics.up(RUN, "n0001", "dsr"), release("n0001", 1.0 + i / 8)) for i in range(20)]
    honest = [
        (topics.up(RUN, "n0002", "budget_refused"), refusal("n0002", "ndoe")),
        (topics.up(RUN, "n0000", "dsr"), release("n0000", 1.5)),
        (topics.up(RUN, "n0000", "dsr"), release("n0000", 1.5)),  # a retransmission
    ]
    for topic, payload in [*flood, *honest]:
        await worker.handle(conn, topics.parse(topic), codec.decode(payload))
    await worker.start(conn, THETA)
    assert set(worker.intake.refusals) == {"n0001", "n0002"}
    assert worker.intake.values == {"n0000": 1.5} and worker.intake.complete
    assert worker.duplicates == 1  # n0000's retransmission
    # 19 changed releases of n0001 at the worker, its first one by the intake (it refused)
    assert (worker.rejected, worker.intake.rejected) == (19, 1)


async def test_a_message_on_the_wrong_topic_kind_is_refused_at_a_partition():
    """A release on ``up/budget_refused`` or a refusal on ``up/dsr``: the intake reads the
    type only, so the worker accepted them (the check ``collector/cadr_fleet.py`` got in
    1665b90 was missing here). Refused and counted, before and after θ."""
    from ldpfleet.collector.cadr_partition import _Worker

    worker, conn = _Worker(RUN, (0, 1), MEMBERS, EPS_DSR, None), FakeConn()
    wrong = [
        (topics.up(RUN, "n0000", "budget_refused"), release("n0000")),
        (topics.up(RUN, "n0001", "dsr"), refusal("n0001")),
    ]
    for topic, payload in wrong:  # before θ: held, then judged
        await worker.handle(conn, topics.parse(topic), codec.decode(payload))
    await worker.start(conn, THETA)
    for topic, payload in wrong:  # after θ
        await worker.handle(conn, topics.parse(topic), codec.decode(payload))
    assert worker.intake.values == {} and worker.intake.refusals == {}
    assert worker.rejected == 2 * len(wrong)


# ---- the partition status topic (collector/partition.py, collector/cadr_partition.py) -----


def _status(state: str, **fields) -> bytes:
    from ldpfleet.protocol.partition import PartitionStatus

    return codec.encode(PartitionStatus(run=RUN, sender=topics.COLLECTOR_ID, partition=0,
                                        partitions=1, state=state, **fields))  # fmt: skip


STATUS_GARBAGE = [
    b"\xff not json",
    b'{"type": "partition_status"',
    codec.encode(Stage(run=RUN, sender=topics.COLLECTOR_ID, stage="stream", state="open")),
]


async def _coordinate_against_a_worker(on_message=None):
    """``coordinate_stream`` with one worker that, once the stage is open (so the
    coordinator listens), sends the garbage of ``STATUS_GARBAGE`` then its ``closed``."""
    import asyncio

    from ldpfleet.broker.transport import MemoryTransport
    from ldpfleet.collector.partition import coordinate_stream
    from ldpfleet.protocol.partition import COUNTERS, status_topic

    transport = MemoryTransport()

    async def worker() -> None:
        async with transport.connect(f"{RUN}-w0") as conn:
            await conn.subscribe(topics.ctl(RUN, "stage"))
            opened = False
            while not opened:
                await conn.publish(status_topic(RUN), _status("ready"))
                try:
                    async with asyncio.timeout(0.2):
                        async for delivery in conn.messages():
                            opened = codec.decode(delivery.payload).state == "open"
                            break
                except TimeoutError:
                    continue
            for payload in STATUS_GARBAGE:
                await conn.publish(status_topic(RUN), payload)
            closed = _status("closed", complete=True, counters=[0] * len(COUNTERS))
            await conn.publish(status_topic(RUN), closed)

    task = asyncio.create_task(worker())
    tally = await coordinate_stream(transport, RUN, 1, workers_timeout=60, fleet_timeout=60,
                                    on_message=on_message)  # fmt: skip
    await task
    return tally


async def test_undecodable_messages_on_the_status_topic_are_counted():
    """The coordinator dropped an undecodable message on the status topic without a count
    (``contextlib.suppress``), and, with an ``on_message`` hook (every stream coordinator
    passes one), a decodable message that is not a status nor taken by the hook too. Now
    each counts in the tally's ``refused`` (``partition_messages_refused``)."""
    tally = await _coordinate_against_a_worker()
    assert tally.complete and tally.refused == len(STATUS_GARBAGE)

    async def hook(message):
        from ldpfleet.protocol.errors import RemoteProtocolError

        raise RemoteProtocolError(f"not taken: {message.type_name()}", field="type")

    tally = await _coordinate_against_a_worker(on_message=hook)
    assert tally.complete and tally.refused == len(STATUS_GARBAGE)


async def test_undecodable_messages_to_the_cadr_release_gatherer_are_counted():
    """``listen_to_workers`` (CADR partitions) dropped undecodable payloads without a
    count; the gatherer counts them now, as it counts the malformed ones."""
    import asyncio

    from ldpfleet.broker.transport import MemoryTransport
    from ldpfleet.collector.cadr_partition import ReleaseGatherer, listen_to_workers
    from ldpfleet.protocol.partition import status_topic

    transport = MemoryTransport()
    gatherer = ReleaseGatherer(RUN, 1)
    async with transport.connect("coord") as conn, transport.connect("w0") as worker:
        await conn.subscribe(status_topic(RUN))
        listening = asyncio.create_task(listen_to_workers(conn, gatherer))
        for payload in [*STATUS_GARBAGE, _status("ready")]:
            await worker.publish(status_topic(RUN), payload)
        await gatherer.wait_ready(60)
        listening.cancel()
    assert gatherer.all_ready and gatherer.refused == len(STATUS_GARBAGE)


class _ControlConn(FakeConn):
    """A connection whose control subscription delivers ``payloads`` in order."""

    def __init__(self, payloads: list[bytes]) -> None:
        super().__init__()
        self.payloads = payloads

    async def messages(self):
        for payload in self.payloads:
            yield Delivery(topics.ctl(RUN, "cadr_theta"), payload)


async def test_garbage_on_a_cadr_partitions_control_topics_is_counted_and_ignored():
    """A CADR partition worker's control pump (``collector/cadr_partition._control``)
    dropped undecodable messages and messages of another sender without a count (helper
    B's report), and obeyed a θ or a ``run closed`` of another run. Each is now counted in
    ``worker.rejected`` and ignored; the coordinator's own θ and close still act."""
    from ldpfleet.collector.cadr_partition import _control, _Worker
    from ldpfleet.protocol.cadr_messages import CadrTheta

    def theta(sender: str = topics.COLLECTOR_ID, run: str = RUN) -> bytes:
        return codec.encode(CadrTheta(run=run, sender=sender, theta=THETA))

    def close(sender: str = topics.COLLECTOR_ID, run: str = RUN) -> bytes:
        return codec.encode(Stage(run=run, sender=sender, stage="run", state="closed"))

    hostile = [b"\xff", b'{"type": "cadr_theta"', theta(sender="n0001"), theta(run="other"),
               close(sender="n0002"), close(run="other"), release("n0000")]  # fmt: skip
    worker = _Worker(RUN, (0, 1), MEMBERS, EPS_DSR, None)
    await _control(worker, _ControlConn([*hostile, theta(), theta(), close()]))
    assert worker.rejected == len(hostile)
    assert worker.intake is not None and worker.closed.is_set()
    worker = _Worker(RUN, (0, 1), MEMBERS, EPS_DSR, None)
    await _control(worker, _ControlConn(hostile))
    assert worker.intake is None and not worker.closed.is_set()
