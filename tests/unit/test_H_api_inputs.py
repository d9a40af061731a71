"""What a user passes to ``cpr_many`` and ``detect_period`` (helper H, 2026-12-06): each case
failed before its fix with an untyped error or a misleading sentence."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import ldpfleet

SW = ldpfleet.SquareWave(2.0)


def _reports(n_cycles: int = 20, period: int = 24, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return SW.perturb(np.tile(rng.random(period), n_cycles), rng)


@pytest.mark.parametrize("streams", [None, 5, 2.5])
def test_cpr_many_refuses_a_non_iterable_naming_streams(streams):
    """Was ``TypeError: 'NoneType' object is not iterable`` (no field)."""
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.cpr_many(streams, SW)
    assert info.value.field == "streams"
    assert info.value.limit == "a list of streams (1-D arrays)"
    assert info.value.value == type(streams).__name__


def test_cpr_many_refuses_a_text_as_streams():
    """A text was read as streams of one character each (``streams[0]`` named, not the text)."""
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.cpr_many("0.5,0.6", SW)
    assert info.value.field == "streams"


def test_cpr_many_checks_the_mechanism_with_no_stream():
    """``cpr_many([], None)`` returned ``[]``; ``cpr_many([y], None)`` raised: one rule."""
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.cpr_many([], None)
    assert info.value.field == "mechanism"
    assert ldpfleet.cpr_many([], SW) == []


def test_cpr_many_still_takes_generators_and_2d_arrays():
    y = _reports()
    by_gen = ldpfleet.cpr_many((s for s in [y, y[:240]]), SW)
    by_rows = ldpfleet.cpr_many(np.stack([y, y]), SW)
    assert [r.period for r in by_gen] == [24, ldpfleet.cpr(y[:240], SW).period]
    assert [r.period for r in by_rows] == [24, 24]


def test_detect_period_takes_a_fraction_alpha():
    """``alpha=Fraction(1, 100)`` passed the check and failed in numpy's log (TypeError)."""
    y = _reports()
    assert ldpfleet.detect_period(y, alpha=Fraction(1, 100)) == ldpfleet.detect_period(y)


@pytest.mark.parametrize("alpha", [Decimal("0.01"), np.array(0.01), "0.01", True])
def test_detect_period_names_the_type_of_a_non_real_alpha(alpha):
    """A value inside (0, 1) was refused as "must be in (0, 1), got Decimal('0.01')"."""
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.detect_period(_reports(), alpha=alpha)
    assert info.value.field == "alpha" and info.value.limit == "in (0, 1)"
    assert "a real number" in str(info.value) and type(alpha).__name__ in str(info.value)


def test_result_fields_are_python_numbers_json_takes():
    """``.period`` an int or None and every scalar field a Python number, as documented."""
    y = _reports()
    noise = SW.perturb(np.random.default_rng(1).random(480), np.random.default_rng(2))
    for stream in (y, noise, y[:5]):
        est = ldpfleet.detect_period(stream)
        fields = {k: v for k, v in vars(est).items()}
        json.dumps(fields)
        assert est.period is None or type(est.period) is int
        assert type(est.confidence) is float and type(est.p_value) is float
        assert est.searched is None or all(type(v) is int for v in est.searched)
    known = ldpfleet.cpr(y, SW, ldpfleet.CprConfig(period=np.int64(24)))
    for result in [*ldpfleet.cpr_many([y, noise], SW), known]:
        assert result.period is None or type(result.period) is int
        assert type(result.confidence) is float
        json.dumps({"period": result.period, "confidence": result.confidence})
        assert result.reconstruction.dtype == np.float64 and result.reconstruction.shape == y.shape
    assert math.isnan(ldpfleet.cpr(y, SW, ldpfleet.CprConfig(period=24)).confidence)


def test_a_kde_grid_that_cannot_fit_in_memory_is_refused():
    """``CprConfig(kde_grid=10**9)`` was accepted: ``cpr`` then asked for terabytes."""
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.CprConfig(kde_grid=10**9)
    assert info.value.field == "kde_grid" and info.value.value == 10**9
    assert info.value.limit == "an integer <= 65536"
    y = _reports()
    fine = ldpfleet.cpr(y, SW, ldpfleet.CprConfig(kde_grid=65_536))
    assert fine.period == 24
