"""Tier-1 tests of the SW stream-reporting machines (protocol/stream.py).

The machines are driven directly: ``deliver`` parses each outbound topic with
``topics.parse``, passes the message through the codec (as the pumps do) and calls
``receive(topic, message, now)``. Time is a float we advance; randomness is a seeded
``numpy.random.Generator``; loss is a message we do not deliver.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import msgspec
import numpy as np
import pytest
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError, RemoteProtocolError
from ldpfleet.protocol.events import Event, Machine, Outbound, Rejected
from ldpfleet.protocol.messages import (
    MAX_BATCH,
    MAX_STEPS,
    Ack,
    BudgetRefused,
    Hello,
    Message,
    Reject,
    Stage,
    SwReport,
)
from ldpfleet.protocol.stream import (
    FINAL_REASONS,
    LEDGER_ACCOUNT,
    DeviceComplete,
    ReadingsRefused,
    ReportAccepted,
    StageClosed,
    StreamClosed,
    StreamCollector,
    StreamConfig,
    StreamDone,
    StreamReporter,
)
from ldpfleet.protocol.sw import SquareWave

RUN = "r1"
COLLECTOR = topics.COLLECTOR_ID
REJECT_TOPIC = topics.svc(RUN, COLLECTOR, "reject")
Key = tuple[str, int]


def make_config(**changes) -> StreamConfig:
    params = {
        "run": RUN,
        "mechanism": "sw",
        "eps": 2.0,
        "w": 4,
        "steps": 23,
        "batch_steps": 5,
        "lo": 0.0,
        "hi": 10.0,
        "retransmit_after": 5.0,
    }
    params.update(changes)
    return StreamConfig(**params)


def readings(config: StreamConfig, seed: int) -> np.ndarray:
    return np.random.default_rng([99, seed]).uniform(config.lo, config.hi, config.steps)


def wire(message: Message) -> Message:
    """The message as a receiver sees it: encoded and decoded by the codec."""
    return codec.decode(codec.encode(message))


def deliver(outbounds: Iterable[Outbound], *, to: Machine, now: float = 0.0) -> None:
    """Hand each outbound to ``to`` as a pump would."""
    for out in outbounds:
        to.receive(topics.parse(out.topic), wire(out.message), now)  # type: ignore[attr-defined]


def persist_all(pending: list[Key]) -> list[Key]:
    return list(pending)


class Fleet:
    """One collector and its reporters, connected by direct calls."""

    def __init__(self, n: int = 3, *, config: StreamConfig | None = None, seed: int = 0, **options):
        self.config = config or make_config()
        self.now = 0.0
        self.names = [f"d{i}" for i in range(n)]
        self.collector = StreamCollector(self.config, self.names, **options)
        self.reporters = {
            name: StreamReporter(self.config, name, np.random.default_rng([seed, i]))
            for i, name in enumerate(self.names)
        }
        self.pending: list[Key] = []  # accepted, not yet persisted
        self.persisted: list[Key] = []
        self.sent: list[Key] = []  # every report a device emitted (retransmissions too)
        self.delivered: list[Key] = []  # every report that reached the collector
        self.svc: list[Outbound] = []
        self.collector_events: list[Event] = []
        self.device_events: dict[str, list[Event]] = {name: [] for name in self.names}
        self.drop: Callable[[Outbound], bool] = lambda out: False
        self.checks: list[Callable[[], None]] = []

    # -- driving --------------------------------------------------------------------------

    def start(self, *, feed: bool = True) -> None:
        for i, (name, reporter) in enumerate(self.reporters.items()):
            reporter.start(self.now)
            if feed:
                reporter.add_readings(readings(self.config, i), self.now)
            self.device_events[name].extend(reporter.pop_events())

    def feed(self, name: str) -> None:
        index = self.names.index(name)
        self.reporters[name].add_readings(readings(self.config, index), self.now)
        self.device_events[name].extend(self.reporters[name].pop_events())

    def _check(self) -> None:
        for check in self.checks:
            check()

    def _collector_events(self) -> None:
        for event in self.collector.pop_events():
            self.collector_events.append(event)
            if isinstance(event, ReportAccepted):
                self.pending.append((event.device, event.seq))

    def step(self, persist: Callable[[list[Key]], list[Key]] = persist_all) -> int:
        """Move every queued message one hop and persist what ``persist`` picks; returns how
        many messages moved plus how many reports were persisted."""
        up = []
        for name, reporter in self.reporters.items():
            for out in reporter.pop_outbound():
                if isinstance(out.message, SwReport):
                    self.sent.append((name, out.message.seq))
                up.append(out)
        self._check()
        for out in up:
            if self.drop(out):
                continue
            if isinstance(out.message, SwReport):
                self.delivered.append((out.message.sender, out.message.seq))
            deliver([out], to=self.collector, now=self.now)
        self._collector_events()
        self._check()
        chosen = persist(self.pending)
        if chosen:
            self.collector.confirm_persisted(chosen)
            self.persisted.extend(chosen)
            self.pending = [key for key in self.pending if key not in chosen]
        self._collector_events()
        self._check()
        down = self.collector.pop_outbound()
        for out in down:
            topic = topics.parse(out.topic)
            if topic.family == "svc":
                self.svc.append(out)
                continue
            if self.drop(out):
                continue
            targets = [topic.recipient] if topic.family == "in" else list(self.reporters)
            for name in targets:
                deliver([out], to=self.reporters[name], now=self.now)
                self.device_events[name].extend(self.reporters[name].pop_events())
        self._check()
        return len(up) + len(chosen) + len(down)

    def run(self, persist: Callable[[list[Key]], list[Key]] = persist_all, max_steps=500) -> None:
        """Step until nothing moves (no message, nothing newly persisted)."""
        for _ in range(max_steps):
            if self.step(persist) == 0:
                return
        raise AssertionError(f"no quiescence after {max_steps} steps")

    def tick(self, seconds: float) -> None:
        self.now += seconds
        for reporter in self.reporters.values():
            reporter.handle_timer(self.now)
        self.collector.handle_timer(self.now)
        self._collector_events()

    def finish(self, max_rounds: int = 30) -> None:
        """Run, firing retransmission timers, until every reporter is finished."""
        self.run()
        for _ in range(max_rounds):
            if all(r.finished for r in self.reporters.values()):
                return
            self.tick(self.config.retransmit_after)
            self.run()
        states = {n: r.state for n, r in self.reporters.items()}
        raise AssertionError(f"reporters did not finish: {states}")

    # -- views ----------------------------------------------------------------------------

    def events(self, kind: type) -> list:
        return [e for e in self.collector_events if isinstance(e, kind)]

    def all_keys(self) -> list[Key]:
        return [(d, s) for d in self.names for s in range(self.config.n_batches)]


# --- StreamConfig --------------------------------------------------------------------------


def test_config_derived_values():
    config = make_config()
    assert config.eps0 == 0.5
    assert config.n_batches == 5
    assert [config.batch_span(s) for s in range(5)] == [
        (0, 5),
        (5, 10),
        (10, 15),
        (15, 20),
        (20, 23),
    ]
    assert make_config(steps=25).n_batches == 5
    assert make_config(steps=26).n_batches == 6
    assert config.mechanism_object() == SquareWave(0.5, "sw")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("run", "x" * 64),
        ("mechanism", "sw"),
        ("mechanism", "sw01"),
        ("eps", 50.0),
        ("eps", 1e-6),
        ("w", 1),
        ("w", 100_000),
        ("steps", 1),
        ("steps", MAX_STEPS),
        ("batch_steps", 1),
        ("batch_steps", MAX_BATCH),
        ("hi", math.nextafter(0.0, 1.0)),  # lo = 0.0: the smallest hi above it
        ("retransmit_after", 1e-9),
    ],
)
def test_config_accepts_each_boundary(field, value):
    assert getattr(make_config(**{field: value}), field) == value


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("run", "x" * 65, "run"),
        ("run", "", "run"),
        ("run", "a/b", "run"),
        ("mechanism", "SW", "mechanism"),
        ("mechanism", "gaussian", "mechanism"),
        ("eps", math.nextafter(50.0, 51.0), "eps"),
        ("eps", 0.0, "eps"),
        ("eps", -1.0, "eps"),
        ("eps", math.nan, "eps"),
        ("eps", math.inf, "eps"),
        ("w", 0, "w"),
        ("w", 100_001, "w"),
        ("w", 4.0, "w"),
        ("steps", 0, "steps"),
        ("steps", MAX_STEPS + 1, "steps"),
        ("steps", 23.0, "steps"),
        ("batch_steps", 0, "batch_steps"),
        ("batch_steps", MAX_BATCH + 1, "batch_steps"),
        ("hi", 0.0, "bounds"),  # lo == hi
        ("hi", -1.0, "bounds"),
        ("hi", math.inf, "bounds"),
        ("lo", math.nan, "bounds"),
        ("lo", -math.inf, "bounds"),
        ("retransmit_after", 0.0, "retransmit_after"),
        ("retransmit_after", -1.0, "retransmit_after"),
        ("retransmit_after", math.inf, "retransmit_after"),
        ("retransmit_after", math.nan, "retransmit_after"),
    ],
)
def test_config_refuses_each_field_past_its_boundary(field, value, named):
    with pytest.raises(ParameterError) as info:
        make_config(**{field: value})
    assert info.value.field == named


def test_collector_parameters_are_validated():
    config = make_config()
    with pytest.raises(ParameterError) as info:
        StreamCollector(config, ["d0"], max_in_flight=2, credit_window=3)
    assert info.value.field == "credit_window"
    with pytest.raises(ParameterError):
        StreamCollector(config, ["d0"], credit_window=0)
    with pytest.raises(ParameterError) as info:
        StreamCollector(config, [])
    assert info.value.field == "devices"
    with pytest.raises(ParameterError) as info:
        StreamCollector(config, ["d/0"])
    assert info.value.field == "device"
    with pytest.raises(ParameterError) as info:
        StreamReporter(config, "d+", np.random.default_rng(0))
    assert info.value.field == "device"


# --- the whole stage ------------------------------------------------------------------------


def test_happy_path_three_devices_paced_readings():
    fleet = Fleet(3)
    config = fleet.config
    fleet.start(feed=False)
    for t in range(config.steps):  # one reading per step, as a paced sensor
        for i, reporter in enumerate(fleet.reporters.values()):
            reporter.add_readings(readings(config, i)[t : t + 1], fleet.now)
        fleet.step()
        fleet.now += 1.0
    fleet.run()

    for name, reporter in fleet.reporters.items():
        assert reporter.state == "done"
        assert reporter.acked == config.n_batches - 1
        assert reporter.retransmissions == 0
        assert reporter.privatised == config.steps
        assert [type(e) for e in fleet.device_events[name]] == [StreamDone]

    accepted = fleet.events(ReportAccepted)
    assert sorted((e.device, e.seq) for e in accepted) == sorted(fleet.all_keys())
    for event in accepted:  # exactly the privatised values, the short last batch included
        t0, t1 = config.batch_span(event.seq)
        assert event.t0 == t0
        assert len(event.values) == t1 - t0
        np.testing.assert_array_equal(event.values, fleet.reporters[event.device].values[t0:t1])
    assert {len(e.values) for e in accepted if e.seq == 4} == {3}
    assert sorted(e.device for e in fleet.events(DeviceComplete)) == fleet.names
    assert fleet.events(StageClosed) == [StageClosed(True, "every device delivered every report")]
    assert fleet.events(Rejected) == []
    assert fleet.svc == []

    summary = fleet.collector.summary()
    assert summary["reports_lost"] == 0
    assert summary["reports_received"] == 3 * 5
    assert summary["reports_expected"] == 3 * 5
    assert summary["devices_complete"] == 3
    assert summary["reports_duplicate"] == 0
    assert summary["reports_rejected"] == 0
    assert summary["devices_silent"] == []
    assert summary["stage_state"] == "closed"
    assert fleet.collector.missing() == {}
    assert fleet.collector.next_timer() is None


def test_credit_bounds_reports_in_flight():
    fleet = Fleet(10, max_in_flight=4, credit_window=2)
    rng = np.random.default_rng(5)
    peak = 0

    def outstanding_within_bound() -> None:
        nonlocal peak
        outstanding = set(fleet.sent) - set(fleet.persisted)
        assert len(outstanding) <= 4, sorted(outstanding)
        peak = max(peak, len(outstanding))

    def persist_some(pending: list[Key]) -> list[Key]:  # a slow, irregular store
        return [key for key in pending if rng.random() < 0.3]

    fleet.checks.append(outstanding_within_bound)
    fleet.start()  # every device has all its batches ready at once
    for _ in range(2_000):
        fleet.step(persist_some)
        if all(r.finished for r in fleet.reporters.values()):
            break

    assert peak == 4  # the bound is reached, so the check above is not vacuous
    assert all(r.state == "done" for r in fleet.reporters.values())
    assert sorted(fleet.persisted) == sorted(fleet.all_keys())
    assert fleet.collector.summary()["reports_received"] == 50
    assert fleet.events(StageClosed)[0].complete


def test_a_batch_that_is_never_acknowledged_is_retransmitted_backing_off():
    """Each retransmission of the same batch waits twice as long as the one before, up to
    2**BACKOFF_DOUBLINGS x retransmit_after; acknowledged batches leave the schedule."""
    fleet = Fleet(1)
    fleet.drop = lambda out: isinstance(out.message, SwReport) and out.message.seq == 0
    fleet.start()
    fleet.run()
    d0, step = fleet.reporters["d0"], fleet.config.retransmit_after
    assert d0.state == "streaming" and d0.acked == -1 and d0.retransmissions == 0
    sent, waits = 0.0, []
    for _ in range(6):
        deadline = d0.next_timer()
        waits.append(deadline - sent)
        fleet.tick(deadline - fleet.now)
        sent = fleet.now
        fleet.run()
    assert waits == [step, 2 * step, 4 * step, 8 * step, 8 * step, 8 * step]
    # a collector that (re)announces the stage is owed no backoff: the next wait is one step
    run = fleet.config.run
    reopen = Stage(run=run, sender=COLLECTOR, stage="stream", state="open")
    d0.receive(topics.parse(topics.ctl(run, "stage")), reopen, fleet.now)
    d0.pop_outbound()
    assert d0.next_timer() == pytest.approx(sent + step)
    fleet.drop = lambda out: False
    fleet.tick(d0.next_timer() - fleet.now)
    fleet.run()
    assert d0.state == "done" and d0.next_timer() is None


def test_lost_report_is_retransmitted_and_duplicates_are_counted_not_reemitted():
    fleet = Fleet(3)
    dropped: list[Outbound] = []

    def drop_first_report_of_d0(out: Outbound) -> bool:
        if isinstance(out.message, SwReport) and out.message.sender == "d0" and not dropped:
            dropped.append(out)
            return True
        return False

    fleet.drop = drop_first_report_of_d0
    fleet.start()
    fleet.run()
    d0 = fleet.reporters["d0"]
    assert dropped[0].message.seq == 0
    assert d0.state == "streaming"  # stuck behind the gap: batch 1 persisted, 0 missing
    assert d0.acked == -1
    assert all(fleet.reporters[n].state == "done" for n in ("d1", "d2"))
    assert fleet.events(StageClosed) == []

    deadline = d0.next_timer()
    assert deadline == pytest.approx(0.0 + fleet.config.retransmit_after)
    fleet.tick(deadline - 1e-6)  # not yet due
    assert d0.retransmissions == 0
    assert d0.pop_outbound() == []
    fleet.tick(1e-6)
    assert d0.retransmissions == 2  # batches 0 and 1, both unacknowledged
    fleet.run()

    assert all(r.state == "done" for r in fleet.reporters.values())
    accepted = [(e.device, e.seq) for e in fleet.events(ReportAccepted)]
    assert sorted(accepted) == sorted(fleet.all_keys())  # each batch exactly once
    assert len(fleet.delivered) - len(set(fleet.delivered)) == 1  # batch 1 arrived twice
    summary = fleet.collector.summary()
    assert summary["reports_duplicate"] == fleet.collector.duplicates == 1
    assert summary["reports_lost"] == 0
    assert summary["reports_received"] == 15
    assert fleet.events(StageClosed)[0].complete


def _hello(config: StreamConfig, sender: str = "d0", **changes) -> Hello:
    hello = Hello(
        run=config.run,
        sender=sender,
        mechanism=config.mechanism,
        eps=config.eps,
        w=config.w,
        eps0=config.eps0,
        steps=config.steps,
        batch_steps=config.batch_steps,
        lo=config.lo,
        hi=config.hi,
    )
    return msgspec.structs.replace(hello, **changes)


def _report(config: StreamConfig, sender: str = "d0", seq: int = 0, **changes) -> SwReport:
    t0, t1 = config.batch_span(seq) if seq < config.n_batches else (seq * config.batch_steps,) * 2
    report = SwReport(
        run=config.run,
        sender=sender,
        seq=seq,
        t0=t0,
        mechanism=config.mechanism,
        eps0=config.eps0,
        w=config.w,
        values=[0.5] * max(1, t1 - t0),
    )
    return msgspec.structs.replace(report, **changes)


def _up(device: str, kind: str, run: str = RUN) -> topics.Topic:
    return topics.parse(topics.up(run, device, kind))


def _acks(outbounds: list[Outbound], device: str = "d0") -> list[Ack]:
    inbox = topics.inbox(RUN, device, COLLECTOR)
    return [o.message for o in outbounds if o.topic == inbox and isinstance(o.message, Ack)]


def test_duplicates_before_and_after_persistence():
    config = make_config()
    collector = StreamCollector(config, ["d0"])
    collector.receive(_up("d0", "hello"), _hello(config), 0.0)
    assert _acks(collector.pop_outbound()) == [Ack(run=RUN, sender=COLLECTOR, seq=-1, credit=2)]

    report = _report(config, seq=0)
    collector.receive(_up("d0", "sw_report"), report, 1.0)
    collector.receive(_up("d0", "sw_report"), report, 1.0)
    events = collector.pop_events()
    assert [type(e) for e in events] == [ReportAccepted]
    assert collector.duplicates == 1
    assert collector.pop_outbound() == []  # a duplicate of an unpersisted batch: no ack

    collector.confirm_persisted([("d0", 0)])
    assert _acks(collector.pop_outbound()) == [Ack(run=RUN, sender=COLLECTOR, seq=0, credit=3)]
    collector.receive(_up("d0", "sw_report"), report, 2.0)
    assert collector.pop_events() == []
    assert collector.duplicates == 2
    # a duplicate of a persisted batch is re-acknowledged (its ack may have been lost)
    assert _acks(collector.pop_outbound()) == [Ack(run=RUN, sender=COLLECTOR, seq=0, credit=3)]
    assert collector.summary()["reports_received"] == 1


def test_acknowledge_only_after_persistence():
    config = make_config()
    collector = StreamCollector(config, ["d0"])
    reporter = StreamReporter(config, "d0", np.random.default_rng(1))
    reporter.start(0.0)
    deliver(reporter.pop_outbound(), to=collector)
    deliver(collector.pop_outbound(), to=reporter)
    assert reporter.state == "streaming"
    assert reporter.credit == 2
    reporter.add_readings(readings(config, 0), 0.0)
    sent = reporter.pop_outbound()
    assert [o.message.seq for o in sent] == [0, 1]  # credit 2: batches 0 and 1 only
    deliver(sent, to=collector)
    assert [(e.device, e.seq) for e in collector.pop_events()] == [("d0", 0), ("d0", 1)]
    assert collector.pop_outbound() == []  # accepted, not persisted: nothing acknowledged
    collector.handle_timer(1.0)
    assert collector.pop_outbound() == []

    collector.confirm_persisted([("d0", 1)])  # out of order: batch 0 still unpersisted
    out = collector.pop_outbound()
    assert _acks(out) == [Ack(run=RUN, sender=COLLECTOR, seq=-1, credit=2)]
    deliver(out, to=reporter)
    assert reporter.acked == -1
    assert reporter.pop_outbound() == []

    collector.confirm_persisted([("d0", 0)])
    out = collector.pop_outbound()
    assert _acks(out) == [Ack(run=RUN, sender=COLLECTOR, seq=1, credit=4)]
    deliver(out, to=reporter)
    assert reporter.acked == 1
    assert [o.message.seq for o in reporter.pop_outbound()] == [2, 3]

    with pytest.raises(LocalProtocolError):
        collector.confirm_persisted([("d0", 4)])  # never accepted


# --- rejections -----------------------------------------------------------------------------

_CONFIG = make_config()
_SW = _CONFIG.mechanism_object()

REJECTIONS = [
    ("report-before-hello", _up("d1", "sw_report"), _report(_CONFIG, sender="d1"), "type"),
    ("wrong-eps0", _up("d0", "sw_report"), _report(_CONFIG, eps0=0.4), "eps0"),
    (
        "eps0-just-off",
        _up("d0", "sw_report"),
        _report(_CONFIG, eps0=_CONFIG.eps0 * (1 + 1e-9)),
        "eps0",
    ),
    ("wrong-mechanism", _up("d0", "sw_report"), _report(_CONFIG, mechanism="sw01"), "mechanism"),
    ("wrong-w", _up("d0", "sw_report"), _report(_CONFIG, w=5), "w"),
    ("seq-out-of-range", _up("d0", "sw_report"), _report(_CONFIG, seq=5), "seq"),
    ("seq-beyond-credit", _up("d0", "sw_report"), _report(_CONFIG, seq=2), "seq"),
    ("t0-mismatch", _up("d0", "sw_report"), _report(_CONFIG, t0=1), "t0"),
    ("too-few-values", _up("d0", "sw_report"), _report(_CONFIG, values=[0.5] * 4), "values"),
    ("too-many-values", _up("d0", "sw_report"), _report(_CONFIG, values=[0.5] * 6), "values"),
    (
        "value-above-domain",
        _up("d0", "sw_report"),
        _report(_CONFIG, values=[0.5, 0.5, _SW.output_high + 1e-9, 0.5, 2.0]),
        "values[2]",
    ),
    (
        "value-below-domain",
        _up("d0", "sw_report"),
        _report(_CONFIG, values=[-_SW.b - 1e-9, 0.5, 0.5, 0.5, 0.5]),
        "values[0]",
    ),
    ("sender-not-topic-device", _up("d0", "sw_report"), _report(_CONFIG, sender="d1"), "sender"),
    ("unknown-device", _up("d9", "sw_report"), _report(_CONFIG, sender="d9"), "sender"),
    ("wrong-run-in-message", _up("d0", "sw_report"), _report(_CONFIG, run="r2"), "run"),
    ("wrong-run-in-topic", _up("d0", "sw_report", run="r2"), _report(_CONFIG), "run"),
    ("hello-wrong-eps", _up("d1", "hello"), _hello(_CONFIG, "d1", eps=3.0), "eps"),
    ("hello-wrong-steps", _up("d1", "hello"), _hello(_CONFIG, "d1", steps=24), "steps"),
    ("hello-wrong-bounds", _up("d1", "hello"), _hello(_CONFIG, "d1", hi=11.0), "hi"),
    ("ack-from-a-device", _up("d0", "ack"), Ack(run=RUN, sender="d0"), "type"),
    (
        "not-an-up-topic",
        topics.parse(topics.ctl(RUN, "stage")),
        Stage(run=RUN, sender=COLLECTOR, stage="stream", state="open"),
        "topic",
    ),
]


@pytest.mark.parametrize(
    ("topic", "message", "field"), [c[1:] for c in REJECTIONS], ids=[c[0] for c in REJECTIONS]
)
def test_rejections_name_the_field_and_the_collector_keeps_working(topic, message, field):
    config = _CONFIG
    collector = StreamCollector(config, ["d0", "d1"])
    collector.receive(_up("d0", "hello"), _hello(config), 0.0)
    assert collector.pop_events() == []
    collector.pop_outbound()

    collector.receive(topic, wire(message), 1.0)

    events = collector.pop_events()
    assert len(events) == 1
    assert isinstance(events[0], Rejected)
    assert events[0].field == field
    assert events[0].device == topic.sender
    assert events[0].kind == message.type_name()
    out = collector.pop_outbound()
    assert out[0].topic == REJECT_TOPIC
    reject = wire(out[0].message)  # the Reject itself is a valid wire message
    assert isinstance(reject, Reject)
    # a final rejection of the device's own message also goes to its inbox, naming the
    # message by seq and digest (test_stream_rejections); others only to svc/
    own = reject.field not in ("sender", "run", "topic", "type")
    if reject.code in FINAL_REASONS and own:
        assert [o.topic for o in out[1:]] == [topics.inbox(RUN, topic.sender, COLLECTOR)]
        assert out[1].message == out[0].message
        assert reject.digest == codec.message_digest(message)
        assert reject.message_seq == message.seq
    else:
        assert len(out) == 1 and reject.digest == ""
    assert (reject.field, reject.device, reject.sender) == (field, topic.sender, COLLECTOR)
    assert reject.reason == events[0].reason
    assert collector.rejected == 1
    assert collector.rejections_by_field == {field: 1}
    assert collector.accepted == 0
    assert collector.summary()["reports_rejected"] == 1

    collector.receive(_up("d0", "sw_report"), _report(config, seq=0), 2.0)  # still working
    assert [(e.device, e.seq) for e in collector.pop_events()] == [("d0", 0)]
    assert collector.rejected == 1


def test_report_values_at_the_domain_edges_and_eps0_within_tolerance_are_accepted():
    config = _CONFIG
    collector = StreamCollector(config, ["d0"])
    collector.receive(_up("d0", "hello"), _hello(config, eps0=config.eps0 * (1 + 1e-13)), 0.0)
    edges = [_SW.output_low, _SW.output_high, 0.0, 1.0, _SW.output_low]
    collector.receive(_up("d0", "sw_report"), _report(config, values=edges), 1.0)
    assert [type(e) for e in collector.pop_events()] == [ReportAccepted]
    assert collector.rejected == 0


def test_a_closed_stage_ignores_late_reports_and_counts_them():
    config = make_config()
    collector = StreamCollector(config, ["d0"])
    collector.receive(_up("d0", "hello"), _hello(config), 0.0)
    collector.close("operator")
    assert collector.pop_events() == [StageClosed(False, "operator")]
    collector.pop_outbound()
    collector.receive(_up("d0", "sw_report"), _report(config), 1.0)
    # a retransmission racing the close is neither accepted nor an attack
    assert collector.pop_events() == []
    assert collector.pop_outbound() == []
    assert collector.late == 1
    assert collector.rejected == 0
    assert collector.summary()["reports_received"] == 0


def test_a_message_on_the_wrong_kind_of_topic_is_rejected():
    config = make_config()
    collector = StreamCollector(config, ["d0"])
    collector.receive(_up("d0", "hello"), _hello(config), 0.0)
    collector.pop_outbound()
    collector.pop_events()
    collector.receive(_up("d0", "hello"), _report(config), 1.0)
    [event] = collector.pop_events()
    assert isinstance(event, Rejected)
    assert event.field == "topic"
    assert event.topic == topics.up(RUN, "d0", "hello")


# --- device side ----------------------------------------------------------------------------


def _streaming_reporter(config: StreamConfig | None = None) -> StreamReporter:
    config = config or make_config()
    reporter = StreamReporter(config, "d0", np.random.default_rng(3))
    reporter.start(0.0)
    [hello] = reporter.pop_outbound()
    assert hello.topic == topics.up(RUN, "d0", "hello")
    assert wire(hello.message) == _hello(config)
    reporter.receive(_inbox(), Ack(run=RUN, sender=COLLECTOR, credit=2), 0.0)
    assert reporter.state == "streaming"
    return reporter


def _inbox(src: str = COLLECTOR) -> topics.Topic:
    return topics.parse(topics.inbox(RUN, "d0", src))


def test_reporter_waits_without_credit():
    reporter = StreamReporter(make_config(), "d0", np.random.default_rng(3))
    reporter.start(0.0)
    reporter.pop_outbound()
    reporter.receive(_inbox(), Ack(run=RUN, sender=COLLECTOR, credit=0), 0.0)
    assert reporter.state == "waiting"
    reporter.add_readings(readings(reporter.config, 0), 0.0)
    assert reporter.pop_outbound() == []
    reporter.receive(_inbox(), Ack(run=RUN, sender=COLLECTOR, credit=1), 1.0)
    assert reporter.state == "streaming"
    assert [o.message.seq for o in reporter.pop_outbound()] == [0]
    with pytest.raises(LocalProtocolError):
        reporter.start(2.0)


def test_reporter_retransmits_its_hello():
    reporter = StreamReporter(make_config(), "d0", np.random.default_rng(3))
    reporter.start(10.0)
    reporter.pop_outbound()
    assert reporter.next_timer() == 15.0
    reporter.handle_timer(14.99)
    assert reporter.pop_outbound() == []
    reporter.handle_timer(15.0)
    [again] = reporter.pop_outbound()
    assert isinstance(again.message, Hello)
    assert reporter.retransmissions == 1
    # backing off (protocol/stream.py, BACKOFF_DOUBLINGS): 10, 20, then 40 s at most (2**3
    # x retransmit_after 5 s); at a fixed 5 s a fleet starved of CPU buried its collector
    # under ~140 hellos/s and never recovered (helper E, `bench fleet --devices 1000`)
    for due, following in ((25.0, 45.0), (45.0, 85.0), (85.0, 125.0), (125.0, 165.0)):
        assert reporter.next_timer() == due
        reporter.handle_timer(due)
        [again] = reporter.pop_outbound()
        assert isinstance(again.message, Hello)
        assert reporter.next_timer() == following
    assert reporter.retransmissions == 5


def test_stage_open_makes_a_started_reporter_announce_itself_again():
    # a restarted collector opens the stage; it knows nothing of hellos it never stored
    ctl = topics.parse(topics.ctl(RUN, "stage"))
    opened = Stage(run=RUN, sender=COLLECTOR, stage="stream", state="open")
    idle = StreamReporter(make_config(), "d0", np.random.default_rng(3))
    idle.receive(ctl, opened, 0.0)
    assert idle.pop_outbound() == []  # not started: says nothing
    assert idle.state == "idle"
    reporter = _streaming_reporter()
    reporter.receive(ctl, opened, 1.0)
    [again] = reporter.pop_outbound()
    assert again.topic == topics.up(RUN, "d0", "hello")
    assert wire(again.message) == _hello(reporter.config)
    assert reporter.state == "streaming"
    assert reporter.credit == 2


def test_ack_for_a_batch_never_sent_is_terminal():
    reporter = _streaming_reporter()
    reporter.add_readings(readings(reporter.config, 0)[:5], 0.0)  # batch 0 only
    assert [o.message.seq for o in reporter.pop_outbound()] == [0]
    with pytest.raises(RemoteProtocolError) as info:
        reporter.receive(_inbox(), Ack(run=RUN, sender=COLLECTOR, seq=1, credit=2), 1.0)
    assert info.value.field == "seq"
    assert reporter.state == "error"
    assert reporter.finished
    reporter.receive(_inbox(), Ack(run=RUN, sender=COLLECTOR, seq=0, credit=2), 2.0)  # ignored
    assert reporter.state == "error"
    assert reporter.acked == -1


def test_credit_beyond_the_stream_is_terminal():
    reporter = _streaming_reporter()
    with pytest.raises(RemoteProtocolError) as info:
        reporter.receive(_inbox(), Ack(run=RUN, sender=COLLECTOR, credit=6), 1.0)
    assert info.value.field == "credit"
    assert reporter.state == "error"


def test_unexpected_message_type_from_the_collector_is_terminal():
    reporter = _streaming_reporter()
    with pytest.raises(RemoteProtocolError) as info:
        reporter.receive(_inbox(), _hello(reporter.config, sender=COLLECTOR), 1.0)
    assert info.value.field == "type"
    assert reporter.state == "error"


@pytest.mark.parametrize(
    ("topic_src", "message_sender"), [("d7", "d7"), ("d7", COLLECTOR), (COLLECTOR, "d7")]
)
def test_messages_not_from_the_collector_are_refused_without_state_change(
    topic_src, message_sender
):
    reporter = _streaming_reporter()
    with pytest.raises(RemoteProtocolError) as info:
        reporter.receive(_inbox(topic_src), Ack(run=RUN, sender=message_sender, credit=5), 1.0)
    assert info.value.field == "sender"
    assert reporter.state == "streaming"
    assert reporter.credit == 2
    assert reporter.pop_outbound() == []


def test_stage_closed_closes_the_reporter():
    reporter = _streaming_reporter()
    ctl = topics.parse(topics.ctl(RUN, "stage"))
    other = Stage(run=RUN, sender=COLLECTOR, stage="secagg", state="closed")
    reporter.receive(ctl, other, 1.0)  # another stage: ignored
    assert reporter.state == "streaming"
    reporter.receive(ctl, Stage(run=RUN, sender=COLLECTOR, stage="stream", state="closed",
                                detail="deadline"), 1.0)  # fmt: skip
    assert reporter.state == "closed"
    assert reporter.pop_events() == [StreamClosed(False, "deadline")]
    assert reporter.next_timer() is None
    with pytest.raises(LocalProtocolError):
        reporter.add_readings([1.0], 2.0)


def test_the_ledger_refuses_overspending_and_those_steps_are_never_sent():
    config = make_config()
    reporter = _streaming_reporter(config)
    reporter.ledger.charge(LEDGER_ACCOUNT, config.eps0, t=12, mechanism="other")
    reporter.receive(_inbox(), Ack(run=RUN, sender=COLLECTOR, credit=5), 0.0)
    reporter.add_readings(readings(config, 0), 0.0)

    [event] = reporter.pop_events()
    assert isinstance(event, ReadingsRefused)
    assert event.t == 12
    assert reporter.refused_from == 12
    assert reporter.privatised == 12
    out = reporter.pop_outbound()
    # one typed refusal to the collector instead of silence, then the complete batches
    [refusal] = [o.message for o in out if isinstance(o.message, BudgetRefused)]
    assert (refusal.round, refusal.account, refusal.request) == (12, "stream", "sw_report")
    assert out[0].topic == topics.up(RUN, "d0", "budget_refused")
    sent = [o.message for o in out if isinstance(o.message, SwReport)]
    assert [m.seq for m in sent] == [0, 1]  # batch 2 (steps 10-14) is never complete
    assert all(m.t0 + len(m.values) <= 12 for m in sent)
    assert np.isnan(reporter.values[12:]).all()
    assert not np.isnan(reporter.values[:12]).any()
    account = reporter.ledger.account(LEDGER_ACCOUNT)
    assert account.refusals == 1
    assert account.max_window_spent() <= config.eps * (1 + 1e-9)
    reporter.add_readings([1.0], 1.0)  # later readings change nothing
    assert reporter.pop_outbound() == []
    assert reporter.privatised == 12


def test_reporter_refuses_bad_readings():
    reporter = _streaming_reporter()
    with pytest.raises(LocalProtocolError):
        reporter.add_readings([1.0, math.nan], 0.0)
    with pytest.raises(LocalProtocolError):
        reporter.add_readings(np.zeros(24), 0.0)
    assert reporter.privatised == 0


def test_same_seed_same_values_different_seed_different_values():
    config = make_config()
    x = readings(config, 0)

    def run(seed: int) -> tuple[np.ndarray, list[bytes]]:
        reporter = StreamReporter(config, "d0", np.random.default_rng(seed))
        reporter.start(0.0)
        reporter.receive(_inbox(), Ack(run=RUN, sender=COLLECTOR, credit=5), 0.0)
        reporter.add_readings(x, 0.0)
        return reporter.values, [codec.encode(o.message) for o in reporter.pop_outbound()]

    values_a, wire_a = run(42)
    values_b, wire_b = run(42)
    values_c, _ = run(43)
    np.testing.assert_array_equal(values_a, values_b)
    assert wire_a == wire_b
    assert not np.array_equal(values_a, values_c)
    assert _SW.in_domain(values_a).all()


# --- deadline, restart, liveness ------------------------------------------------------------


def test_a_hold_keeps_a_complete_stage_open_until_released():
    """A side activity (an injected flood) holds the stage: every device delivering
    everything does not close it; releasing the last hold does, exactly once."""
    fleet = Fleet(2, deadline=100.0)
    fleet.collector.hold_open("flood")
    fleet.collector.hold_open("other")
    fleet.start()
    fleet.run()
    assert fleet.collector.complete_devices == 2
    assert fleet.collector.state == "open"
    assert fleet.events(StageClosed) == []
    fleet.collector.release("flood")
    fleet._collector_events()
    assert fleet.collector.state == "open"  # "other" still holds it
    fleet.collector.release("other")
    fleet._collector_events()
    assert fleet.events(StageClosed) == [StageClosed(True, "every device delivered every report")]
    fleet.collector.release("other")  # releasing twice changes nothing
    fleet._collector_events()
    assert len(fleet.events(StageClosed)) == 1


def test_a_hold_does_not_outlive_the_stage_deadline():
    fleet = Fleet(1, deadline=10.0)
    fleet.collector.hold_open("flood")
    fleet.start()
    fleet.run()
    assert fleet.collector.state == "open"
    fleet.now = 10.0
    fleet.collector.handle_timer(10.0)
    fleet._collector_events()
    assert fleet.events(StageClosed) == [StageClosed(False, "stage deadline passed")]
    fleet.collector.release("flood")  # after the close: nothing more happens
    fleet._collector_events()
    assert len(fleet.events(StageClosed)) == 1


def test_deadline_closes_the_stage_and_counts_the_lost():
    fleet = Fleet(3, deadline=50.0)
    fleet.drop = lambda out: (
        out.topic.startswith(topics.up(RUN, "d2", "sw_report")) and out.message.seq >= 1
    )  # d2 dies after its first batch
    fleet.start()
    fleet.run()
    assert [fleet.reporters[n].state for n in fleet.names] == ["done", "done", "streaming"]
    assert fleet.collector.next_timer() == 30.0  # d2's idle check comes first

    fleet.collector.handle_timer(49.999)
    assert fleet.collector.state == "open"
    assert fleet.collector.next_timer() == 50.0
    fleet.now = 50.0
    fleet.collector.handle_timer(50.0)
    fleet._collector_events()
    assert fleet.collector.state == "closed"
    assert fleet.events(StageClosed) == [StageClosed(False, "stage deadline passed")]
    fleet.reporters["d2"].pop_outbound()  # d2 is dead: its retransmissions never arrive
    fleet.drop = lambda out: False
    fleet.run()
    assert fleet.reporters["d2"].state == "closed"
    assert fleet.device_events["d2"] == [StreamClosed(False, "stage deadline passed")]

    assert fleet.collector.missing() == {"d2": [1, 2, 3, 4]}
    summary = fleet.collector.summary()
    assert summary["reports_lost"] == 4
    assert summary["reports_received"] == 11
    assert summary["devices_complete"] == 2
    assert summary["stage_state"] == "closed"
    assert summary["close_reason"] == "stage deadline passed"
    assert fleet.collector.next_timer() is None


def test_deadline_with_a_silent_device():
    fleet = Fleet(2, deadline=10.0)
    fleet.reporters["d1"].start(0.0)  # d0 never starts
    fleet.feed("d1")
    fleet.run()
    fleet.tick(10.0)
    summary = fleet.collector.summary()
    assert summary["devices_silent"] == ["d0"]
    assert summary["reports_lost"] == 5
    assert fleet.collector.missing() == {"d0": [0, 1, 2, 3, 4]}


def test_restarted_collector_restores_what_was_persisted_and_devices_finish():
    fleet = Fleet(3, max_in_flight=4, credit_window=2)  # two devices admitted at a time
    kept = {("d0", 0), ("d0", 1), ("d0", 2), ("d1", 0)}
    fleet.start()
    fleet.run(persist=lambda pending: [key for key in pending if key in kept])
    assert sorted(fleet.persisted) == sorted(kept)
    assert fleet.reporters["d2"].state == "waiting"  # never admitted before the crash

    # the collector restarts: unpersisted accepted reports and queued messages are lost
    fleet.collector = StreamCollector(fleet.config, fleet.names, max_in_flight=4, credit_window=2)
    fleet.pending = []
    fleet.collector_events = []
    fleet.collector.restore(sorted(fleet.persisted))
    fleet.collector.open()
    assert fleet.collector.accepted == 4
    summary = fleet.collector.summary()
    assert summary["reports_received"] == 4
    assert summary["reports_lost"] == 11
    assert fleet.collector.missing()["d0"] == [3, 4]

    fleet.finish()
    assert all(r.state == "done" for r in fleet.reporters.values())
    accepted = sorted((e.device, e.seq) for e in fleet.events(ReportAccepted))
    assert accepted == sorted(set(fleet.all_keys()) - kept)  # restored ones never re-emitted
    assert fleet.events(StageClosed)[0].complete
    assert fleet.collector.summary()["reports_lost"] == 0


def test_restore_of_everything_closes_the_stage():
    config = make_config()
    collector = StreamCollector(config, ["d0", "d1"])
    keys = [(d, s) for d in ("d0", "d1") for s in range(5)] + [("d0", 0), ("zz", 1)]
    collector.restore(keys)
    assert collector.accepted == 10  # a repeated key and an unknown device are ignored
    assert collector.pop_events() == [StageClosed(True, "every device delivered every report")]
    assert collector.summary()["reports_lost"] == 0


def test_idle_device_frees_its_slot_and_is_readmitted_when_heard_from():
    fleet = Fleet(2, max_in_flight=2, credit_window=2, idle_timeout=30.0)  # one at a time
    fleet.start(feed=False)
    fleet.run()
    assert [fleet.reporters[n].state for n in fleet.names] == ["streaming", "waiting"]
    fleet.tick(30.0)  # d0 silent for idle_timeout: d1 gets its slot
    fleet.run()
    assert fleet.reporters["d1"].state == "streaming"
    fleet.feed("d0")  # d0's sensor wakes up
    fleet.feed("d1")
    fleet.finish()
    assert all(r.state == "done" for r in fleet.reporters.values())
    assert fleet.events(StageClosed)[0].complete


@pytest.mark.parametrize("mechanism", ["sw", "sw01", "laplace", "piecewise"])
def test_a_batch_of_equal_readings_gets_independent_noise_per_step(mechanism):
    # Noise drawn once per batch instead of once per value would make the reports of
    # equal readings equal, and the difference of two reports would reveal the difference
    # of two readings exactly (no eps at all) — a bug the all-0-vs-all-1 stream audit cannot
    # see. The device path (StreamReporter, one add_readings call) must give pairwise
    # distinct reports. False failure: continuous mechanisms collide with probability of
    # order 2**-50 per pair; the Laplace grid law (grid 2**-20, scale 1 / eps0, eps0 =
    # 1/16) collides with probability sum_z P(z)^2 ~ 2**-20 eps0 / 2 = 3e-8 per pair, so
    # 28 pairs give 8.3e-7 < 1e-6.
    config = make_config(mechanism=mechanism, eps=0.5, w=8, steps=8, batch_steps=8)
    reporter = StreamReporter(config, "dev00", np.random.default_rng(5))
    reporter.start(0.0)
    reporter.add_readings(np.full(8, 5.0), 0.0)
    assert reporter.privatised == 8
    assert len(set(reporter.values.tolist())) == 8, reporter.values
