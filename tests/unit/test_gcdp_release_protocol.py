"""Tier 1 (pure): the GC-DP release's decisions in ``protocol.gcdp_release`` — order, the
charge before the draw, and the admission of a partition worker's window means — with a
stub theta and an injected draw (no collector code), and the collector's ``GcdpReleaser``
as the same machine with Algorithm 4 injected."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from ldpfleet.collector.gcdp import calibrate_fleet
from ldpfleet.collector.gcdp.windows import GcdpReleaser, laplace_draw
from ldpfleet.protocol import gcdp_release
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.gcdp_release import (
    RELEASE_ACCOUNT,
    GcdpReleaseMachine,
    ReleaseRefused,
    WindowReleased,
)
from ldpfleet.protocol.ledger import PrivacyLedger
from ldpfleet.protocol.messages import GcdpRelease
from ldpfleet.protocol.partition import GcdpWindowMeans

NODES = ["d0", "d1", "d2"]
W, STEPS = 4, 13  # 3 windows of 4 steps, step 12 a trailing partial window


@dataclass(frozen=True)
class StubTheta:
    """The fields the machine reads of a theta, without calibrating anything."""

    method: str = "gcdp"
    window: int = W
    eps_rel: float = 1.0
    eps_cal: float = 0.0
    adjacency: str = "node-window"
    bounds: np.ndarray = field(default_factory=lambda: np.full(3, 0.25))
    scales: np.ndarray = field(default_factory=lambda: np.full(3, 0.25))
    budgets: np.ndarray = field(default_factory=lambda: np.full(3, 1.0 / 3))
    edges: tuple[tuple[int, int], ...] = ((0, 1),)

    @property
    def d(self) -> int:
        return int(self.bounds.size)


def shift_draw(means, theta, rng):
    """A draw whose output names its input: means + 10 (and one generator draw)."""
    rng.random()
    return np.asarray(means) + 10.0


def machine(*, given_means: bool = True, ledger: PrivacyLedger | None = None):
    return GcdpReleaseMachine(
        "r1",
        NODES,
        StubTheta(),
        STEPS,
        ledger or PrivacyLedger("collector"),
        np.random.default_rng(0),
        shift_draw,
        given_means=given_means,
    )


def means(window: int, nodes=NODES, values=None, **changes) -> GcdpWindowMeans:
    fields = dict(
        run="r1",
        sender="collector",
        partition=0,
        partitions=2,
        window=window,
        t0=window * W,
        steps=W,
        nodes=list(nodes),
        means=list(values if values is not None else [0.1 * (i + 1) for i in range(len(nodes))]),
    )
    fields.update(changes)
    return GcdpWindowMeans(**fields)


def test_protocol_module_imports_only_protocol_code():
    tree = ast.parse(Path(gcdp_release.__file__).read_text(encoding="utf-8"))
    imported = [
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    ]
    ours = [name for name in imported if name.startswith("ldpfleet.")]
    assert ours and all(name.startswith("ldpfleet.protocol") for name in ours), ours


def test_windows_release_in_index_order_with_the_injected_draw():
    m = machine()
    m.receive_means(means(1))
    assert m.released == [] and not m.has_outbound  # window 1 waits for window 0
    m.receive_means(means(0, NODES[:2]))
    m.receive_means(means(0, NODES[2:], [0.3]))
    assert m.released == [0, 1]
    out = m.pop_outbound()
    assert [o.topic for o in out] == ["ldp/r1/rel/gcdp"] * 2
    assert all(isinstance(o.message, GcdpRelease) for o in out)
    assert out[0].message.values == pytest.approx([10.1, 10.2, 10.3])
    events = [e for e in m.pop_events() if isinstance(e, WindowReleased)]
    assert [e.window for e in events] == [0, 1]


def test_the_charge_comes_before_the_draw_and_a_refusal_draws_nothing():
    ledger = PrivacyLedger("collector")
    m = machine(ledger=ledger)
    ledger.charge(RELEASE_ACCOUNT, 1.0, t=0, mechanism="elsewhere")  # window 0's budget used
    draws = m._rng.bit_generator.state["state"]["state"]
    m.receive_means(means(0))
    assert m.refused == [0] and m.released == [] and not m.has_outbound
    assert m._rng.bit_generator.state["state"]["state"] == draws  # nothing drawn
    assert isinstance(m.pop_events()[0], ReleaseRefused)


@pytest.mark.parametrize(
    ("message", "field", "words"),
    [
        (means(0, run="r2"), "steps", "of this run"),
        (means(0, steps=W + 1), "steps", f"window of {W} steps"),
        (means(1, t0=3), "t0", "starts at its step"),
        (means(3, t0=3 * W), "window", "not in [0, 3)"),
        (means(0, ["d0", "zz"]), "nodes", "'zz' is not a node"),
        (means(0, ["d0", "d0"], [0.1, 0.2]), "nodes", "given twice"),
        (means(0, ["d0"], [1.5]), "means", "[0, 1]"),
    ],
)
def test_window_means_that_do_not_fit_are_refused_counted_and_never_filed(message, field, words):
    m = machine()
    with pytest.raises(RemoteProtocolError) as refused:
        m.receive_means(message)
    assert refused.value.field == field and words in refused.value.reason
    assert m.means_refused == 1
    assert m.assembler.pending() == [] and m.released == []
    m.receive_means(means(0))  # the machine keeps serving
    assert m.released == [0] and m.means_refused == 1


def test_a_node_mean_given_twice_across_messages_and_means_after_finish_are_refused():
    m = machine()
    m.receive_means(means(1, NODES[:1]))
    with pytest.raises(RemoteProtocolError, match="given twice"):
        m.receive_means(means(1, NODES[:1]))
    m.finish()
    with pytest.raises(RemoteProtocolError) as late:
        m.receive_means(means(0))
    assert late.value.field == "state"
    assert m.means_refused == 2 and m.released == []


def test_a_step_releaser_refuses_window_means():
    m = machine(given_means=False)
    with pytest.raises(RemoteProtocolError) as refused:
        m.receive_means(means(0))
    assert refused.value.field == "means" and m.means_refused == 1


def test_the_collector_releaser_is_the_machine_with_algorithm_4_injected():
    rng = np.random.default_rng(3)
    data = np.clip(0.5 + 0.2 * rng.standard_normal((80, 3)), 0.0, 1.0)
    theta = calibrate_fleet(data, window=W, eps_rel=1.0)
    kwargs = dict(given_means=True)
    ours = GcdpReleaser(
        "r1", NODES, theta, STEPS, PrivacyLedger("c"), np.random.default_rng(5), **kwargs
    )
    bare = GcdpReleaseMachine(
        "r1",
        NODES,
        theta,
        STEPS,
        PrivacyLedger("c"),
        np.random.default_rng(5),
        laplace_draw,
        **kwargs,
    )
    assert isinstance(ours, GcdpReleaseMachine)
    for m in (ours, bare):
        for k in (1, 0, 2):
            m.receive_means(means(k))
    assert [o.message.values for o in ours.pop_outbound()] == [
        o.message.values for o in bare.pop_outbound()
    ]
