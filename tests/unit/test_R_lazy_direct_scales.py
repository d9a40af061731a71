"""``bench gcdp``'s calibration computes Risk-DP's "direct" scales (a second
``empirical_influence`` pass, gamma = 0) only under the reading that reads them
(``risk_scales=direct``), with the same numbers as before (helper R). No statistics: exact
values and call counts."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.app import bench_gcdp as bench
from ldpfleet.app.gcdp_datasets import parse_readings, prepare
from ldpfleet.collector.gcdp import calibrate_from_data, empirical_influence, release_scales

# three nodes, 1 and 2 strongly correlated; node 0 independent (as test_E_gcdp_fidelity)
_RNG = np.random.default_rng(3)
_BASE = _RNG.normal(size=400)
NODES = np.column_stack([_RNG.normal(size=400), _BASE, _BASE + 0.1 * _RNG.normal(size=400)])
DELTAS = np.array([[0.30, 0.0, 0.0], [0.0, 0.20, 0.10], [0.0, 0.10, 0.20]])
BOUNDS = np.full(3, 0.05)
TAU = 0.15


def _counted(monkeypatch) -> list[float]:
    """Patch the bench's ``empirical_influence`` to record each call's gamma."""
    gammas: list[float] = []

    def counting(*args, gamma: float = 1.2, **kwargs):
        gammas.append(gamma)
        return empirical_influence(*args, gamma=gamma, **kwargs)

    monkeypatch.setattr(bench, "empirical_influence", counting)
    return gammas


def _calibrate(**options) -> dict:
    return bench._calibration(NODES, lambda: DELTAS, None, BOUNDS, np.zeros(3), TAU, **options)


def test_direct_scales_are_the_gamma_zero_pass_and_left_out_on_request(monkeypatch):
    gammas = _counted(monkeypatch)
    full = _calibrate()
    assert gammas == [1.2, 0.0]
    graph = calibrate_from_data(NODES, tau=TAU)
    eager = release_scales(BOUNDS, empirical_influence(DELTAS, graph, None, gamma=0.0))
    assert np.array_equal(full["direct_scales"], eager)
    assert np.array_equal(eager, [0.30, 0.20, 0.20])  # by hand: s_k = max(B_k, delta_kk)
    lean = _calibrate(direct=False)
    assert gammas == [1.2, 0.0, 1.2]  # GC-DP's xi only
    assert "direct_scales" not in lean
    assert lean.keys() == full.keys() - {"direct_scales"}
    for key, value in lean.items():
        assert np.array_equal(value, full[key]) if key != "allocation" else value == full[key]


@pytest.mark.parametrize(
    ("readings", "direct_pass"),
    [("", False), ("risk_scales=gcdp", False), ("risk_scales=direct", True)],
)
def test_prepared_calibration_runs_the_direct_pass_only_under_its_reading(
    monkeypatch, readings, direct_pass
):
    prep = prepare("occupancy", None, bench.WINDOW, parse_readings(readings))
    gammas = _counted(monkeypatch)
    cal = bench._calibrate_prepared(prep, 0.2)
    assert gammas == ([1.2, 0.0] if direct_pass else [1.2])
    assert ("direct_scales" in cal) == direct_pass
    # what Risk-DP releases with is there whatever the reading
    assert np.asarray(bench._risk_scales(cal, prep.readings)).shape == np.shape(prep.bounds)
