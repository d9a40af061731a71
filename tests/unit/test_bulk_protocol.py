"""Bulk gateways (protocol/bulk.py), tier 1: the machines driven directly with a fake
clock and no broker: loss-free delivery, dedup, retransmission, ACL / budget / bounds
refusals, per-device acknowledgement, persist-before-ack, and the noise's independence
of the gateway layout."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.protocol.bulk import (
    REJECT_REASONS,
    BulkAck,
    BulkCollector,
    BulkGateway,
    BulkHello,
    BulkLedger,
    BulkPlan,
    BulkReport,
    NoisePrf,
    decode_bulk,
    encode_bulk,
    gateway_of_topic,
    noise_words,
    seeded_noise_key,
)
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError, RemoteProtocolError
from ldpfleet.protocol.ledger import WindowAccount
from ldpfleet.protocol.sw import SquareWave


def plan_of(**kw) -> BulkPlan:
    base = dict(run="t", devices=230, steps=20, batch_steps=5, eps=2.0, w=5,
                gateway_devices=100, partitions=2, window=2, max_entries=40,
                retransmit_after=10.0)  # fmt: skip
    base.update(kw)
    return BulkPlan(**base)


class Net:
    """Every machine of a plan and the messages between them; ``drop(topic, message)``
    loses a delivery, ``dup`` delivers it twice."""

    def __init__(self, plan: BulkPlan, *, tamper=None, drop=None, dup=None) -> None:
        self.plan = plan
        self.collectors = [BulkCollector(plan, p) for p in range(plan.partitions)]
        tamper = tamper or {}
        self.gateways = [BulkGateway(plan, g, tamper=tamper.get(g)) for g in range(plan.gateways)]
        self.drop = drop or (lambda topic, message: False)
        self.dup = dup or (lambda topic, message: False)
        self.queue: list = []
        self.stored: list[list[np.ndarray]] = [[] for _ in self.collectors]
        self.acks: list[BulkAck] = []
        self.notices: list = []
        self.now = 0.0

    def start(self) -> None:
        for g in self.gateways:
            self.queue += g.start(self.now)

    def partition_of_topic(self, topic: str) -> int:
        level = topic.split("/")[2]
        return int(level[1:]) if level.startswith("p") and level[1:].isdigit() else 0

    def deliver(self) -> None:
        while self.queue:
            out = self.queue.pop(0)
            if "/svc/" in out.topic:  # the collector's Reject notices: for the trace
                self.notices.append(out.message)
                continue
            message = decode_bulk(encode_bulk(out.message))  # through the wire format
            if self.drop(out.topic, message):
                continue
            for _ in range(2 if self.dup(out.topic, message) else 1):
                self.route(out.topic, message)

    def route(self, topic: str, message) -> None:
        if "/up/" in topic:
            c = self.collectors[self.partition_of_topic(topic)]
            gateway = gateway_of_topic(topic)
            if isinstance(message, BulkHello):
                self.queue += c.hello(gateway, message, self.now)
                return
            pending = c.ingest(gateway, message)
            self.stored[c.partition].append(pending.rows.copy())
            self.queue += c.commit(pending, len(pending.rows))
        else:
            if isinstance(message, BulkAck):
                self.acks.append(message)
            gateway = int(topic.split("/")[-3][1:])
            self.queue += self.gateways[gateway].receive(message, self.now)

    def run(self, rounds: int = 10) -> None:
        self.start()
        self.deliver()
        for _ in range(rounds):
            if all(g.done for g in self.gateways):
                return
            self.now += self.plan.retransmit_after
            for g in self.gateways:
                self.queue += g.handle_timer(self.now)
            self.deliver()

    def rows(self) -> np.ndarray:
        parts = [r for per in self.stored for r in per]
        rows = np.concatenate(parts)
        return np.sort(rows, order=["device", "seq"])

    def total(self, key: str) -> int:
        return sum(c.summary()[key] for c in self.collectors)


def test_a_clean_run_stores_every_report_once_and_every_gateway_finishes():
    net = Net(plan_of())
    net.run()
    plan = net.plan
    assert all(g.done for g in net.gateways)
    assert all(c.complete for c in net.collectors)
    rows = net.rows()
    assert len(rows) == plan.devices * plan.batches == net.total("reports_received")
    assert net.total("reports_lost") == 0 and net.total("reports_rejected") == 0
    # every (device, seq) exactly once
    keys = rows["device"].astype(np.int64) * 1000 + rows["seq"]
    assert len(np.unique(keys)) == len(keys)
    # ledgers: every device charged eps0 at each of its steps, no window above eps
    for g in net.gateways:
        assert np.all(g.ledger.charges == plan.steps)
        assert g.ledger.max_window_spent() <= plan.eps * (1 + 1e-9)
    # values inside the SW output domain
    sw = SquareWave(plan.eps0)
    assert np.all(sw.in_domain(rows["values"]))


def test_duplicated_deliveries_are_counted_and_stored_once():
    net = Net(plan_of(), dup=lambda topic, message: isinstance(message, BulkReport))
    net.run()
    rows = net.rows()
    assert len(rows) == net.plan.devices * net.plan.batches
    assert net.total("reports_duplicate") == len(rows)
    assert net.total("reports_lost") == 0


def test_lost_reports_and_acks_are_retransmitted_with_the_same_values():
    seen: dict[str, int] = {}

    def drop(topic, message):
        # lose the first copy of every third report and of every fifth acknowledgement
        key = f"{topic}#{message.seq}#{type(message).__name__}"
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            return False
        return (isinstance(message, BulkReport) and message.seq % 3 == 0) or (
            isinstance(message, BulkAck) and message.seq % 5 == 0
        )

    lossy, clean = Net(plan_of(), drop=drop), Net(plan_of())
    lossy.run()
    clean.run()
    assert sum(g.counters.retransmitted_entries for g in lossy.gateways) > 0
    assert lossy.total("reports_duplicate") > 0  # acks lost: reports came twice
    assert lossy.total("reports_lost") == 0
    # the retransmitted entries carry the values first privatised (never re-drawn)
    a, b = lossy.rows(), clean.rows()
    assert np.array_equal(a, b)


def _foreign_entry(entries: np.ndarray) -> np.ndarray:
    """Gateway 0 adds an entry for device 150 (gateway 1's) at seq 0."""
    if entries["seq"][0] != 0:
        return entries
    extra = entries[:1].copy()
    extra["device"] = 150
    return np.concatenate([entries, extra])


def test_an_entry_for_another_gateways_device_is_refused_without_touching_it():
    net = Net(plan_of(partitions=1), tamper={0: _foreign_entry})
    net.run()
    by_reason = {r: sum(c.counters.rejections_by_reason[r] for c in net.collectors)
                 for r in REJECT_REASONS}  # fmt: skip
    assert by_reason["acl"] >= 1 and by_reason["budget"] == by_reason["out_of_range"] == 0
    # each report with rejected entries is announced once on svc/collector/reject
    assert net.notices and all(n.device == "g0" and n.code == "acl" for n in net.notices)
    # device 150 still got all its own reports in: nothing lost
    rows = net.rows()
    assert np.sum(rows["device"] == 150) == net.plan.batches
    assert net.total("reports_lost") == 0
    assert net.total("reports_received") == net.plan.devices * net.plan.batches


def _tamper_one(field: str, value: float):
    def tamper(entries: np.ndarray) -> np.ndarray:
        if entries["seq"][0] == 1 and entries["device"][0] == 0:
            entries = entries.copy()
            if field == "values":
                entries["values"][0, 2] = value
            else:
                entries[field][0] = value
        return entries

    return tamper


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("eps0", 2.0, "budget"),  # eps0 * w = 10 > eps = 2
        ("eps0", 0.3, "mismatch"),  # within budget, but not the run's eps0 (0.4)
        ("values", 7.5, "out_of_range"),
        ("values", math.nan, "out_of_range"),
    ],
)
def test_a_bad_entry_of_an_own_device_is_rejected_counted_and_resolved(field, value, reason):
    net = Net(plan_of(partitions=1), tamper={0: _tamper_one(field, value)})
    net.run()
    c = net.collectors[0]
    assert c.counters.rejections_by_reason[reason] == 1
    assert c.counters.reports_rejected == 1 == c.counters.rejected_resolved
    # never stored, the device's other batches are
    rows = net.rows()
    dev0 = rows[rows["device"] == 0]
    assert sorted(dev0["seq"].tolist()) == [s for s in range(net.plan.batches) if s != 1]
    assert c.summary()["reports_lost"] == 0
    assert net.gateways[0].counters.rejected[reason] == 1
    assert net.gateways[0].done  # the rejected entry is not retransmitted


def test_the_ack_lists_every_device_of_the_report_with_its_acked_seq():
    net = Net(plan_of(partitions=1, max_entries=100))
    net.run()
    first = next(a for a in net.acks if a.seq == 0)
    devices = np.frombuffer(first.devices, "<u4")
    acked = np.frombuffer(first.acked, "<i4")
    assert devices.tolist() == list(range(100)) and np.all(acked == 0)


def test_no_ack_and_no_dedup_state_before_the_rows_are_persisted():
    plan = plan_of(partitions=1)
    c, g = BulkCollector(plan), BulkGateway(plan, 0)
    (hello,) = g.start(0.0)
    (admit,) = c.hello(0, hello.message, 0.0)
    reports = g.receive(admit.message, 0.0)
    pending = c.ingest(0, reports[0].message)
    assert len(pending.rows) == 40 and np.all(c.next_seq == 0)  # nothing advanced yet
    with pytest.raises(LocalProtocolError):
        c.ingest(0, reports[1].message)  # the previous one is not committed
    with pytest.raises(LocalProtocolError) as error:
        c.commit(pending, stored=39)
    assert error.value.field == "stored"
    (ack,) = c.commit(pending, stored=40)
    assert isinstance(ack.message, BulkAck) and c.next_seq[:40].tolist() == [1] * 40


def test_reports_of_a_gateway_not_admitted_are_refused_as_acl():
    plan = plan_of(partitions=1)
    c, g = BulkCollector(plan), BulkGateway(plan, 1)
    g.start(0.0)
    g._admitted[0] = 2  # the gateway believes it was admitted; the collector never was asked
    (report, *_) = g._fill(0, 0.0)
    pending = c.ingest(1, report.message)
    assert len(pending.rows) == 0 and len(pending.rejected_codes) == 40
    assert set(pending.rejected_codes.tolist()) == {REJECT_REASONS.index("acl")}


def test_a_hello_that_differs_from_the_plan_is_refused_naming_the_field():
    plan = plan_of(partitions=1)
    c = BulkCollector(plan)
    (hello,) = BulkGateway(plan_of(partitions=1, eps=3.0), 0).start(0.0)
    with pytest.raises(RemoteProtocolError) as error:
        c.hello(0, hello.message, 0.0)
    assert error.value.field == "eps" and "3.0" in str(error.value)
    assert not c.admitted[0]


def test_the_noise_does_not_depend_on_the_gateway_layout():
    a = Net(plan_of(devices=60, gateway_devices=100))
    b = Net(plan_of(devices=60, gateway_devices=7, max_entries=3))
    a.run()
    b.run()
    assert np.array_equal(a.rows(), b.rows())


def test_the_bulk_ledger_decides_as_the_window_account():
    rng = np.random.default_rng(5)
    eps, w = 1.0, 4
    ledger = BulkLedger(50, eps, w)
    accounts = [WindowAccount(eps, w) for _ in range(50)]
    t = 0
    for _ in range(30):
        count = int(rng.integers(1, 4))
        eps0 = float(rng.choice([0.1, 0.25, 0.3]))
        rows = np.flatnonzero(rng.random(50) < 0.6)
        granted = ledger.charge_run(rows, t, count, eps0)
        for row, ok in zip(rows, granted, strict=True):
            probe = WindowAccount(eps, w)
            probe.__dict__.update({k: (v.copy() if hasattr(v, "copy") else v)
                                   for k, v in accounts[row].__dict__.items()})  # fmt: skip
            n, refusal = probe.charge_run(t, eps0, count)
            assert ok == (n == count and refusal is None)
            if ok:
                accounts[row].charge_run(t, eps0, count)
        t += count + int(rng.integers(0, 3))
    assert ledger.max_window_spent() <= eps * (1 + 1e-9)
    assert ledger.refusals.sum() > 0  # the pattern did overspend sometimes
    with pytest.raises(LocalProtocolError):
        ledger.charge_run(np.arange(50), 0, 1, 0.1)  # steps already charged


def test_sw_through_the_noise_prf_is_unbiased():
    # n values at v = 0.3: the mean estimate's standard deviation is sqrt(Var / n); a
    # deviation beyond 4.9 sigma has probability 1e-6 (two-sided normal), and n = 200,000
    # makes the CLT error negligible.
    n, v, eps0 = 200_000, 0.3, 0.4
    sw = SquareWave(eps0)
    words = noise_words(NoisePrf(seeded_noise_key(3)), np.arange(n), np.arange(1))
    assert np.all((words >= 0) & (words < 2**62))

    class W:
        def integers(self, low, high, size):
            assert (low, high, size) == (0, 2**62, (n, 2))  # no rare extra draw here
            return words.reshape(size)

    y = sw.perturb(np.full(n, v), W())
    sigma = math.sqrt(float(sw.variance(v)) / n)
    assert abs(sw.estimate_mean(y) - v) < 4.9 * sigma


def test_bad_plans_name_the_field_and_the_limit():
    with pytest.raises(ParameterError) as error:
        plan_of(steps=22)
    assert error.value.field == "batch_steps" and "22" in str(error.value)
    with pytest.raises(ParameterError) as error:
        plan_of(w=5000)
    assert error.value.field == "w" and "1024" in str(error.value)
    with pytest.raises(ParameterError) as error:
        plan_of(mechanism="laplace")
    assert error.value.field == "mechanism"


def test_malformed_entries_are_refused_with_a_typed_error():
    plan = plan_of(partitions=1)
    c = BulkCollector(plan)
    bad = BulkReport(run="t", sender="g0", mechanism="sw", w=5, batch_steps=5, entries=b"x" * 57)
    with pytest.raises(RemoteProtocolError) as error:
        c.ingest(0, bad)
    assert error.value.field == "entries"
    with pytest.raises(RemoteProtocolError):
        decode_bulk(b'{"type": "bulk_report", "run": "t"}')


def test_partitions_and_keys_follow_the_documented_hashes():
    import hashlib

    from ldpfleet.protocol.topics import partition_of

    plan = plan_of(devices=12_345, partitions=7, seed=9)
    ids = plan.device_ids(12_000, 345)
    assert ids[0] == "d12000" and plan.device_id(5) == "d00005"
    assert plan.partitions_of(12_000, 345).tolist() == [partition_of(d, 7) for d in ids]
    from ldpfleet.protocol.bulk import device_keys

    digest = hashlib.sha256(b"9:d12001").digest()
    assert int(device_keys(plan, 12_000, 2)[1]) == int.from_bytes(digest[:8], "little")


def test_the_admit_window_keeps_the_fleet_within_max_in_flight():
    plan = plan_of(devices=1000, gateway_devices=100, max_entries=40, window=4, max_in_flight=300)
    assert plan.admit_window == 1  # 10 gateways x 40 entries > 300: at least 1
    assert plan_of(max_in_flight=359).admit_window == 2  # 3 gateways x 40 entries: 359 // 120
    assert plan_of(max_in_flight=10**6).admit_window == 2  # ``window`` caps it
    net = Net(plan)
    most = 0
    route = net.route

    def watching(topic, message):
        nonlocal most
        route(topic, message)
        most = max(most, *(n for g in net.gateways for n in g._inflight.values()))

    net.route = watching
    net.run()
    assert most == 1 and all(c.complete for c in net.collectors)


# ---- decode_bulk names the field (helper V, after helper W's hostile-input sweep) --------

_REPORT = (
    b'{"type": "bulk_report", "run": "t", "sender": "g0", "seq": 3, "mechanism": "sw", '
    b'"w": 5, "batch_steps": 5, "entries": ""}'
)


@pytest.mark.parametrize(
    ("payload", "field", "code"),
    [
        (_REPORT.replace(b'"seq": 3', b'"seq": "three"'), "seq", "schema"),
        (_REPORT.replace(b'"w": 5', b'"w": -1'), "w", "schema"),
        (_REPORT.replace(b'"batch_steps": 5, ', b""), "batch_steps", "schema"),
        (_REPORT.replace(b'"run": "t"', b'"run": "../x"'), "run", "schema"),
        (_REPORT.replace(b'"bulk_report"', b'"teleport"'), "type", "schema"),
        (_REPORT.replace(b'"seq": 3', b'"v": 2, "seq": 3'), "v", "unsupported_version"),
        # another version whose other fields differ too: refused for the version
        (_REPORT.replace(b'"seq": 3', b'"v": 2, "seq": "x"'), "v", "unsupported_version"),
        (b"[" * 100_000, "payload", "schema"),
        (b'{"type": "bulk_report"', "payload", "undecodable"),
    ],
)
def test_decode_bulk_names_the_field_and_checks_the_version(payload, field, code):
    """``decode_bulk`` named ``payload`` for every schema error instead of the field (as
    ``protocol.codec.decode`` does) and read ``v`` without checking it (the bulk pump
    checked it after); both fixed in the decoder itself."""
    with pytest.raises(RemoteProtocolError) as caught:
        decode_bulk(payload)
    assert (caught.value.field, caught.value.code) == (field, code)


def test_decode_bulk_still_takes_an_honest_report():
    message = decode_bulk(_REPORT)
    assert isinstance(message, BulkReport) and message.seq == 3 and message.v == 1
