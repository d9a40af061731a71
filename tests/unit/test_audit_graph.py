"""Graph canaries for the CADR-LDP degree release (collector/audit/graph_canaries.py):
the node-LDP neighbouring relation, the driver's semantics on asymmetric lists, the
witnesses, the correct pipeline against its battery claims, a planted bug, and the
certified finding that the whole view is not eps-node-LDP (docs/audit-graph.md)."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.audit.battery import BATTERY, run_audit
from ldpfleet.collector.audit.core import audit
from ldpfleet.collector.audit.graph_canaries import (
    ALPHA,
    GRAPH_BATTERY,
    GRAPH_FINDINGS,
    STAR_LEAVES,
    cadr_release,
    construction,
    graph_witnesses,
    node_pair_differs_in_one_list,
)

from ldpfleet import protocol

KINDS = ("star", "star-edge", "er", "connected")


def dsr_sensitivity_forgotten(mp) -> None:
    """Planted bug: the DSR Laplace scale is 1 / eps_dsr instead of theta / eps_dsr."""
    real = protocol.dsr.dsr_scale
    mp.setattr(protocol.dsr, "dsr_scale", lambda theta, eps: real(1, eps))


@pytest.mark.parametrize("kind", KINDS)
def test_node_ldp_pair_changes_exactly_the_centres_list(kind):
    gc = construction(kind)
    assert node_pair_differs_in_one_list(gc) and gc.changed() == [gc.centre]
    v = gc.centre
    assert set(gc.leaves) <= set(gc.lists_d[v]) and len(gc.leaves) == STAR_LEAVES
    for leaf in gc.leaves:  # the leaves still list v in D'
        assert v in gc.lists_dprime[leaf] and gc.lists_dprime[leaf] == gc.lists_d[leaf]
    assert not set(gc.leaves) & set(gc.lists_dprime[v])
    # D is a symmetric graph; D' is asymmetric only at v
    for i, own in enumerate(gc.lists_d):
        assert all(i in gc.lists_d[j] for j in own)


def test_connected_keeps_the_hub_and_the_group_pair_changes_k_plus_1_lists():
    gc = construction("connected")
    assert len(gc.lists_dprime[gc.centre]) == 1  # v keeps w only
    group = construction("star", symmetric=True)
    assert group.changed() == [0, *group.leaves]
    assert not node_pair_differs_in_one_list(group)
    assert all(not group.lists_dprime[i] for i in group.changed())


def test_driver_on_asymmetric_lists_with_almost_no_noise():
    # eps = 400: DSR noise scale theta / 360, RR at 20 (truthful up to 2e-9)
    gc = construction("star", leaves=3)
    theta = 2
    rng = np.random.default_rng(0)
    d = np.rint(cadr_release(gc.lists_d, theta, 400.0, rng, degree_bound=3))
    assert d[0] == theta and d[1:].sum() == theta and set(d[1:]) <= {0, 1}
    dp = np.rint(cadr_release(gc.lists_dprime, theta, 400.0, rng, degree_bound=3))
    assert np.all(dp == 0)  # v refuses every leaf: nobody keeps an edge


def test_witnesses_on_hand_made_outputs():
    gc = construction("star", leaves=2)  # v = 0, leaves 1, 2; D degrees (2, 1, 1)
    w = graph_witnesses(gc, theta=2)
    y = np.array([[2.0, 1.0, 1.0], [0.0, 0.0, 0.0], [-3.0, 5.0, 0.4]])
    np.testing.assert_allclose(w["centre degree"](y), [2.0, 0.0, -3.0])
    np.testing.assert_allclose(w["edge count"](y), [2.0, 0.0, 1.2])
    np.testing.assert_allclose(w["max degree"](y), [2.0, 0.0, 5.0])
    # reference histogram of D over 0..2: (0, 2/3, 1/3)
    np.testing.assert_allclose(w["histogram L1"](y), [0.0, 2.0, 2 / 3 + 2 / 3], atol=1e-12)
    np.testing.assert_allclose(w["star score"](y), [4.0, 0.0, 1.4])


def test_entries_are_registered():
    for name in (*GRAPH_BATTERY, "secagg"):
        assert name in BATTERY
    assert not set(GRAPH_FINDINGS) & set(BATTERY)


@pytest.mark.parametrize("name", ["degree-star", "degree-star-edge", "degree-star-group"])
def test_correct_pipeline_is_inconclusive_against_the_battery_claim(name):
    result = run_audit(name, 1.0, trials=1000, gamma=0.05, seed=1)
    assert result.verdict == "inconclusive", result
    assert result.eps_claimed >= 2.0


def test_er_construction_runs_and_is_inconclusive():
    result = run_audit("degree-er", 1.0, trials=400, gamma=0.05, seed=1)
    assert result.verdict == "inconclusive" and result.eps_claimed == 2.0


def test_planted_bug_is_caught(monkeypatch):
    correct = run_audit("degree-star", 1.0, trials=2000, gamma=0.05, seed=3)
    assert correct.verdict == "inconclusive"
    dsr_sensitivity_forgotten(monkeypatch)
    broken = run_audit("degree-star", 1.0, trials=2000, gamma=0.05, seed=3)
    assert broken.verdict == "violation" and broken.eps_lb > 2.0, broken


def test_finding_the_whole_view_is_not_eps_node_ldp():
    # k = theta = 1: v's release and its leaf's release each move by theta; the certified
    # bound exceeds CADR-LDP's claim eps but stays below the derived 2 (1 - alpha) eps.
    spec = GRAPH_FINDINGS["degree-star-tight"](1.0, 0.0)
    result = audit(spec.canary, spec.witnesses, eps=spec.eps, n_sel=2000, n_eval=2000, seed=0)
    assert result.verdict == "violation" and result.eps_lb > 1.0
    assert result.eps_lb <= 2 * (1 - ALPHA) * 1.0
