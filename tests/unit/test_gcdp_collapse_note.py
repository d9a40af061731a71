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
