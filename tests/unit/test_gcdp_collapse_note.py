"""bench gcdp on a test file where the fixed NonPrivate classifier predicts one class only
(held-out QA, helper G): the printed F1 is then the F1 of "always occupied" (or 0), and the
output must say so rather than print it as a score."""

from __future__ import annotations

import ldpfleet.app.bench_gcdp as bench
import numpy as np
from ldpfleet.collector.gcdp.evaluation import prediction_collapse

from tests.unit.test_bench_gcdp import WINDOW, synthetic_frame


def test_prediction_collapse_names_a_one_class_prediction():
    labels = np.array([1, 0, 0, 0, 1])
    ones = prediction_collapse(labels, np.ones(5, dtype=int))
    assert ones["predicted_occupied_share"] == 1.0 and ones["always_occupied_f1"] == 57.1429
    assert ones["collapsed"].startswith("always occupied: the F1 is that of predicting every")
    assert prediction_collapse(labels, np.zeros(5, dtype=int))["collapsed"].startswith("never")
    assert prediction_collapse(labels, labels)["collapsed"] is None


def test_bench_says_when_nonprivate_predicts_one_class_on_the_test_file():
    """Held-out: a test file whose CO2 sensor is stuck at 500 (constant; train on
    datatraining, test on it) gave NonPrivate F1 34.7561 = 2p/(1+p) with p = 0.2103, the F1
    of "always occupied", printed like any score; a test file with independent random
    labels gave NonPrivate F1 0.0 (never occupied) next to 23-35 % for the noisy methods."""
    tx, ty = synthetic_frame(600, 1)
    sx, sy = synthetic_frame(300, 2)
    sx[:] = [22.0, 27.0, 490.0, 850.0, 0.0047]  # stuck at occupied levels: all look occupied
    result = bench.bench_gcdp("occupancy", ["NonPrivate"], (1.0,), 1, 0, window=WINDOW,
                              data=(tx, ty, sx, sy), timing=False)  # fmt: skip
    note = result["protocol"]["nonprivate_test"]
    assert note["collapsed"].startswith("always occupied")
    assert result["f1"]["NonPrivate"]["1.0"] == note["always_occupied_f1"]
    clean = bench.bench_gcdp("occupancy", ["NonPrivate"], (1.0,), 1, 0, window=WINDOW,
                             data=(tx, ty, *synthetic_frame(300, 2)), timing=False)  # fmt: skip
    assert clean["protocol"]["nonprivate_test"]["collapsed"] is None


def test_bench_says_when_the_attack_auc_is_undefined_on_the_test_file():
    """Held-out: a test file whose HumidityRatio sits above the training median on every
    window (the protected attribute of one class) printed attack AUC 0.5 for every method
    and budget, which reads as "the attack is at chance"; the AUC is undefined there."""
    tx, ty = synthetic_frame(600, 1)
    sx, sy = synthetic_frame(300, 2)
    sx[:, 4] += 0.01  # every test window's HumidityRatio above the training median
    result = bench.bench_gcdp("occupancy", ["NonPrivate"], (1.0,), 1, 0, window=WINDOW,
                              data=(tx, ty, sx, sy), timing=False)  # fmt: skip
    assert result["attack_auc"]["NonPrivate"]["1.0"] == 0.5
    assert result["attack"]["auc_undefined"].startswith("every test window has protected")
    clean = bench.bench_gcdp("occupancy", ["NonPrivate"], (1.0,), 1, 0, window=WINDOW,
                             data=(tx, ty, *synthetic_frame(300, 2)), timing=False)  # fmt: skip
    assert clean["attack"]["auc_undefined"] is None


def test_bench_flags_a_private_method_whose_draws_predict_one_class():
    """A private method whose every draw predicts one class printed that F1 (the F1 of
    "always occupied", or 0) like any score, while NonPrivate's collapse was named (helper
    Q): ``collapsed`` now says so per method and budget, and per ablation row."""
    tx, ty = synthetic_frame(600, 1)
    sx, sy = synthetic_frame(300, 2)
    sx[:] = [22.0, 27.0, 490.0, 850.0, 0.0047]  # stuck at occupied levels: all look occupied
    result = bench.bench_gcdp("occupancy", ["Lap-DP", "GC-DP"], (50.0,), 3, 0,
                              window=WINDOW, data=(tx, ty, sx, sy), timing=False)  # fmt: skip
    for method in ("Lap-DP", "GC-DP"):
        note = result["collapsed"][method]["50.0"]
        assert note is not None and note.startswith("3 of 3 draws predict one class"), note
        assert "always occupied" in note
        assert (
            result["f1"][method]["50.0"]
            == result["protocol"]["nonprivate_test"]["always_occupied_f1"]
        )
    assert "collapsed" in result["ablation_eps1"]["GC-DP"]
    clean = bench.bench_gcdp("occupancy", ["Lap-DP"], (50.0,), 2, 0, window=WINDOW,
                             data=(tx, ty, *synthetic_frame(300, 2)), timing=False)  # fmt: skip
    assert clean["collapsed"]["Lap-DP"]["50.0"] is None


def test_printed_budgets_sum_to_the_rounded_total():
    """Budgets printed to 6 decimals one by one could sum to 1.000001 (six parts of 1/6:
    0.166667 x 6 = 1.000002), which read as overspending the window budget (helper Q): the
    printed parts now add up, as decimals, to the total rounded to 6 decimals."""
    from decimal import Decimal

    for parts in ([1 / 6] * 6, [1 / 3] * 3, [0.1234565, 0.8765435], [0.25, 0.75], [0.0, 1.0]):
        printed = bench.printed_budgets(np.array(parts))
        assert sum(Decimal(repr(v)) for v in printed) == Decimal(repr(round(sum(parts), 6)))
        assert all(abs(p - v) < 1e-6 for p, v in zip(printed, parts, strict=True))
