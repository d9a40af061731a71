"""Knife-edge medians at small ε and the bucket resolution (issue 20, brief D;
docs/cadr-private.md): the committed grid resolves ego-Facebook's median from exact bucket
counts, and the helpers of scripts/cadr_bucket_resolution.py (rule A, the isotonic reading)
keep their stated properties."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
from ldpfleet.collector.degree_postprocess import degree_prior
from ldpfleet.devices.graphs import NAMED_GRAPHS
from ldpfleet.protocol.cadr_theta_noise import bucket_count, bucket_grid

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "cadr_bucket_resolution.py"


def _script():
    spec = importlib.util.spec_from_file_location("cadr_bucket_resolution", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _prior_median(degrees: np.ndarray, thresholds: list[int]) -> int:
    n = len(degrees)
    exact = np.bincount(np.searchsorted(thresholds, degrees), minlength=len(thresholds) + 1)
    prior = degree_prior(exact, thresholds, n - 1, n)
    return int(np.searchsorted(np.cumsum(prior), 0.5 - 1e-12))


def test_facebooks_median_inside_a_geometric_bucket_is_resolved_from_exact_counts():
    # ego-Facebook at ε = 0.5 (ε_θ = 0.43): median 25 in the 5-degree bucket 23..27, 30.5
    # and 24.5 devices from the 1/2 crossing; the exact counts' prior (shaped interpolation)
    # names 25, so a private median off by one comes from the noise, not the resolution
    degrees = NAMED_GRAPHS["facebook"]().degrees()
    n = len(degrees)
    thresholds = bucket_grid(n - 1, bucket_count(n, 0.43))
    j = int(np.searchsorted(thresholds, 25))
    assert (thresholds[j - 1] + 1, thresholds[j]) == (23, 27)
    assert np.mean(degrees <= 24) < 0.5 <= np.mean(degrees <= 25)
    assert _prior_median(degrees, thresholds) == 25


def test_rule_a_grows_with_n_eps_up_to_its_cap_and_makes_a_third_of_the_grid_integer():
    mod = _script()
    assert mod.count_a(4039, 0.43) == 217  # round(4039 · 0.43 / 8), no cap 48
    assert mod.count_a(100_000, 0.5) == mod.RULE_A_CAP
    assert mod.count_a(100, 0.5) == 16  # the floor of bucket_count
    grid = mod.grid_a(4038, 217)
    assert grid[:73] == list(range(73)) and grid[-1] == 4037 and len(grid) <= 217
    assert bucket_grid(4038, 48)[:17] == list(range(17))  # the committed cut is unchanged


def test_isotonic_reading_is_a_consistent_histogram_and_the_identity_on_clean_sums():
    mod = _script()
    rng = np.random.default_rng(5)
    noisy = np.array([40.0, -7.0, 300.0, 12.0, -3.0, 5.0, -9.0, 2.0])
    out = mod.isotonic_sums(noisy, 340)
    assert np.all(out >= -1e-9) and np.isclose(out.sum(), 340.0)
    clean = rng.integers(0, 50, size=12).astype(float)
    assert np.allclose(mod.isotonic_sums(clean, int(clean.sum())), clean)
    fitted = mod._pava(np.array([3.0, 1.0, 2.0, 5.0, 4.0]))
    assert np.all(np.diff(fitted) >= 0) and np.isclose(fitted.sum(), 15.0)
    assert np.allclose(fitted, [2.0, 2.0, 2.0, 4.5, 4.5])
