"""Every refusal of ``detect_period``, ``shift_discrepancy`` and CPR carries ``limit`` and
``value`` beside ``field`` (claim R6; issue 19, helper D); the sentences are unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import cpr as C
from ldpfleet.collector import period as P
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.sw import SquareWave

STREAM = np.linspace(0.0, 1.0, 60)

PERIOD_CASES = [
    (lambda: P.check_stream(np.array(["2026-01-01"], dtype="datetime64[D]")), "x", "time column"),
    (lambda: P.check_stream(np.ma.masked_array([1.0, 2.0], mask=[0, 1])), "x[1]", "masked"),
    (lambda: P.check_stream(np.array([1 + 2j])), "x", "complex"),
    (lambda: P.check_stream([1.0, "a"]), "x[1]", "real number"),
    (lambda: P.check_stream({"a": 1}), "x", "1-D array of real numbers"),
    (lambda: P.check_stream([1.0, 10**400]), "x", "float range"),
    (lambda: P.check_stream(np.ones((2, 2))), "x", "must be 1-D"),
    (lambda: P.check_stream([1.0, np.nan]), "x[1]", "finite"),
    (lambda: P.detect_period(STREAM, min_period=2.5), "min_period", "integer"),
    (lambda: P.detect_period(STREAM, top_peaks=0), "top_peaks", ">= 1"),
    (lambda: P.detect_period(STREAM, alpha=1.5), "alpha", "(0, 1)"),
    (lambda: P.shift_discrepancy(STREAM, [1.5]), "periods", "integers"),
    (lambda: P.shift_discrepancy(STREAM, [60]), "periods", "[0, 59]"),
]

CPR_CASES = [
    (lambda: C.CprConfig(smoothing="no"), "smoothing", "True or False"),
    (lambda: C.CprConfig(tol=-1.0), "tol", ">= 0"),
    (lambda: C.CprConfig(tol=float("inf")), "tol", "finite"),
    (lambda: C.CprConfig(max_iter=1.5), "max_iter", "integer"),
    (lambda: C.CprConfig(kde_grid=1), "kde_grid", ">= 2"),
    (lambda: C.cpr(STREAM, SquareWave(1.0), config="fast"), "config", "CprConfig"),
    (
        lambda: C.cpr(np.array(["2026-01-01"], dtype="datetime64[D]"), SquareWave(1.0)),
        "y",
        "time column",
    ),
    (lambda: C.cpr({"a": 1}, SquareWave(1.0)), "y", "real numbers"),
    (lambda: C.cpr(np.ones((2, 2)), SquareWave(1.0)), "y", "non-empty 1-D"),
    (lambda: C.cpr_many(STREAM, SquareWave(1.0)), "streams", "list of streams"),
]


@pytest.mark.parametrize(("call", "field", "text"), PERIOD_CASES + CPR_CASES)
def test_refusal_names_field_limit_and_value(call, field, text):
    with pytest.raises(ParameterError) as info:
        call()
    error = info.value
    assert error.field == field
    assert text in str(error)
    assert isinstance(error.limit, str) and error.limit
    assert error.value is not None


def test_values_are_the_refused_ones():
    with pytest.raises(ParameterError) as info:
        P.detect_period(STREAM, alpha=1.5)
    assert info.value.value == 1.5
    with pytest.raises(ParameterError) as info:
        P.check_stream([1.0, np.inf])
    assert info.value.value == np.inf
    with pytest.raises(ParameterError) as info:
        P.shift_discrepancy(STREAM, [3, 60])
    assert info.value.value == 60
    with pytest.raises(ParameterError) as info:
        C.CprConfig(kde_grid=1)
    assert info.value.value == 1
