"""``ldpfleet bench gcdp --dataset intel|wisdm`` (app/gcdp_datasets.py) on tiny
synthetic frames: loaders, result structure per dataset, determinism, refusals."""

from __future__ import annotations

import json

import ldpfleet.app.bench_gcdp as bench
import numpy as np
import pytest
from ldpfleet.app.gcdp_datasets import WISDM_FEATURES, WisdmTable, load_intel, load_wisdm_arff
from ldpfleet.collector.gcdp.evaluation import fit_one_vs_rest, macro_f1_percent
from ldpfleet.protocol.errors import ParameterError

EPS = (0.5, 2.0)


def intel_frame(motes: int = 10, steps: tuple[int, int] = (48, 32), seed: int = 3):
    """Daily-cycle temperature and anti-correlated humidity (motes x steps), train and test."""
    rng = np.random.default_rng(seed)
    out = []
    for n in steps:
        t = np.arange(n)
        cycle = np.sin(2 * np.pi * t / 24.0)
        temp = 20 + 4 * cycle + rng.normal(0, 0.3, (motes, n)) + rng.normal(0, 1, (motes, 1))
        hum = 40 - 6 * cycle + rng.normal(0, 0.5, (motes, n))
        out.append((temp, hum))
    (tt, ht), (ts, hs) = out
    return tt, ts, ht, hs


def wisdm_table(seed: int = 4) -> WisdmTable:
    """Three activities with separated feature levels; users 1-6 train, 29-31 test."""
    rng = np.random.default_rng(seed)
    users, acts, rows = [], [], []
    for user in (1, 2, 3, 4, 5, 6, 29, 30, 31):
        for c, act in enumerate(("Jogging", "Sitting", "Walking")):
            for _ in range(4):
                users.append(user)
                acts.append(act)
                rows.append(c * 3.0 + rng.normal(0, 0.3, len(WISDM_FEATURES)))
    x = np.array(rows)
    columns = {name: x[:, j] for j, name in enumerate(WISDM_FEATURES)}
    peak = x[:, 0] * 100 + rng.normal(0, 50, len(rows))
    peak[::7] = np.nan  # '?' gaps in the protected (unreleased) feature
    columns["YPEAK"] = peak
    return WisdmTable(np.array(users), columns, np.array(acts))


def run(dataset, data, **kw):
    args = {"eps_list": EPS, "draws": 2, "seed": 5, "data": data, "timing": False}
    args.update(kw)
    return bench.bench_gcdp(dataset, **args)


@pytest.fixture(scope="module")
def intel_result():
    return run("intel", intel_frame(), timing=True)


@pytest.fixture(scope="module")
def wisdm_result():
    return run("wisdm", wisdm_table())


def check_common(result, d):
    assert set(result["f1"]) == set(bench.METHODS)
    for method in bench.METHODS:
        assert set(result["f1"][method]) == {"0.5", "2.0"}
        assert all(0.0 <= v <= 100.0 for v in result["f1"][method].values())
        assert all(0.5 <= v <= 1.0 for v in result["attack_auc"][method].values())
    cal = result["calibration"]
    assert len(cal["bounds"]) == len(cal["scales"]) == len(cal["utility"]) == d
    assert all(s >= b for s, b in zip(cal["scales"], cal["bounds"], strict=True))  # Prop. 1
    assert sum(cal["gcdp_budgets_eps1"]) <= 1.0 + d * 5e-7
    assert list(result["ablation_eps1"]) == list(bench.ABLATIONS)
    assert result["protocol"]["eps_cal"] == 0.0
    json.dumps(result)


def test_intel_structure(intel_result):
    check_common(intel_result, 10)
    proto = intel_result["protocol"]
    assert proto["nodes"] == 20 and proto["motes_per_group"] == 2 and proto["test_steps"] == 32
    assert intel_result["calibration"]["bounds"] == [0.5] * 10  # mean_bound(0, 1, 2)
    assert len(intel_result["calibration"]["exposure_norm"]) == 20  # node-level, M = 20
    assert intel_result["seed_f1"]["GC-DP"]["1.0"] == 86.7
    assert intel_result["seed_attack_auc"]["Lap-DP"]["0.2"] == 0.719
    assert intel_result["ablation_eps1"]["w/o Risk"]["seed_f1"] == 84.2
    assert intel_result["seed_runtime_s"]["GC-DP"] == 2.46
    assert set(intel_result["runtime_s"]) == set(bench.METHODS)
    nonprivate = intel_result["f1"]["NonPrivate"]
    assert nonprivate["0.5"] == nonprivate["2.0"] > 0.0  # no noise: the same at every eps
    assert 0.0 < proto["train_positive_share"] < 1.0


def test_wisdm_structure(wisdm_result):
    check_common(wisdm_result, 6)
    proto = wisdm_result["protocol"]
    assert proto["classes"] == ["Jogging", "Sitting", "Walking"]
    assert proto["train_windows"] == 72 and proto["test_windows"] == 36
    assert wisdm_result["calibration"]["bounds"] == [1.0] * 6  # clipped range
    assert len(wisdm_result["calibration"]["exposure_norm"]) == 3  # axes X, Y, Z
    # the clean windows are separated, so NonPrivate macro-F1 is 100
    assert all(v == pytest.approx(100.0) for v in wisdm_result["f1"]["NonPrivate"].values())
    assert wisdm_result["attack"]["test_windows_evaluated"] < 36  # '?' rows left out
    assert wisdm_result["seed_f1"]["Lap-DP"]["0.2"] == 54.9
    assert wisdm_result["seed_attack_auc"]["GC-DP"]["4.0"] == 0.692


def test_deterministic_and_paired(intel_result, wisdm_result):
    again = run("intel", intel_frame(), timing=False)
    for key in ("f1", "f1_std", "attack_auc", "calibration", "ablation_eps1"):
        assert again[key] == intel_result[key]
    only = run("wisdm", wisdm_table(), methods=("GC-DP",))
    assert only["f1"]["GC-DP"] == wisdm_result["f1"]["GC-DP"]


@pytest.mark.parametrize(
    ("dataset", "data", "kwargs", "field"),
    [
        ("intel", intel_frame(motes=7), {}, "data"),  # not a multiple of 5 groups
        ("intel", intel_frame(), {"window": 5}, "window"),
        ("wisdm", wisdm_table(), {"window": 5}, "window"),
        ("wisdm", wisdm_table(), {"draws": 0}, "draws"),
        ("nope", None, {}, "dataset"),
    ],
)
def test_refusals(dataset, data, kwargs, field):
    with pytest.raises(ParameterError) as info:
        run(dataset, data, **kwargs)
    assert info.value.field == field


def test_wisdm_without_test_users_is_refused():
    table = wisdm_table()
    keep = table.user <= 28
    small = WisdmTable(
        table.user[keep], {k: v[keep] for k, v in table.columns.items()}, table.activity[keep]
    )
    with pytest.raises(ParameterError):
        run("wisdm", small)


def test_load_intel(tmp_path):
    for name in ("Temperature", "Humidity"):
        for part, n in (("Train", 3), ("Test", 2)):
            rows = "\n".join(",".join(f"{20 + i + j:.2E}" for j in range(n)) for i in range(2))
            (tmp_path / f"intel{name}{part}.csv").write_text(rows + "\n")
    tt, ts, ht, _ = load_intel(tmp_path)
    assert tt.shape == (2, 3) and ts.shape == (2, 2) and ht[1, 2] == 23.0


def test_load_wisdm_arff(tmp_path):
    path = tmp_path / "w.arff"
    path.write_text(
        "@relation r\n\n"
        '@attribute "UNIQUE_ID" numeric\n@attribute "user" \n@attribute "XPEAK" numeric\n'
        '@attribute "RESULTANT" numeric\n@attribute class\n\n@data\n'
        "1,33,2075,11.96,Jogging\n2,7,?,9.5,Sitting\n"
    )
    table = load_wisdm_arff(path)
    assert table.user.tolist() == [33, 7] and table.activity.tolist() == ["Jogging", "Sitting"]
    assert table.columns["RESULTANT"].tolist() == [11.96, 9.5]
    assert table.columns["XPEAK"][0] == 2075 and np.isnan(table.columns["XPEAK"][1])
    assert "user" not in table.columns


def test_multiclass_helpers():
    x = np.array([[0.0, 0.1], [0.1, 0.0], [1.0, 0.9], [0.9, 1.0], [0.5, 0.0], [0.4, 0.1]])
    y = np.array([0, 0, 1, 1, 2, 2])
    model = fit_one_vs_rest(x, y, 3)
    assert macro_f1_percent(y, model.predict(x), 3) == pytest.approx(100.0)
    assert macro_f1_percent(np.array([0, 1]), np.array([0, 0]), 3) == pytest.approx(200 / 9)


def test_intel_holds_out_the_last_fifth_of_the_training_steps():
    """split = refit (the default) chooses tau and mu_k on the held-out last fifth of the
    training steps, fitted on the first part only; a planted outlier in the held-out
    steps changes nothing the first part fits (clipping, labels, classifier)."""
    from ldpfleet.app.gcdp_datasets import Readings, prepare, validation_cut

    frame = intel_frame()
    prep = prepare("intel", frame)
    sel = prep.selection
    cut = validation_cut(48, 1)
    assert cut == 38 and sel.train_f.shape[0] == cut and sel.val_f.shape[0] == 48 - cut
    assert prep.train_f.shape[0] == 48 and prep.protocol_head["split"] == "refit"
    assert prep.protocol_head["validation_windows"] == 10
    assert np.array_equal(prep.utility, sel.utility)
    planted = [a.copy() for a in frame]
    planted[0][:, cut:] += 50.0  # temperature outlier in the validation steps only
    other = prepare("intel", planted, readings=Readings(split="holdout"))
    assert np.array_equal(other.train_f, sel.train_f)
    assert np.array_equal(other.test_f, sel.test_f)
    assert not np.array_equal(other.val_f, sel.val_f)
    assert prepare("intel", frame, readings=Readings(split="train")).selection is None


def test_wisdm_holds_out_the_highest_training_users():
    from ldpfleet.app.gcdp_datasets import Readings, prepare, wisdm_validation_users

    table = wisdm_table()
    assert wisdm_validation_users(np.repeat([1, 2, 3, 4, 5, 6], 12)) == [5, 6]
    with pytest.raises(ParameterError) as info:
        wisdm_validation_users(np.repeat([3], 12))
    assert info.value.field == "data"
    prep = prepare("wisdm", table)
    sel = prep.selection
    assert sel.protocol_head["validation_users"] == [5, 6]
    assert prep.protocol_head["validation_users"] == [5, 6]
    assert sel.train_f.shape[0] == 48 and sel.val_f.shape[0] == 24
    # the held-out protocol clips with the first part's statistics: same rows, other values
    assert prep.train_f.shape[0] == 72 and prep.test_f.shape == sel.test_f.shape
    # the attack on the validation users is scored where YPEAK is present only
    assert sel.val_attack_rows.size == sel.val_protected.size < 24
    assert prepare("wisdm", table, readings=Readings(split="train")).selection is None


def test_validation_table_for_every_dataset(wisdm_result):
    """The JSON's split is what is done: a validation table on held-out data."""
    assert wisdm_result["protocol"]["readings"]["split"] == "refit"
    assert wisdm_result["protocol"]["validation_windows"] == 24
    assert set(wisdm_result["validation"]["f1"]) == set(bench.METHODS)
    train_only = run("wisdm", wisdm_table(), methods=("GC-DP",),
                     readings=bench.Readings(split="train"))  # fmt: skip
    assert "validation" not in train_only
