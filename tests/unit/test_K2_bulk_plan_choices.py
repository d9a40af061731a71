"""A ``BulkPlan`` naming an unknown mechanism or reconstruction is refused with the same
sentence, field, limit and value after helper K2 gave both checks one function."""

from __future__ import annotations

import pytest
from ldpfleet.protocol.bulk import BulkPlan
from ldpfleet.protocol.errors import ParameterError


def _plan(**changes) -> BulkPlan:
    settings = dict(run="t", devices=20, steps=10, batch_steps=5, eps=2.0, w=5)
    settings.update(changes)
    return BulkPlan(**settings)


@pytest.mark.parametrize(
    ("changes", "field", "limit", "sentence"),
    [
        (
            {"mechanism": "laplace"},
            "mechanism",
            "one of ['sw', 'sw01']",
            "mechanism: bulk gateways privatise with sw or sw01, got 'laplace'",
        ),
        (
            {"reconstruct": "spline"},
            "reconstruct",
            "one of ['none', 'cpr', 'sw', 'sw_moving', 'sw_filter']",
            "reconstruct: bulk collectors reconstruct with one of none, cpr, sw, sw_moving, "
            "sw_filter, got 'spline'",
        ),
    ],
)
def test_an_unknown_choice_is_refused_as_before(changes, field, limit, sentence):
    with pytest.raises(ParameterError) as caught:
        _plan(**changes)
    err = caught.value
    assert (err.field, err.limit, err.value) == (field, limit, next(iter(changes.values())))
    assert str(err) == sentence


@pytest.mark.parametrize("changes", [{"mechanism": "sw01"}, {"reconstruct": "sw_filter"}])
def test_a_known_choice_is_accepted(changes):
    assert _plan(**changes)
