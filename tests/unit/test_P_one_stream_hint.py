"""A stream given as a 2-D column or row (``x[:, None]``, a table's one-column ``to_numpy()``)
is still refused by ``detect_period`` and ``cpr`` (which axis is time is the caller's to
say), but the sentence now says what to pass; it said only "must be 1-D, got shape (555,
1)" (helper P's user trial, 2026-12-06)."""

import numpy as np
import pytest

from ldpfleet import ParameterError, SquareWave, cpr, cpr_many, detect_period

REPORTS = SquareWave(2.0).perturb(np.full(60, 0.5), np.random.default_rng(8801))


@pytest.mark.parametrize(
    ("shape_of", "hint"),
    [
        (lambda y: y[:, None], "a column of one stream? pass x[:, 0] or x.ravel()"),
        (lambda y: y[None, :], "a row of one stream? pass x[0] or x.ravel()"),
        (lambda y: np.c_[y, y], "one stream per call, e.g. one column x[:, k]"),
        (lambda y: y.reshape(3, 4, 5), "one stream per call, e.g. one column x[:, k]"),
    ],
)
def test_detect_period_says_what_to_pass(shape_of, hint):
    arr = shape_of(REPORTS)
    with pytest.raises(ParameterError) as caught:
        detect_period(arr)
    assert str(caught.value) == f"reports: must be 1-D, got shape {arr.shape}: {hint}"
    assert caught.value.field == "reports" and caught.value.value == arr.shape


def test_cpr_names_cpr_many_for_several_streams():
    arr = np.stack([REPORTS, REPORTS])
    with pytest.raises(ParameterError) as caught:
        cpr(arr, SquareWave(2.0))
    assert str(caught.value).endswith(
        "one stream per call, e.g. one column x[:, k]; cpr_many(streams, mechanism) takes "
        "one stream per row"
    )
    with pytest.raises(ParameterError, match=r"pass x\[:, 0\] or x\.ravel\(\)"):
        cpr(REPORTS[:, None], SquareWave(2.0))


def test_the_hinted_call_works():
    assert detect_period(REPORTS[:, None][:, 0]).searched == detect_period(REPORTS).searched
    assert len(cpr_many(np.stack([REPORTS, REPORTS]), SquareWave(2.0))) == 2
