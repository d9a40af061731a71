"""``CprConfig(period=T)``: CPR with a period the user knows (a day of 48 half-hours),
detection skipped. Before (helper P's user trial, 2026-12-06) there was no way to give it:
``CprConfig(min_period=T, max_period=T)`` still tests T and abstains on weak streams (then
the reconstruction is a constant), as on the stream below."""

import math

import numpy as np
import pytest
from ldpfleet.collector.cpr import phase_templates

from ldpfleet import CprConfig, ParameterError, SquareWave, cpr, cpr_many

SW = SquareWave(1.0)
RNG = np.random.default_rng(777001)
CYCLE = np.clip(0.5 + 0.35 * np.sin(2 * np.pi * np.arange(24) / 24), 0, 1)
TRUTH = np.tile(CYCLE, 10)
REPORTS = SW.perturb(TRUTH, RNG)


def test_a_known_period_is_used_where_a_range_of_one_period_abstains():
    assert cpr(REPORTS, SW).period is None
    assert cpr(REPORTS, SW, CprConfig(min_period=24, max_period=24)).period is None
    given = cpr(REPORTS, SW, CprConfig(period=24))
    assert given.period == 24 and math.isnan(given.confidence)
    assert np.array_equal(given.template, phase_templates(REPORTS, SW, 24))
    assert np.array_equal(given.reconstruction, given.template[np.arange(240) % 24])
    # this stream, this seed (deterministic): the folded template beats the constant
    constant = cpr(REPORTS, SW).reconstruction
    assert np.mean(np.abs(given.reconstruction - TRUTH)) < np.mean(np.abs(constant - TRUTH))


def test_cpr_many_gives_the_same_with_a_known_period():
    config = CprConfig(period=24)
    streams = [REPORTS, REPORTS[:100], REPORTS[:24]]
    many = cpr_many(streams, SW, config)
    for one, y in zip(many, streams, strict=True):
        alone = cpr(y, SW, config)
        assert one.period == alone.period == 24
        assert np.array_equal(one.reconstruction, alone.reconstruction)


def test_a_period_longer_than_the_stream_or_not_an_integer_is_refused():
    with pytest.raises(ParameterError) as caught:
        cpr(REPORTS[:23], SW, CprConfig(period=24))
    assert caught.value.field == "config.period" and caught.value.value == 24
    assert "at most the length of y (23 reports" in str(caught.value)
    with pytest.raises(ParameterError, match=r"length of streams\[1\] \(5 reports"):
        cpr_many([REPORTS, REPORTS[:5]], SW, CprConfig(period=24))
    for bad, limit in ((1, "an integer >= 2"), (24.0, "an integer"), (True, "an integer")):
        with pytest.raises(ParameterError) as caught:
            CprConfig(period=bad)
        assert caught.value.field == "period" and caught.value.limit == limit
