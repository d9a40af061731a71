"""The readings of seed 000's open details (issue 19, docs/gcdp.md "Readings of the seed"):
robust IQR clipping (§4.1), masking utility (§4.4), Gau-DP's occurrence-level l2
certificate (Table 4, §3.1), ``--train-file`` / ``--test-file``, and the Table 8
reproduction on the shipped Occupancy files.

Statistical thresholds. Every statistical assertion below is a two-sided test whose
threshold is 5 standard errors of the estimate. Under the normal approximation
P(|Z| > 5) = 5.7e-7, so each test fails falsely with probability near 1e-6 (the estimates
are means or variances of >= 100 independent draws, bounded or Gaussian, where the CLT
holds well). Fixed seeds make each run deterministic; the thresholds say how unlikely a
failure is for a correct implementation under a different seed.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import typer
from ldpfleet.app import bench_gcdp as bench
from ldpfleet.app.gcdp_datasets import DATA_ROOT, Readings, prepare
from ldpfleet.collector.gcdp import (
    gau_dp,
    gaussian_grid,
    l2_certificate,
    occurrence_l2_certificate,
)
from ldpfleet.collector.gcdp.evaluation import (
    LogisticModel,
    f1_percent,
    fit_iqr_clip,
    masking_utility,
)
from ldpfleet.protocol.errors import ParameterError
from typer.testing import CliRunner

Z = 5.0  # two-sided normal tail 5.7e-7 per test
OCC = DATA_ROOT / "uci-occupancy"
HEADER = '"date","Temperature","Humidity","Light","CO2","HumidityRatio","Occupancy"\n'


# --- §4.1 robust clipping --------------------------------------------------------------------


def test_iqr_clip_is_tukeys_fences_within_the_range():
    x = np.column_stack([np.arange(101.0), np.r_[np.zeros(100), 1000.0], np.full(101, 3.0)])
    low, high = fit_iqr_clip(x)
    # column 0: Q1 = 25, Q3 = 75, fences -50 / 150 lie outside [0, 100]: the range is kept
    assert (low[0], high[0]) == (0.0, 100.0)
    # column 1: IQR = 0, fences 0 / 0, the 1000 outlier is clipped; a point interval gets a
    # unit range (as fit_normalizer does for a constant channel)
    assert (low[1], high[1]) == (0.0, 1.0)
    assert (low[2], high[2]) == (3.0, 4.0)  # constant channel


def test_iqr_clip_on_occupancy_light_drops_the_outliers():
    from ldpfleet.collector.gcdp.evaluation import load_occupancy

    x, _ = load_occupancy(OCC / "datatraining.txt")
    low, high = fit_iqr_clip(x)
    q1, q3 = np.percentile(x[:, 2], [25, 75])
    assert low[2] == 0.0 and high[2] == pytest.approx(q3 + 1.5 * (q3 - q1))
    assert high[2] < 0.5 * x[:, 2].max()  # Light's 1546 lux maximum is an outlier


# --- §4.4 masking utility --------------------------------------------------------------------


def test_masking_utility_is_the_normalised_drop():
    model = LogisticModel(np.zeros(3), np.ones(3), np.array([0.0, 0.0, 10.0]), -5.0)
    feats = np.array([[0.3, 0.1, 1.0], [0.2, 0.9, 0.0], [0.7, 0.4, 1.0], [0.1, 0.2, 0.0]])
    labels = np.array([1, 0, 1, 0])
    mu = masking_utility(model, feats, labels)
    assert mu.tolist() == [0.0, 0.0, 1.0]  # only feature 2 matters; masked -> F1 0
    assert masking_utility(model, feats, 1 - labels).tolist() == [0.0, 0.0, 0.0]  # base F1 0


# --- Table 4: Gau-DP's l2 certificate --------------------------------------------------------


def test_occurrence_l2_certificate():
    b = np.full(5, 1 / 30)
    assert occurrence_l2_certificate(b, None, 5) == pytest.approx(1 / 30)
    assert l2_certificate(b) == pytest.approx(math.sqrt(5) / 30)
    # WISDM's map: X -> {XSTD, RES}, Y -> {YAVG, YSTD, RES}, Z -> {ZAVG, ZSTD, RES}
    wisdm = ((1,), (2,), (0,), (1,), (2,), (0, 1, 2))
    assert occurrence_l2_certificate(np.ones(6), wisdm, 3) == pytest.approx(math.sqrt(3))
    rng = np.random.default_rng(4)
    for _ in range(50):  # never above the always-valid sqrt(sum B^2)
        bounds = rng.uniform(0, 1, 6)
        assert occurrence_l2_certificate(bounds, wisdm, 3) <= l2_certificate(bounds) + 1e-15


def test_gau_dp_refuses_a_certificate_above_the_sum():
    common = {"bounds": [0.1, 0.1], "eps": 1.0, "delta": 1e-5, "low": 0.0, "high": 1.0}
    for bad in (0.2, 0.0, -1.0, float("nan")):
        with pytest.raises(ParameterError) as info:
            gau_dp([0.5, 0.5], **common, rng=np.random.default_rng(0), l2_sensitivity=bad)
        assert info.value.field == "l2_sensitivity"


def test_gau_dp_uses_the_given_certificate_statistically():
    # n draws of N(0, sigma^2): the sample variance has relative standard error
    # sqrt(2 / (n - 1)); the test accepts |s^2 / sigma^2 - 1| <= Z sqrt(2 / (n - 1)).
    n, d = 20_000, 5
    bounds = np.full(d, 1 / 30)
    rng = np.random.default_rng(11)
    out = np.array(
        [
            gau_dp(
                np.full(d, 0.5),
                bounds=bounds,
                eps=1.0,
                delta=1e-5,
                low=-50.0,
                high=50.0,
                rng=rng,
                l2_sensitivity=1 / 30,
            )
            for _ in range(n // d)
        ]
    ).ravel()
    sigma = gaussian_grid(1.0, 1e-5, 1 / 30, d).sigma  # default: every coordinate may move
    ratio = np.var(out - 0.5, ddof=1) / sigma**2
    assert abs(ratio - 1.0) <= Z * math.sqrt(2 / (n - 1))
    # the planted bug "sum certificate" (sigma x sqrt(5)) is far outside the band
    assert abs(ratio * 5 - 1.0) > Z * math.sqrt(2 / (n - 1)) * 5


# --- the files of the release ----------------------------------------------------------------


def _write(path, rows):
    lines = [HEADER]
    for i, (t, h, light, co2, hr, occ) in enumerate(rows, 1):
        when = f"2015-02-{4 + i // 1440:02d} {i // 60 % 24:02d}:{i % 60:02d}:00"  # in time order
        lines.append(f'"{i}","{when}",{t},{h},{light},{co2},{hr},{occ}\n')
    path.write_text("".join(lines))


def _frame(records, seed):
    rng = np.random.default_rng(seed)
    y = (np.arange(records) // 30) % 2
    return [
        (20 + 2 * o + rng.normal(0, 0.5), 27 + rng.normal(0, 1), 490 * o + rng.uniform(0, 10),
         450 + 400 * o + rng.normal(0, 30), 0.0045 + 0.0002 * o + rng.normal(0, 5e-5), o)
        for o in y
    ]  # fmt: skip


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    base = tmp_path_factory.mktemp("occ")
    _write(base / "train.txt", _frame(600, 1))
    _write(base / "test.txt", _frame(300, 2))
    return base / "train.txt", base / "test.txt"


def test_command_reads_any_occupancy_file(files):
    train, test = files
    app = typer.Typer()
    app.command()(bench.bench_gcdp_command)
    runner = CliRunner()
    args = ["--train-file", str(train), "--test-file", str(test), "--method", "Lap-DP,GC-DP"]
    ok = runner.invoke(app, [*args, "--eps", "1", "--draws", "2", "--window", "30"])
    assert ok.exit_code == 0, ok.output
    out = json.loads(ok.stdout)
    assert out["protocol"]["train_file"] == str(train)
    assert out["protocol"]["test_file"] == str(test)
    assert out["protocol"]["test_windows"] == 10
    assert out["protocol"]["readings"] == Readings().as_dict()
    missing = runner.invoke(app, ["--test-file", str(test) + ".nope", "--eps", "1"])
    assert missing.exit_code == 2 and "--test-file" in missing.output
    bad = runner.invoke(app, ["--clip", "zscore", "--eps", "1"])
    assert bad.exit_code == 2


@pytest.mark.parametrize("name", ["train_file", "test_file", "window"])
def test_occupancy_only_options_are_refused_elsewhere(name):
    with pytest.raises(ParameterError) as info:
        bench.bench_gcdp("intel", eps_list=(1.0,), draws=1, timing=False, **{name: 30})
    assert info.value.field == name


def test_readings_are_validated():
    with pytest.raises(ParameterError) as info:
        Readings(utility="shap")
    assert info.value.field == "readings.utility"


# --- Table 8 on the shipped files ------------------------------------------------------------


def _mean_and_se(method, prep, cal, eps, draws, seed):
    scores = []
    for k in range(draws):
        released = bench._release_all(method, prep.test_f, cal, eps, bench._rng(seed, "", eps, k))
        scores.append(f1_percent(prep.test_l, prep.model.predict(released)))
    scores = np.asarray(scores)
    return float(scores.mean()), float(scores.std(ddof=1) / math.sqrt(draws))


@pytest.mark.parametrize(("method", "target"), [("Lap-DP", 93.4), ("GC-DP", 96.4)])
def test_table8_eps1_within_two_points(method, target):
    # H0: the mean F1 over noise draws is within 2 points of the seed's Table 8 cell. Reject
    # only if the 200-draw mean (seed 99, independent of the bench's seed 0) is more than
    # Z standard errors outside [target - 2, target + 2]: false-failure rate <= 2.9e-7.
    # Under the kept masking reading (one masked occurrence, s = B; explicit so that a
    # change of default shows here); the node-type reading is pinned by the next test.
    prep = prepare("occupancy", readings=Readings(xi_mask="occurrence"))
    tau = bench.select_tau(prep, 10, 0)[0]  # the bench's rule, on the validation windows
    cal = bench._calibrate_prepared(prep, tau)
    mean, se = _mean_and_se(method, prep, cal, 1.0, 200, 99)
    assert target - 2.0 - Z * se <= mean <= target + 2.0 + Z * se, (mean, se)


def test_table8_gcdp_eps1_under_node_masking_is_below_the_band():
    # The node-type reading (xi_mask=node): s_k = xi_k = 0.19-0.40 > B = 1/30, and
    # GC-DP's F1 at eps = 1 falls below the seed's band (measured 78.9, se 0.37, with these
    # 200 draws). The test fails when the 200-draw mean + Z se reaches 94.4: for any true
    # mean <= 94.4 - 2 Z se (~90.7) that is a > Z-se deviation, one-sided rate <= 2.9e-7.
    prep = prepare("occupancy", readings=Readings(xi_mask="node"))
    cal = bench._calibrate_prepared(prep, bench.select_tau(prep, 10, 0)[0])
    assert np.all(cal["scales"] > cal["bounds"])  # xi above B on every coordinate
    mean, se = _mean_and_se("GC-DP", prep, cal, 1.0, 200, 99)
    assert mean + Z * se < 96.4 - 2.0, (mean, se)


def test_kept_readings_beat_the_old_ones_on_datatest2():
    # Paired (common random numbers) difference of GC-DP F1 at eps = 1 on datatest2.txt,
    # kept readings minus the old ones (min-max clip, correlation utility); the old mean was
    # 73.1 and the new 93.7 with 10 draws. H0 "no improvement" is rejected when the mean
    # difference exceeds Z standard errors (one-sided tail 2.9e-7).
    test2 = OCC / "datatest2.txt"
    new = prepare("occupancy", test_file=test2)
    old = prepare("occupancy", readings=Readings(clip="minmax", utility="corr", gau_l2="sum"),
                  test_file=test2)  # fmt: skip
    diffs = []
    cal_new = bench._calibrate_prepared(new, bench.select_tau(new, 10, 0)[0])
    cal_old = bench._calibrate_prepared(old, 0.10)
    for k in range(100):
        f = []
        for prep, cal in ((new, cal_new), (old, cal_old)):
            rel = bench._release_all("GC-DP", prep.test_f, cal, 1.0, bench._rng(5, "", 1.0, k))
            f.append(f1_percent(prep.test_l, prep.model.predict(rel)))
        diffs.append(f[0] - f[1])
    diffs = np.asarray(diffs)
    assert diffs.mean() > Z * diffs.std(ddof=1) / 10.0
