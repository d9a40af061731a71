"""Issue 19, attack AUC readings: the temporal attacker's smoothing, the informed attacker's
censored likelihood and Gaussian discriminant, ``noise_law`` against each method's release,
the per-method and best-allocation oracles, and the readings that select them.

Statistical thresholds. ``test_noise_law_is_each_release_s_noise`` compares, per method and
coordinate, a sample mean of n = 20,000 independent draws with its expectation at Z = 6
standard errors: mean |Z| of Laplace(b) (sd of |Z| = b) and the sample variance of
Gau-DP's noise (relative sd sqrt(2 / n) for a Gaussian; the discrete Gaussian on a grid
2^-10 sigma fine is Gaussian to far below that). P(|N(0,1)| > 6) = 2.0e-9 per check; 25
checks give a false-failure rate of 5e-8 (CLT, n = 20,000). Seeds are fixed, so each run
is deterministic; a planted bug (two coordinates' scales swapped) is shown to fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.app import bench_gcdp as bench
from ldpfleet.app.gcdp_datasets import READINGS, Readings, parse_readings, prepare
from ldpfleet.collector.gcdp.evaluation import (
    INFORMED_BANDWIDTH,
    NoiseLaw,
    f1_percent,
    informed_attack_scores,
    informed_gaussian_scores,
    temporal_smooth,
)
from ldpfleet.protocol.errors import ParameterError
from scipy import stats

from tests.unit.test_bench_gcdp import synthetic_frame

Z = 6.0
N = 20_000


@pytest.fixture(scope="module")
def frame():
    return (*synthetic_frame(900, 1), *synthetic_frame(300, 2))


# --- temporal attacker ------------------------------------------------------------------------


def test_temporal_smooth_averages_the_neighbours_that_exist():
    x = np.arange(5.0)[:, None] * np.array([[1.0, 10.0]])
    out = temporal_smooth(x, 1)
    assert np.allclose(out[:, 0], [0.5, 1.0, 2.0, 3.0, 3.5])
    assert np.allclose(out[:, 1], 10 * out[:, 0])
    assert np.allclose(temporal_smooth(x, 0), x)
    assert np.allclose(temporal_smooth(x, 10), np.full_like(x, 1.0) * x.mean(axis=0))
    for bad in (-1, 1.5, True):
        with pytest.raises(ParameterError) as info:
            temporal_smooth(x, bad)
        assert info.value.field == "lag"


# --- informed attacker ------------------------------------------------------------------------


def test_informed_scores_are_the_censored_likelihood_ratio():
    prior = np.array([[0.2], [0.7]])  # class 0 at 0.2, class 1 at 0.7
    attr = np.array([0, 1])
    released = np.array([[0.4], [0.0], [1.0]])
    lap = informed_attack_scores(released, prior, attr, NoiseLaw("laplace", np.array([0.1])))
    # inside: -|0.4-0.7|/b + |0.4-0.2|/b; at 0: log P(Z <= -x) = log(1/2) - x/b; at 1 likewise
    assert np.allclose(lap, [-1.0, -7.0 + 2.0, -3.0 + 8.0])
    sigma = 0.15
    gau = informed_attack_scores(released, prior, attr, NoiseLaw("gaussian", np.array([sigma])))
    norm = stats.norm(scale=sigma)
    expected = [
        norm.logpdf(0.4 - 0.7) - norm.logpdf(0.4 - 0.2),
        norm.logcdf(-0.7) - norm.logcdf(-0.2),
        norm.logsf(1.0 - 0.7) - norm.logsf(1.0 - 0.2),
    ]
    assert np.allclose(gau, expected)
    # a scale below the bandwidth is raised to it
    tiny = informed_attack_scores(released[:1], prior, attr, NoiseLaw("laplace", np.array([0.0])))
    assert np.allclose(tiny, -0.1 / INFORMED_BANDWIDTH)


def test_informed_scores_refuse_a_one_class_prior():
    law = NoiseLaw("laplace", np.array([0.1]))
    for scorer in (informed_attack_scores, informed_gaussian_scores):
        with pytest.raises(ParameterError) as info:
            scorer(np.zeros((2, 1)), np.zeros((3, 1)), np.ones(3), law)
        assert info.value.field == "prior_attribute"
    with pytest.raises(ParameterError) as info:
        informed_attack_scores(np.zeros((1, 1)), np.zeros((2, 1)), [0, 1], NoiseLaw("x", [1.0]))
    assert info.value.field == "law.kind"


def test_informed_gaussian_scores_are_the_noisy_qda():
    rng = np.random.default_rng(3)
    prior = rng.normal(size=(40, 3))
    attr = (prior[:, 0] > 0).astype(int)
    released = rng.normal(size=(7, 3))
    law = NoiseLaw("laplace", np.array([0.1, 0.2, 0.3]))
    var = 2 * law.scale**2 + INFORMED_BANDWIDTH**2
    ref = []
    for c in (0, 1):
        part = prior[attr == c]
        cov = np.cov(part, rowvar=False) + np.diag(var)
        dist = stats.multivariate_normal(part.mean(axis=0), cov)
        ref.append(dist.logpdf(released))
    assert np.allclose(informed_gaussian_scores(released, prior, attr, law), ref[1] - ref[0])


# --- the noise law each attacker and oracle assumes -------------------------------------------


def _cal():
    b = np.full(5, 1 / 30)
    return {
        "bounds": b,
        "scales": np.array([1 / 30, 1 / 30, 0.05, 1 / 30, 1 / 30]),
        "utility": np.array([0.03, 0.0, 1.0, 1.0, 0.0]),
        "exposure": np.array([0.08, 0.0, 0.22, 1.0, 0.21]),
        "coordinate_map": None,
        "allocation": {},
        "gau_l2": 1 / 30,
        "gau_changed": 1,
        "readings": READINGS,
    }


def _within(law: NoiseLaw, noise: np.ndarray) -> np.ndarray:
    """Per coordinate: is the sample within Z standard errors of ``law``?"""
    if law.kind == "laplace":
        return np.abs(np.abs(noise).mean(axis=0) - law.scale) <= Z * law.scale / math.sqrt(N)
    return np.abs(noise.var(axis=0) / law.scale**2 - 1.0) <= Z * math.sqrt(2.0 / N)


def test_noise_law_is_each_release_s_noise():
    cal = _cal()
    y = np.full((N, 5), 0.5)
    for method in ("Lap-DP", "Gau-DP", "Ada-DP", "Risk-DP", "GC-DP"):
        law = bench.noise_law(method, cal, 1.0)
        noise = bench._release(method, y, cal, 1.0, np.random.default_rng([19, len(method)]))
        noise = noise - 0.5
        assert _within(law, noise).all(), (method, law)
        if method in ("Ada-DP", "GC-DP"):  # a planted bug: two coordinates' scales swapped
            swapped = law.scale.copy()
            swapped[[1, 2]] = swapped[[2, 1]]
            assert not _within(NoiseLaw(law.kind, swapped), noise).all()
    assert np.array_equal(bench.noise_law("NonPrivate", cal, 1.0).scale, np.zeros(5))


# --- oracles ----------------------------------------------------------------------------------


def test_best_threshold_f1_is_the_brute_force_maximum():
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(2, 30))
        y = rng.integers(0, 2, n)
        s = rng.integers(0, 5, n).astype(float)
        ref = max(f1_percent(y, (s >= t).astype(int)) for t in np.unique(s))
        assert bench.best_threshold_f1(y, s) == pytest.approx(ref, abs=1e-9)
    assert bench.best_threshold_f1(np.zeros(3), np.arange(3.0)) == 0.0


def test_oracle_allocations_spend_eps_above_the_floor():
    splits = bench.oracle_allocations(0.2, 5)
    assert len(splits) == 1 + 5 + 10  # uniform, one coordinate, two coordinates
    for split in splits:
        assert math.fsum(split) == pytest.approx(0.2, rel=1e-12)
        assert split.min() >= 0.2 / 500 * (1 - 1e-12)


def test_bench_reports_the_oracles_per_method(frame):
    out = bench.bench_gcdp(data=frame, eps_list=(0.5,), draws=1, window=30, timing=False,
                           methods=("Lap-DP", "GC-DP"))  # fmt: skip
    assert out["bayes_bound_f1"]["Lap-DP"] == out["lap_dp_bayes_bound_f1"]
    assert set(out["bayes_bound_f1"]) == {"Lap-DP", "GC-DP"}
    best = out["best_allocation_bound_f1"]["0.5"]
    assert best["f1"] >= out["lap_dp_bayes_bound_f1"]["0.5"]  # uniform is in the family
    assert math.fsum(best["budgets"]) == pytest.approx(0.5, rel=1e-5)


# --- readings ---------------------------------------------------------------------------------


def test_attack_readings_change_only_the_attack(frame):
    kw = {"data": frame, "eps_list": (1.0,), "draws": 2, "window": 30, "timing": False,
          "methods": ("Lap-DP", "GC-DP")}  # fmt: skip
    runs = {a: bench.bench_gcdp(**kw, readings=Readings(attack=a))
            for a in ("temporal", "clean", "informed", "informed_qda")}  # fmt: skip
    f1 = [r["f1"] for r in runs.values()]
    assert all(v == f1[0] for v in f1)
    aucs = [r["attack_auc"]["Lap-DP"]["1.0"] for r in runs.values()]
    assert len(set(aucs)) > 1
    assert "averaged" in runs["temporal"]["attack"]["attacker"]
    assert "Bayes" in runs["informed"]["attack"]["attacker"]


def test_occupancy_attribute_is_the_label(frame):
    prep = prepare("occupancy", frame, readings=Readings(attribute="occupancy"))
    assert np.array_equal(prep.protected, prep.test_l)
    assert np.array_equal(prep.train_protected, prep.train_l)
    assert prep.attack_inputs == [0, 1, 2, 3, 4]
    assert "occupancy" in prep.attack_info["protected_attribute"]


def test_attack_reading_refusals():
    r = parse_readings("attack=informed_qda")
    assert r.attack == "informed_qda" and READINGS.attack == "temporal"
    with pytest.raises(ParameterError) as info:
        parse_readings("attack=informed,attacker_fit=private")
    assert info.value.field == "readings.attacker_fit"
    with pytest.raises(ParameterError) as info:
        parse_readings("attack=oracle")
    assert info.value.field == "readings.attack"
    for name, value in (("attack", "informed"), ("task_l2", "1")):
        with pytest.raises(ParameterError) as info:
            prepare("intel", readings=Readings(**{name: value}))
        assert info.value.field == f"readings.{name}"


@pytest.fixture(scope="module")
def occupancy():
    prep = prepare("occupancy")
    tau = bench.select_tau(prep, 10, 0)[0]  # the bench's rule, on the validation windows
    return prep, bench._calibrate_prepared(prep, tau)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "eps", "target"),
    [("Gau-DP", 0.2, 84.4), ("Ada-DP", 0.2, 88.1), ("GC-DP", 0.2, 91.7), ("Risk-DP", 0.5, 92.8)],
)
def test_each_methods_oracle_is_below_the_seeds_small_eps_cell(occupancy, method, eps, target):
    # The seed's Table 8 cell is out of reach for the method's own allocation: the oracle
    # (clean test windows, labels and the best threshold known) on 200 independent releases
    # (seeds 1000+, not the bench's) has its mean plus Z standard errors below the cell
    # (F1 is bounded, the draws independent: one-sided 1e-9).
    prep, cal = occupancy
    scores = [bench.bayes_bound_f1(prep, eps, 1, 1000 + k, method, cal) for k in range(200)]
    mean, se = float(np.mean(scores)), float(np.std(scores, ddof=1) / math.sqrt(200))
    assert mean + Z * se < target, (mean, se)


@pytest.mark.slow
def test_temporal_attacker_is_stronger_on_validation():
    # The kept attacker was chosen as the stronger one on the validation windows. Paired
    # check at one cell (Lap-DP, eps = 1, the 54 held-out windows): over 200 releases with
    # common random numbers (seeds 1000+), the mean AUC difference temporal - clean exceeds
    # Z standard errors (bounded differences, independent draws: one-sided 1e-9).
    sels = {a: prepare("occupancy", readings=Readings(attack=a)).selection
            for a in ("temporal", "clean")}  # fmt: skip
    sel = sels["temporal"]
    cal = bench._calibrate_prepared(sel, 0.25)  # Lap-DP reads no graph: any tau will do
    feats, labels = sel.validation_windows
    diffs = []
    for k in range(200):
        aucs = [
            bench._draw(
                "Lap-DP",
                s,
                feats,
                labels,
                cal,
                1.0,
                (1000 + k, 0, 2),
                (s.val_protected, s.val_attack_rows),
            )[1]
            for s in sels.values()
        ]
        diffs.append(aucs[0] - aucs[1])
    mean, se = float(np.mean(diffs)), float(np.std(diffs, ddof=1) / math.sqrt(200))
    assert mean > Z * se, (mean, se)
