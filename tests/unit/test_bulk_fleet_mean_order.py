"""The bulk collector's fleet-mean sums do not depend on the order reports arrive in, nor
on how rows are grouped into reports, nor on retransmissions (protocol/bulk.py,
"Fleet-mean sums"): the machines driven directly, no broker. The former float64
``estimate_sum`` added each report's estimates in arrival order, and its last bits (so
results.json ``fleet_mean_mae``) changed between two runs of one seed."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from ldpfleet.protocol import bulk
from ldpfleet.protocol.bulk import (
    MAX_DEVICES,
    MAX_ENTRIES,
    REPORT_SUM_BITS,
    BulkCollector,
    BulkGateway,
    BulkHello,
    BulkPlan,
    BulkReport,
    decode_bulk,
    encode_bulk,
    fleet_means,
    gateway_of_topic,
)
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.sw import EPS_MAX, GRID, SquareWave
from ldpfleet.protocol.sw import EPS_MIN as SW_EPS_MIN


def plan_of(**kw) -> BulkPlan:
    base = dict(run="t", devices=120, steps=20, batch_steps=5, eps=2.0, w=5,
                gateway_devices=40, partitions=2, window=2, max_entries=20)  # fmt: skip
    base.update(kw)
    return BulkPlan(**base)


def partition_of(topic: str) -> int:
    level = topic.split("/")[2]
    return int(level[1:]) if level.startswith("p") and level[1:].isdigit() else 0


@functools.lru_cache(maxsize=8)
def honest_rows(plan: BulkPlan) -> dict[tuple[int, int], np.ndarray]:
    """Every row the gateways send in a loss-free run, by (partition, gateway) (shared:
    read only)."""
    gateways = [BulkGateway(plan, g) for g in range(plan.gateways)]
    collectors = [BulkCollector(plan, p) for p in range(plan.partitions)]
    rows: dict[tuple[int, int], list[np.ndarray]] = {}
    queue = [o for g in gateways for o in g.start(0.0)]
    while queue:
        out = queue.pop(0)
        if "/svc/" in out.topic:
            continue
        message = decode_bulk(encode_bulk(out.message))
        if "/up/" not in out.topic:
            queue += gateways[int(out.topic.split("/")[-3][1:])].receive(message, 0.0)
            continue
        c, g = collectors[partition_of(out.topic)], gateway_of_topic(out.topic)
        if isinstance(message, BulkHello):
            queue += c.hello(g, message, 0.0)
            continue
        rows.setdefault((c.partition, g), []).append(np.frombuffer(message.entries, c.dtype))
        pending = c.ingest(g, message)
        queue += c.commit(pending, len(pending.rows))
    return {k: np.concatenate(v) for k, v in rows.items()}


def deliver(plan: BulkPlan, rows, seed: int, max_rows: int) -> list[BulkCollector]:
    """``rows`` shuffled and regrouped into reports of 1..``max_rows`` rows (a device at
    most once a report), delivered in a random order, then again in another (a
    retransmission of everything: duplicates and early entries) until every partition is
    complete."""
    rng = np.random.default_rng(seed)
    collectors = [BulkCollector(plan, p) for p in range(plan.partitions)]
    for c in collectors:
        c.admitted[:] = True
    reports = []
    for (p, g), part in rows.items():
        part = part[rng.permutation(len(part))]
        i = 0
        while i < len(part):
            n, seen = int(rng.integers(1, max_rows + 1)), set()
            for j, d in enumerate(part["device"][i : i + n].tolist()):
                if d in seen:
                    n = j
                    break
                seen.add(d)
            entries = part[i : i + n].tobytes()
            report = BulkReport(run=plan.run, sender=f"g{g}", seq=len(reports),
                                mechanism=plan.mechanism, w=plan.w,
                                batch_steps=plan.batch_steps, entries=entries)  # fmt: skip
            reports.append((p, g, report))
            i += n
    for _ in range(plan.batches + 1):  # each pass stores at least each device's next seq
        for k in rng.permutation(len(reports)):
            p, g, report = reports[k]
            pending = collectors[p].ingest(g, report)
            collectors[p].commit(pending, len(pending.rows))
        if all(c.complete for c in collectors):
            return collectors
    raise AssertionError("not complete")


def float_sums(plan: BulkPlan, rows_in_order: list[np.ndarray]) -> np.ndarray:
    """The former rule: each report's estimates added in float64 in arrival order."""
    sw, B = SquareWave(plan.eps0, plan.mechanism), plan.batch_steps
    total = np.zeros(plan.steps)
    for rows in rows_in_order:
        est = plan.lo + sw.estimate(rows["values"]) * (plan.hi - plan.lo)
        steps = rows["seq"].astype(np.int64)[:, None] * B + np.arange(B)
        total += np.bincount(steps.ravel(), est.ravel(), minlength=plan.steps)
    return total


@pytest.mark.parametrize(
    ("mechanism", "partitions"),
    [
        ("sw", 2),
        # the other cases in the slow tier (tests/tiers.py: ~0.4 s each)
        pytest.param("sw01", 1, marks=pytest.mark.slow),
        pytest.param("sw", 3, marks=pytest.mark.slow),
    ],
)
def test_the_sums_and_the_fleet_mean_are_bit_identical_in_any_order_and_grouping(
    mechanism, partitions
):
    plan = plan_of(mechanism=mechanism, partitions=partitions)
    rows = honest_rows(plan)
    runs = [deliver(plan, rows, seed, most) for seed, most in ((1, 40), (2, 7), (3, 2))]
    first = runs[0]
    for other in runs[1:]:
        for a, b in zip(first, other, strict=True):
            assert a.report_sum.tobytes() == b.report_sum.tobytes()
            assert a.estimate_count.tobytes() == b.estimate_count.tobytes()
            assert a.fleet_means().tobytes() == b.fleet_means().tobytes()
            assert a.summary()["reports_received"] == b.summary()["reports_received"]
    assert sum(c.summary()["reports_duplicate"] for c in runs[1]) > 0  # retransmissions came
    # the whole fleet's means from the partitions' sums added, as scenarios.bulk_run does
    whole = [
        fleet_means(plan, sum(c.report_sum for c in run), sum(c.estimate_count for c in run))
        for run in runs
    ]
    assert all(w.tobytes() == whole[0].tobytes() for w in whole)
    assert np.all(sum(c.estimate_count for c in first) == plan.devices)


def test_the_former_float_sum_of_those_deliveries_differs_in_its_last_bits():
    """Why: the same rows added in float64 in two arrival orders (the rule replaced)
    give different bits at some step of these deliveries."""
    plan = plan_of()
    rows = np.concatenate(list(honest_rows(plan).values()))
    rng = np.random.default_rng(5)
    orders = [float_sums(plan, np.array_split(rows[rng.permutation(len(rows))], 30))
              for _ in range(2)]  # fmt: skip
    assert np.any(orders[0] != orders[1])
    np.testing.assert_allclose(orders[0], orders[1], rtol=1e-12)


def test_the_sums_are_exact_and_the_fleet_mean_is_the_mean_of_the_estimates():
    """``report_sum`` is the exact sum of the reports (every honest report on the grid
    ``2**-21``: no rounding); the fleet mean differs from the exactly summed mean of the
    per-report float estimates (the former figure without its summation error) by a few
    roundings of the affine map: ``fl(lo + fl(fl(fl(m - C) / S) * D))`` with ``m`` the
    correctly rounded mean report, against the per-report estimates each within ``3 u
    (|y| + |C|) |D| / S + u |lo|`` (``u = 2**-53``), so together within ``8 u ((1.5 +
    |C|) |D| / S + |lo|)``."""
    plan = plan_of(lo=-3.0, hi=7.0, partitions=1)
    parts = honest_rows(plan)
    rows = np.concatenate(list(parts.values()))
    (c,) = deliver(plan, parts, 7, 25)
    values, B = rows["values"], plan.batch_steps
    assert np.all(values == np.rint(values / (GRID / 2)) * (GRID / 2))  # on the grid
    steps = rows["seq"].astype(np.int64)[:, None] * B + np.arange(B)
    sw = SquareWave(plan.eps0, plan.mechanism)
    est = plan.lo + sw.estimate(values) * (plan.hi - plan.lo)
    u = 2.0**-53
    C, S, D = sw.q * (1 + 2 * sw.b) / 2, 2 * sw.b * sw.gap, plan.hi - plan.lo
    bound = 8 * u * ((1.5 + abs(C)) * abs(D) / S + abs(plan.lo))
    means = c.fleet_means()
    for t in range(plan.steps):
        at = steps == t
        exact = sum(Fraction(float(y)) for y in values[at])
        assert Fraction(int(c.report_sum[t]), 2**REPORT_SUM_BITS) == exact
        assert c.estimate_count[t] == at.sum() == plan.devices
        former = math.fsum(est[at].tolist()) / int(at.sum())
        assert abs(means[t] - former) <= bound, (t, means[t], former, bound)


def test_off_grid_values_inside_the_range_count_rounded_and_stay_order_free():
    """A gateway may send values inside the output range but off the mechanism's grid
    (no honest one does): each counts rounded to ``2**-35``, still the same bits in any
    order."""
    plan = plan_of(partitions=1)
    rows = {k: v.copy() for k, v in honest_rows(plan).items()}
    rng = np.random.default_rng(11)
    for part in rows.values():
        jitter = rng.uniform(-1e-7, 1e-7, part["values"].shape)
        part["values"] = np.clip(part["values"] + jitter, -0.4, 1.4)
    a, b = deliver(plan, rows, 1, 30)[0], deliver(plan, rows, 2, 3)[0]
    assert a.report_sum.tobytes() == b.report_sum.tobytes()
    all_rows = np.concatenate(list(rows.values()))
    steps = all_rows["seq"].astype(np.int64)[:, None] * plan.batch_steps + np.arange(5)
    for t in range(plan.steps):
        exact = sum(Fraction(float(y)) for y in all_rows["values"][steps == t])
        error = abs(Fraction(int(a.report_sum[t]), 2**REPORT_SUM_BITS) - exact)
        assert error <= Fraction(plan.devices, 2 ** (REPORT_SUM_BITS + 1))


def test_no_plan_can_overflow_the_sums():
    """The proof at ``REPORT_SUM_BITS``: one report's float partial sums stay exact
    integers, a step's int64 total cannot overflow, and both mechanisms' output ranges
    lie within (-0.5, 1.5) at every eps."""
    bound = Fraction(3, 2) * 2**REPORT_SUM_BITS
    assert MAX_ENTRIES * bound < 2**53
    assert MAX_DEVICES * bound < 2**63
    assert float(GRID / 2 * 2**REPORT_SUM_BITS).is_integer()  # an honest report fits the grid
    for eps in (SW_EPS_MIN, 1e-6, 1e-3, 0.1, 1.0, 5.0, EPS_MAX):
        for variant in ("sw", "sw01"):
            sw = SquareWave(eps, variant)
            assert -0.5 < sw.output_low <= sw.output_high < 1.5


@pytest.mark.parametrize("variant", ["sw", "sw01"])
def test_fleet_means_reads_the_estimate_s_own_affine_map(variant):
    """``fleet_means`` forms ``(mean(y) - C) / S`` with ``_estimate_affine``'s ``C`` and
    ``S``: they are ``SquareWave.estimate``'s, bit for bit, at every eps."""
    rng = np.random.default_rng(3)
    for eps in (SW_EPS_MIN, 1e-4, 0.02, 0.4, 1.0, 7.0, EPS_MAX):
        sw = SquareWave(eps, variant)
        centre, scale = bulk._estimate_affine(sw)
        y = rng.uniform(sw.output_low, sw.output_high, 1000)
        assert np.array_equal((y - centre) / scale, sw.estimate(y))
        assert 0 <= centre < 1  # fleet_means' int64 bound


def test_a_mechanism_whose_range_the_proof_does_not_cover_is_refused(monkeypatch):
    plan = plan_of()

    class Wide:
        output_low, output_high = -2.0, 3.0

        def __init__(self, *args) -> None:
            pass

    monkeypatch.setattr(bulk, "SquareWave", Wide)
    with pytest.raises(ParameterError) as caught:
        BulkCollector(plan, 0)
    assert caught.value.field == "mechanism" and "(-1.5, 1.5)" in caught.value.reason


def test_the_runner_adds_the_partitions_files_to_the_same_fleet_means(tmp_path):
    """``estimates.npz`` as the partition collectors write it (``report_sum``, ``count``),
    added by ``scenarios.bulk_run._report_sums``: the fleet means of the machines' sums."""
    from ldpfleet.collector.bulk import _write_outputs
    from ldpfleet.scenarios.bulk_run import _report_sums

    plan = plan_of()
    collectors = deliver(plan, honest_rows(plan), 4, 13)
    for c in collectors:
        (tmp_path / f"p{c.partition}").mkdir()
        _write_outputs(tmp_path / f"p{c.partition}", {}, c)
    report_sum, count = _report_sums(plan, tmp_path)
    assert report_sum.dtype == count.dtype == np.int64
    assert np.array_equal(report_sum, sum(c.report_sum for c in collectors))
    assert np.array_equal(count, np.full(plan.steps, plan.devices))
    sw = SquareWave(plan.eps0, plan.mechanism)
    rows = np.concatenate(list(honest_rows(plan).values()))
    est = plan.lo + sw.estimate(rows["values"]) * (plan.hi - plan.lo)
    steps = rows["seq"].astype(np.int64)[:, None] * plan.batch_steps + np.arange(5)
    means = fleet_means(plan, report_sum, count)
    former = np.bincount(steps.ravel(), est.ravel(), minlength=plan.steps) / plan.devices
    np.testing.assert_allclose(means, former, rtol=1e-13, atol=1e-15)
