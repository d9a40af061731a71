"""Tier 1 (pure): the GC-DP fleet path — window formation, the ordered ledger-charged
release, fleet calibration, the ``raw`` stream mechanism and its refusal of bad values."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.gcdp import (
    GcdpReleaser,
    WindowAssembler,
    allocate_budget,
    calibrate_fleet,
    calibrate_from_data,
    empirical_influence,
    gc_dp,
    lap_dp,
    masking_deltas,
    mean_bound,
    release_scales,
)
from ldpfleet.collector.gcdp.windows import RELEASE_ACCOUNT, ReleaseRefused, WindowReleased
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError
from ldpfleet.protocol.ledger import PrivacyLedger, RawAccount
from ldpfleet.protocol.messages import GcdpRelease, SwReport
from ldpfleet.protocol.raw import RawMechanism
from ldpfleet.protocol.stream import ReportAccepted, StreamCollector, StreamConfig, StreamReporter

M, W, STEPS = 4, 5, 23  # 4 windows of 5 steps; steps 20..22 are a trailing partial window


def calibration(seed: int = 0, t: int = 400, m: int = M) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.random((t, 1))
    return np.clip(0.6 * base + 0.4 * rng.random((t, m)), 0.0, 1.0)


def theta(method: str = "gcdp", eps_rel: float = 1.0):
    return calibrate_fleet(calibration(), window=W, eps_rel=eps_rel, method=method)


def streams(seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).random((M, STEPS))


def batches(x: np.ndarray, size: int) -> list[tuple[int, int, np.ndarray]]:
    """(node, t0, values) for every batch of every node."""
    return [
        (i, t0, x[i, t0 : t0 + size]) for i in range(x.shape[0]) for t0 in range(0, STEPS, size)
    ]


NODES = [f"d{i:04d}" for i in range(M)]


def releaser(th=None, seed: int = 7, ledger: PrivacyLedger | None = None, rng=None):
    ledger = ledger or PrivacyLedger("collector")
    rng = rng if rng is not None else np.random.default_rng(seed)
    return GcdpReleaser("r1", NODES, th or theta(), STEPS, ledger, rng), ledger


# --- window formation -------------------------------------------------------------------


def test_assembler_completes_windows_from_batches_in_any_order():
    x = streams()
    items = batches(x, 3)  # batches straddle window boundaries
    np.random.default_rng(0).shuffle(items)
    assembler = WindowAssembler(M, W, STEPS)
    completed = []
    for node, t0, values in items:
        completed += assembler.add(node, t0, values)
    assert sorted(completed) == [0, 1, 2, 3] and len(completed) == 4
    for k in range(4):
        t0, means = assembler.take(k)
        assert t0 == k * W
        np.testing.assert_array_equal(means, x[:, k * W : (k + 1) * W].mean(axis=1))
    assert assembler.pending() == []  # the trailing partial window was never started


def test_assembler_refuses_duplicates_and_bad_values():
    assembler = WindowAssembler(M, W, STEPS)
    assembler.add(0, 0, [0.1, 0.2, 0.3])
    with pytest.raises(LocalProtocolError) as caught:
        assembler.add(0, 2, [0.5, 0.5])
    assert caught.value.field == "t0"
    for bad in ([np.nan], [1.5], [-0.1], [np.inf]):
        with pytest.raises(LocalProtocolError) as caught:
            assembler.add(1, 0, bad)
        assert caught.value.field == "values"
    with pytest.raises(LocalProtocolError, match="node"):
        assembler.add(M, 0, [0.5])
    with pytest.raises(LocalProtocolError, match="not complete"):
        assembler.take(0)
    with pytest.raises(ParameterError) as caught:
        WindowAssembler(M, 0, STEPS)
    assert caught.value.field == "window"


# --- the release machine ----------------------------------------------------------------


def test_release_is_in_window_order_once_each_whatever_the_delivery_order():
    x = streams()
    results = []
    for order_seed in range(3):
        items = batches(x, 2)
        np.random.default_rng(order_seed).shuffle(items)
        machine, _ = releaser()
        for node, t0, values in items:
            machine.add(NODES[node], t0, values)
        out = machine.pop_outbound()
        assert [o.message.window for o in out] == [0, 1, 2, 3]
        assert all(o.topic == topics.rel("r1", "gcdp") for o in out)
        results.append([o.message.values for o in out])
    assert results[0] == results[1] == results[2]  # the same draws, whatever the order


def test_release_equals_gc_dp_run_directly_with_the_same_seed():
    x = streams()
    th = theta()
    machine, ledger = releaser(th, seed=11)
    for node, t0, values in batches(x, 5):
        machine.add(NODES[node], t0, values)
    released = [np.array(o.message.values) for o in machine.pop_outbound()]
    rng = np.random.default_rng(11)
    for k in range(4):
        direct = gc_dp(
            x[:, k * W : (k + 1) * W].mean(axis=1),
            bounds=th.bounds,
            scales=th.scales,
            utility=th.utility,
            exposure_norm=th.exposure_norm,
            eps_rel=1.0,
            low=0.0,
            high=1.0,
            rng=rng,
        )
        np.testing.assert_array_equal(released[k], direct)
    account = ledger.account(RELEASE_ACCOUNT)
    assert account.charges == 4 and account.window_spent() == [1.0] * 4
    assert ledger.mechanisms(RELEASE_ACCOUNT) == {"gcdp_laplace": 4}


def test_lap_method_equals_lap_dp():
    x = streams()
    th = theta("lap", eps_rel=2.0)
    np.testing.assert_array_equal(th.scales, th.bounds)
    machine, _ = releaser(th, seed=3)
    for node, t0, values in batches(x, 5):
        machine.add(NODES[node], t0, values)
    released = [np.array(o.message.values) for o in machine.pop_outbound()]
    rng = np.random.default_rng(3)
    for k in range(4):
        direct = lap_dp(x[:, k * W : (k + 1) * W].mean(axis=1), bounds=th.bounds, eps_rel=2.0,
                        low=0.0, high=1.0, rng=rng)  # fmt: skip
        np.testing.assert_array_equal(released[k], direct)


class SpyRng:
    """A generator that records the ledger's spend at every draw."""

    def __init__(self, ledger: PrivacyLedger) -> None:
        self.ledger = ledger
        self.inner = np.random.default_rng(0)
        self.spent_at_draw: list[float] = []

    def laplace(self, *args, **kwargs):
        self.spent_at_draw.append(self.ledger.account(RELEASE_ACCOUNT).total_spent)
        return self.inner.laplace(*args, **kwargs)

    def integers(self, *args, **kwargs):  # the exact Laplace sampler (protocol.samplers)
        self.spent_at_draw.append(self.ledger.account(RELEASE_ACCOUNT).total_spent)
        return self.inner.integers(*args, **kwargs)

    @property
    def draws(self) -> list[float]:
        """The spend at each release's draws (an exact draw takes several integers)."""
        seen = self.spent_at_draw
        return [x for i, x in enumerate(seen) if i == 0 or x != seen[i - 1]]


def test_ledger_is_charged_eps_rel_before_each_draw():
    ledger = PrivacyLedger("collector")
    spy = SpyRng(ledger)
    machine, _ = releaser(theta(eps_rel=0.5), ledger=ledger, rng=spy)
    for node, t0, values in batches(streams(), 5):
        machine.add(NODES[node], t0, values)
    assert spy.draws == [0.5, 1.0, 1.5, 2.0]  # window k's charge precedes its draw
    assert ledger.account(RELEASE_ACCOUNT).max_window_spent() == 0.5  # per-record loss


def test_a_refused_charge_draws_and_publishes_nothing():
    ledger = PrivacyLedger("collector")
    spy = SpyRng(ledger)
    machine, _ = releaser(ledger=ledger, rng=spy)
    ledger.charge(RELEASE_ACCOUNT, 1.0, t=0)  # window 0's slot already spent
    for node, t0, values in batches(streams(), 5):
        machine.add(NODES[node], t0, values)
    out = machine.pop_outbound()
    assert [o.message.window for o in out] == [1, 2, 3]
    assert len(spy.draws) == 3
    refused = [e for e in machine.pop_events() if isinstance(e, ReleaseRefused)]
    assert [e.window for e in refused] == [0] and machine.unreleased() == [0]


def test_finish_releases_complete_windows_behind_a_gap_and_never_the_incomplete():
    x = streams()
    machine, _ = releaser()
    for node, t0, values in batches(x, 5):
        if not (node == 2 and t0 == 5):  # window 1 misses one node's batch
            machine.add(NODES[node], t0, values)
    assert [o.message.window for o in machine.pop_outbound()] == [0]
    machine.finish()
    assert [o.message.window for o in machine.pop_outbound()] == [2, 3]
    assert machine.unreleased() == [1]
    released = [e for e in machine.pop_events() if isinstance(e, WindowReleased)]
    assert [e.window for e in released] == [0, 2, 3]
    with pytest.raises(LocalProtocolError):
        machine.add(NODES[2], 5, x[2, 5:10])


def test_release_messages_decode_and_carry_the_declared_parameters():
    th = theta()
    machine, _ = releaser(th)
    for node, t0, values in batches(streams(), 5):
        machine.add(NODES[node], t0, values)
    for out in machine.pop_outbound():
        message = codec.decode(codec.encode(out.message))
        assert isinstance(message, GcdpRelease) and message == out.message
        assert message.mechanism == "gcdp_laplace" and message.eps_cal == 0.0
        assert message.eps_rel == 1.0 and message.steps == W and message.t0 == W * message.seq
        assert message.budgets == th.budgets.tolist() and message.scales == th.scales.tolist()
        assert message.edges == list(th.edges) and message.nodes == NODES
        assert "one clipped channel value at one timestamp" in message.adjacency


def test_releaser_refuses_a_theta_of_the_wrong_size():
    with pytest.raises(ParameterError) as caught:
        GcdpReleaser("r1", NODES[:3], theta(), STEPS, PrivacyLedger("c"), np.random.default_rng())
    assert caught.value.field == "theta"


# --- calibration --------------------------------------------------------------------------


def test_calibrate_fleet_is_algorithms_1_to_3_called_directly():
    data = calibration()
    labels = (np.arange(data.shape[0]) // 37 % 2).astype(float)
    th = calibrate_fleet(data, window=W, eps_rel=1.0, tau=0.1, labels=labels)
    bounds = np.full(M, mean_bound(0.0, 1.0, W))
    graph = calibrate_from_data(data, tau=0.1)
    xi = empirical_influence(masking_deltas(lambda a: a.mean(axis=0) / W, data, 0.0, 1.0), graph)
    scales = release_scales(bounds, xi)
    np.testing.assert_array_equal(th.bounds, bounds)
    np.testing.assert_array_equal(th.scales, scales)
    assert th.edges == tuple(graph.edges)
    np.testing.assert_array_equal(
        th.budgets, allocate_budget(1.0, scales, th.utility, graph.exposure_norm)
    )
    assert np.all(th.scales >= th.bounds) and th.eps_cal == 0.0
    assert th.utility.min() >= 0.0 and th.utility.max() <= 1.0
    assert th.budgets.sum() <= 1.0
    assert np.all(calibrate_fleet(data, window=W, eps_rel=1.0).utility == 1.0)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"data": np.full((50, 3), 1.5)}, "data"),
        ({"data": np.full((3, 3), 0.5)}, "data"),
        ({"window": 0}, "window"),
        ({"eps_rel": 0.0}, "eps_rel"),
        ({"method": "gau"}, "method"),
        ({"tau": 1.5}, "tau"),
        ({"labels": np.full(400, 2.0)}, "labels"),
    ],
)
def test_calibrate_fleet_refuses_bad_input_naming_the_field(kwargs, field):
    args = {"data": calibration(), "window": W, "eps_rel": 1.0, **kwargs}
    data = args.pop("data")
    with pytest.raises(ParameterError) as caught:
        calibrate_fleet(data, **args)
    assert caught.value.field == field


# --- the raw stream mechanism ------------------------------------------------------------


def raw_config(**changes) -> StreamConfig:
    base = {"run": "r1", "mechanism": "raw", "eps": 1.0, "w": 5, "steps": 10, "batch_steps": 5,
            "lo": 0.0, "hi": 1.0}  # fmt: skip
    return StreamConfig(**{**base, **changes})


def test_raw_reporter_sends_clipped_values_and_spends_nothing():
    reporter = StreamReporter(raw_config(lo=10.0, hi=20.0), "d0000", np.random.default_rng(0))
    assert isinstance(reporter.ledger.account("stream"), RawAccount)
    reporter.start(0.0)
    reporter.add_readings([5.0, 10.0, 15.0, 20.0, 25.0, 12.0, 12.0, 12.0, 12.0, 12.0], 0.0)
    np.testing.assert_array_equal(reporter.values[:5], [0.0, 0.0, 0.5, 1.0, 1.0])
    account = reporter.ledger.to_dict()["accounts"]["stream"]
    assert account["kind"] == "raw" and account["spent"] == 0.0 and account["charges"] == 0
    hello = reporter.pop_outbound()[0].message
    assert hello.mechanism == "raw" and hello.eps0 == 0.0  # eps, w: the central release's
    assert (hello.eps, hello.w) == (1.0, 5)
    with pytest.raises(LocalProtocolError):
        reporter.ledger.charge("stream", 0.1)


def test_raw_config_spends_nothing_per_step_and_the_mechanism_refuses_a_budget():
    assert raw_config().eps0 == 0.0 and raw_config().mechanism_object().eps == 0.0
    with pytest.raises(ParameterError) as caught:
        raw_config(eps=0.0)  # eps declares the central budget: it must be a real budget
    assert caught.value.field == "eps"
    with pytest.raises(ParameterError):
        RawMechanism(0.5)
    assert RawMechanism().in_domain(np.array([0.0, 1.0, 1.5, -0.1, np.nan, np.inf])).tolist() == [
        True, True, False, False, False, False,
    ]  # fmt: skip


def test_stream_collector_refuses_out_of_range_raw_values_and_aggregates_none():
    config = raw_config()
    collector = StreamCollector(config, ["d0000"])
    reporter = StreamReporter(config, "d0000", np.random.default_rng(0))
    reporter.start(0.0)
    topic_of = lambda o: topics.parse(o.topic)  # noqa: E731
    for out in reporter.pop_outbound():
        collector.receive(topic_of(out), out.message, 0.0)
    collector.pop_outbound()
    up = topics.parse(topics.up("r1", "d0000", "sw_report"))
    for index, bad in ((1, 1.5), (2, -0.25), (0, float("inf")), (3, float("nan"))):
        values = [0.5] * 5
        values[index] = bad
        report = SwReport(run="r1", sender="d0000", seq=0, t0=0, mechanism="raw", eps0=0.0, w=5,
                          values=values)  # fmt: skip
        collector.receive(up, report, 0.0)
    wrong = SwReport(run="r1", sender="d0000", seq=0, t0=0, mechanism="sw", eps0=0.5, w=5,
                     values=[0.5] * 5)  # fmt: skip
    collector.receive(up, wrong, 0.0)
    assert collector.rejected == 5
    assert dict(collector.rejections_by_field) == {
        "values[1]": 1, "values[2]": 1, "values[0]": 1, "values[3]": 1, "mechanism": 1,
    }  # fmt: skip
    assert not any(isinstance(e, ReportAccepted) for e in collector.pop_events())
    assert collector.accepted == 0


# --- partitions: the coordinator releases from the workers' window means -----------------


def test_a_release_from_partition_window_means_equals_the_one_from_the_steps():
    """Two workers (nodes {0, 2} and {1, 3}) send their window means through
    ``GcdpShare`` and the wire, out of order; the coordinator's ``given_means`` stage
    releases exactly what one collector releases from the steps: values, ledger, order."""
    from ldpfleet.collector.gcdp_stage import GcdpShare

    x = streams()
    one, one_ledger = releaser()
    one.add_many((NODES[i], t0, v.tolist()) for i, t0, v in batches(x, 3))
    one.finish()
    given_ledger = PrivacyLedger("collector")
    given = GcdpReleaser(
        "r1", NODES, theta(), STEPS, given_ledger, np.random.default_rng(7), given_means=True
    )
    shares = [GcdpShare("r1", [NODES[0], NODES[2]], W, STEPS, (0, 2)),
              GcdpShare("r1", [NODES[1], NODES[3]], W, STEPS, (1, 2))]  # fmt: skip
    for i, t0, v in batches(x, 3):
        shares[i % 2].on_persisted([(NODES[i], t0 // 3, t0, v.tolist(), 0.0)])
    messages = [codec.decode(m) for share in shares for m in share._outbox]
    assert len(messages) == 2 * (STEPS // W)
    for message in sorted(messages, key=lambda m: (-m.window, m.partition)):  # worst order
        given.add_means(message.window, message.nodes, message.means)
    given.finish()
    assert given.released == one.released == list(range(STEPS // W))
    assert [codec.encode(o[1]) for o in given.pop_outbound()] == [
        codec.encode(o[1]) for o in one.pop_outbound()
    ]
    assert given_ledger.to_dict() == one_ledger.to_dict()


def test_window_means_that_do_not_fit_are_refused_naming_the_field():
    given = GcdpReleaser(
        "r1", NODES, theta(), STEPS, PrivacyLedger("c"), np.random.default_rng(0), given_means=True
    )
    given.add_means(1, NODES[:2], [0.5, 0.5])
    for args, field in (
        ((1, NODES[:1], [0.2]), "nodes"),  # given twice
        ((STEPS // W, NODES[:1], [0.2]), "window"),  # past the stream
        ((0, ["intruder"], [0.2]), "nodes"),
        ((0, NODES[2:3], [1.5]), "means"),
    ):
        with pytest.raises(LocalProtocolError) as caught:
            given.add_means(*args)
        assert caught.value.field == field, args
    one, _ = releaser()
    with pytest.raises(LocalProtocolError) as caught:
        one.add_means(0, NODES[:1], [0.5])  # a releaser that assembles steps
    assert caught.value.field == "means"
