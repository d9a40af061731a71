"""Small gaps found by helper T2's planted-bug hunt (round 2): each test names the mutant
it kills."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.broker.auth import topic_matches
from ldpfleet.collector.bucket_isotonic import isotonic_counts


@pytest.mark.parametrize("centre", [False, True])
def test_isotonic_counts_stay_counts_when_the_noise_overshoots(centre):
    """Kills I02: the isotonic fit of the cumulative counts not clipped to ``[0, devices]``
    above: noisy sums whose running total passes the device count gave a negative last
    bucket ([5, 5, -6] for these sums). The counts are non-negative and sum to
    ``devices`` whatever the noise."""
    counts = isotonic_counts([5.0, 5.0, -3.0], 4, centre=centre)
    assert np.all(counts >= 0.0)
    assert counts.sum() == pytest.approx(4.0)
    np.testing.assert_allclose(counts, [4.0, 0.0, 0.0])


@pytest.mark.parametrize(
    ("pattern", "topic", "want"),
    [
        ("a/b", "a/b", True),
        ("a/b", "a/b/c", False),  # a filter without '#' matches its own depth only
        ("a/+", "a/b/c", False),
        ("a/b/c", "a/b", False),
        ("a/#", "a", True),  # '#' covers the parent level
        ("a/+/c", "a/x/c", True),
        ("+/x", "$SYS/x", False),  # no first-level wildcard reaches a '$' topic
        ("#", "$SYS/x", False),
    ],
)
def test_topic_matches_is_mqtt_matching(pattern, topic, want):
    """Kills U01: ``topic_matches`` accepting a topic deeper than the filter
    (``len(pattern) <= len(topic)``): the subscribe check against the denied topics
    (``AccessPolicy._denied``) then refused filters that cannot match them."""
    assert topic_matches(pattern, topic) is want


def test_calibration_noise_pays_for_the_grid_rounding(monkeypatch):
    """Kills PC2: ``_exact_laplace`` drawing at ``sensitivity / eps`` instead of
    ``(sensitivity + n * FINE_GRID) / eps`` (one ulp up): rounding each of the n values to
    the grid can move it one more grid step, which the scale must pay for (its docstring),
    else the release is not eps-DP for its stated sensitivity."""
    from ldpfleet.collector.gcdp import private_calibration as pc

    seen = []

    def spy(rng, values, scale, grid):
        seen.append((scale, grid))
        return np.asarray(values, dtype=float)

    monkeypatch.setattr(pc, "laplace_on_grid", spy)
    values = np.full(10, 0.5)
    pc._exact_laplace(np.random.default_rng(0), values, 2.0, 0.5)
    scale, grid = seen[0]
    assert grid == pc.FINE_GRID
    assert scale == float(np.nextafter((2.0 + 10 * pc.FINE_GRID) / 0.5, np.inf))


def test_a_raw_run_reports_its_worst_central_account():
    """Kills AN1 (``max_window_spent`` the smallest account's, ``min``) and AN2
    (``within_budget`` when ANY account is within its eps, ``any``): results.json's
    privacy entry of a raw run (the central release's ledger) must say that one account
    over its eps is over budget, and give that account's spend."""
    from ldpfleet.collector.analytics import privacy_entry
    from ldpfleet.protocol.stream import StreamConfig

    config = StreamConfig(run="r", eps=1.0, w=4, steps=8, mechanism="raw", batch_steps=4,
                          lo=0.0, hi=1.0)  # fmt: skip
    ledger = {
        "max_window_spent": 0.0,
        "collector": {
            "accounts": {
                "gcdp": {"max_window_spent": 0.5, "eps": 1.0},
                "calibration": {"max_window_spent": 1.5, "eps": 1.0},
            }
        },
    }
    entry = privacy_entry(ledger, config, None)
    assert entry["max_window_spent"] == 1.5
    assert entry["within_budget"] is False
    ledger["collector"]["accounts"]["calibration"]["max_window_spent"] = 1.0
    entry = privacy_entry(ledger, config, None)
    assert entry["max_window_spent"] == 1.0 and entry["within_budget"] is True


def test_the_geometric_grid_is_lo_times_hi_over_lo_to_the_j_over_k_plus_one():
    """Kills TH3: the geometric thresholds at ``lo (hi/lo)^(j/k)`` (the top one at ``hi``,
    clamped to ``hi - 1``: a wasted probe) instead of the documented
    ``lo (hi/lo)^(j/(k+1))``. The answer would be the same (every spacing finds the same
    θ), so only the grid shows it: the rounds (secure sums) it costs."""
    from ldpfleet.collector.theta_search import DeviationSearch

    search = DeviationSearch(1, 1000, 100, 2.0, fanout=3, spacing="geometric")
    assert search.query() == [int(1000 ** (j / 4)) for j in (1, 2, 3)] == [5, 31, 177]
