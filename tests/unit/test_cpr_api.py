"""The public CPR API as a user calls it (held-out QA, helper S): ``ldpfleet.cpr``,
``ldpfleet.cpr_many``, ``CprConfig``, ``CprResult``.

Found: ``cpr``/``cpr_many`` were not exported (docs/api.md names the public API); a bad
report in the 2nd stream of ``cpr_many`` was named ``y[3]`` (which stream?); one stream
passed to ``cpr_many`` (a 1-D array) was refused as ``y: ... got shape ()``; a dict as the
config died in an ``AttributeError``; ``CprConfig(max_iter=0)`` / ``smoothing="no"`` /
``tol=nan`` were accepted silently (EM ran 0 iterations; a string was truthy).
"""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.protocol.errors import ParameterError


@pytest.fixture(scope="module")
def reports():
    import ldpfleet

    rng = np.random.default_rng(0)
    return ldpfleet.SquareWave(2.0).perturb(np.tile(rng.random(24), 20), rng)


def test_cpr_is_public(reports):
    import ldpfleet

    for name in ("cpr", "cpr_many", "CprConfig", "CprResult"):
        assert name in ldpfleet.__all__ and hasattr(ldpfleet, name)
    result = ldpfleet.cpr(reports, ldpfleet.SquareWave(2.0))
    assert isinstance(result, ldpfleet.CprResult) and result.period == 24
    assert type(result.period) is int and result.reconstruction.shape == (480,)
    many = ldpfleet.cpr_many([reports, reports], ldpfleet.SquareWave(2.0))
    assert [r.period for r in many] == [24, 24]


def test_cpr_many_names_the_stream_of_a_bad_report(reports):
    from ldpfleet.collector.cpr import cpr_many
    from ldpfleet.protocol.sw import SquareWave

    bad = reports.copy()
    bad[3] = 9.0
    with pytest.raises(ParameterError) as caught:
        cpr_many([reports, bad], SquareWave(2.0))
    assert caught.value.field == "streams[1][3]", caught.value
    assert "9.0" in str(caught.value)


def test_cpr_many_refuses_one_stream_given_as_numbers(reports):
    from ldpfleet.collector.cpr import cpr_many
    from ldpfleet.protocol.sw import SquareWave

    with pytest.raises(ParameterError) as caught:
        cpr_many(reports, SquareWave(2.0))
    assert caught.value.field == "streams" and "cpr(" in str(caught.value), caught.value


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"max_iter": 0}, "max_iter"),
        ({"max_iter": 2.5}, "max_iter"),
        ({"smoothing": "no"}, "smoothing"),
        ({"tol": float("nan")}, "tol"),
        ({"tol": -1.0}, "tol"),
        ({"kde_grid": 1}, "kde_grid"),
        ({"min_period": 1}, "min_period"),
        ({"min_period": 5, "max_period": 4}, "max_period"),
        ({"max_period": 3.0}, "max_period"),
    ],
)
def test_cpr_config_refuses_bad_options(options, field):
    from ldpfleet.collector.cpr import CprConfig

    with pytest.raises(ParameterError) as caught:
        CprConfig(**options)
    assert caught.value.field == field
    assert repr(next(iter(options.values())) if len(options) == 1 else 4) in str(caught.value)


def test_cpr_refuses_a_config_that_is_not_one(reports):
    from ldpfleet.collector.cpr import cpr
    from ldpfleet.protocol.sw import SquareWave

    with pytest.raises(ParameterError) as caught:
        cpr(reports, SquareWave(2.0), {"min_period": 3})
    assert caught.value.field == "config" and "CprConfig" in str(caught.value)
