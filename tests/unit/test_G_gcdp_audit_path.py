"""The ``gcdp`` audit entry runs the fleet's own release path (collector/audit/gcdp_canary.py):
theta from ``calibrate_fleet`` as the stage builds it, one ``GcdpReleaser`` run per trial
with its ledger account and ``release_rng``, the output what goes on ``rel/gcdp``; the
correct path passes, and a bug planted in the fleet's draw or in the release machine is a
certified violation."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.audit.battery import build_spec, run_audit
from ldpfleet.collector.audit.gcdp_canary import (
    GCDP_NODES,
    GCDP_WINDOW,
    NO_RELEASE,
    calibration,
    fleet_release,
    fleet_theta,
    node0_scores,
)
from ldpfleet.collector.audit.mutants import mutant_named, planted
from ldpfleet.collector.gcdp.release import laplace_release
from ldpfleet.collector.gcdp_stage import release_rng

SEED = 3  # the audit tests' seed (tests/unit/test_audit.py)


def test_theta_is_the_stages_and_gives_node_0_almost_all_of_eps_at_scale_b():
    # the entry's power: node 0's share of eps_rel bounds what it can certify (the former
    # direct gc_dp call on hand-set theta gave coordinate 0 only 0.616 eps_rel)
    for eps in (0.5, 1.0, 2.0):
        theta = fleet_theta(eps)
        assert theta.method == "gcdp" and theta.tau == 0.15 and theta.window == GCDP_WINDOW
        assert theta.d == len(GCDP_NODES) and theta.edges == ()
        assert np.all(theta.bounds == 1.0 / GCDP_WINDOW)
        assert np.array_equal(theta.scales, theta.bounds)  # s_0 = B_0: no xi above it
        assert theta.budgets[0] >= 0.993 * eps  # (1 - 2/300) eps_rel less ~1e-6 to mu = 0
        assert theta.budgets.sum() <= eps
    data, labels = calibration()
    assert data.shape == labels.shape == (8 * GCDP_WINDOW, len(GCDP_NODES))


@pytest.mark.parametrize("moved", [False, True])
def test_a_run_publishes_one_release_drawn_by_algorithm_4_from_release_rng(moved):
    # what the canary reads equals Algorithm 4 on the window means with the stage's
    # generator for the run's seed: the entry audits the fleet's draw, generator and theta
    theta = fleet_theta(1.0)
    (values,) = fleet_release(theta, moved, 12345)
    means = np.zeros(len(GCDP_NODES))
    means[0] = 1.0 / GCDP_WINDOW if moved else 0.0
    expected = laplace_release(
        means,
        bounds=theta.bounds,
        scales=theta.scales,
        budgets=theta.budgets,
        eps_rel=theta.eps_rel,
        low=0.0,
        high=1.0,
        rng=release_rng(12345),
    )
    assert values == expected.tolist()


def test_scores_of_a_run():
    shift = 1.0 / GCDP_WINDOW
    assert node0_scores([], shift) == (NO_RELEASE, 0.0, 0)
    mean, ratio, count = node0_scores([[0.05, 7.0, -3.0]], shift)
    assert (mean, count) == (0.05, 1) and ratio == pytest.approx(0.5)
    mean, ratio, count = node0_scores([[0.3, 0.0, 0.0], [-0.2, 0.0, 0.0]], shift)
    assert (count, ratio) == (2, 1.0) and mean == pytest.approx(0.05)
    assert node0_scores([[0.1, 0, 0], [0.25, 0, 0]], shift)[1] == 2.0  # two top events


def test_the_correct_fleet_path_passes():
    # gamma = 1e-6: a correct release is reported as a violation with probability <= 1e-6
    # (the audit's Clopper-Pearson guarantee), so this test fails falsely at most that often.
    result = run_audit("gcdp", 1.0, gamma=1e-6, seed=SEED)
    assert result.verdict == "inconclusive" and result.eps_lb <= 1.0
    assert result.n_sel == result.n_eval == 2000
    assert build_spec("gcdp", 1.0).trials == 4000


@pytest.mark.parametrize("name", ["gcdp eps off by 2x", "gcdp window published twice"])
def test_each_gcdp_mutant_is_a_certified_violation_through_the_fleet_path(name):
    # Both mutants release node 0 at a true loss of 2 eps_0 = 1.987 at the claim 1: the 2x
    # draw with ratio e^1.987 at its top event (x >= 1/W: probability 1/2 under D', 0.068
    # under D), the window sent twice at the top event of the likelihood ratio (both copies
    # >= 1/W: 1/4 against 0.034). With 2,000 evaluation runs the log of the counts' ratio
    # has a standard deviation of 0.09 and 0.13 (delta method), and the gamma = 0.05 bound
    # sits about 0.15 and 0.25 below it: the margins to the claim, 0.75 and 0.5, are about
    # 8 and 4.8 standard deviations, a miss in well under 1e-6 of seeds. Development seeds
    # 0-2 gave 1.70-1.91 and 1.60-1.63.
    with planted(mutant_named(name)):
        result = run_audit("gcdp", 1.0, gamma=0.05, seed=SEED)
    assert result.verdict == "violation", result
    assert result.eps_lb > 1.0
