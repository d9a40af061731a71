"""The refusals of the array checks in ``protocol.validate`` and ``collector.gcdp.validate``
are pinned here, sentence, field, limit and value, so that the helpers they share (helper
K2's refactor, 2026-12-06) change none of them; also that a checked array is the caller's
own only where it was before (``finite_reals`` views, the GC-DP checks copy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.collector.gcdp import validate as gcdp_validate
from ldpfleet.protocol import validate
from ldpfleet.protocol.errors import ParameterError


def _refusal(call) -> ParameterError:
    with pytest.raises(ParameterError) as caught:
        call()
    return caught.value


class _NotANumber:
    def __float__(self):
        raise TypeError("no float")


BAD = [_NotANumber()]


@pytest.mark.parametrize(
    ("call", "field", "limit", "value", "words"),
    [
        (
            lambda: validate.finite_reals(BAD, "x"),
            "x",
            "an array of real numbers",
            BAD,
            "must be an array of real numbers",
        ),
        (
            lambda: validate.finite_reals([], "x"),
            "x",
            "at least one value",
            [],
            "must hold at least one value",
        ),
        (
            lambda: validate.finite_reals([[1.0], [math.nan]], "x"),
            "x[1]",
            "a finite real number",
            None,
            "must be finite, got ",
        ),
        (
            lambda: gcdp_validate.finite_vector(BAD, "v"),
            "v",
            "a 1-D array of real numbers",
            BAD,
            "must be a 1-D array of real numbers",
        ),
        (
            lambda: gcdp_validate.finite_vector([1.0, math.inf, math.nan], "v"),
            "v[1]",
            "finite",
            math.inf,
            "must be finite, got ",
        ),
        (
            lambda: gcdp_validate.finite_answers(BAD, "a"),
            "a",
            "an array of real numbers",
            BAD,
            "must be an array of real numbers",
        ),
        (
            lambda: gcdp_validate.finite_answers([2.0, math.nan], "a"),
            "a[1]",
            "finite",
            None,
            "must be finite, got ",
        ),
        (
            lambda: gcdp_validate.finite_answers([[1.0, 2.0], [3.0, -math.inf]], "a"),
            "a[1, 1]",
            "finite",
            -math.inf,
            "must be finite, got ",
        ),
        (
            lambda: gcdp_validate.nonnegative_vector([0.0, 1.0, -2.0, -3.0], "s"),
            "s[2]",
            ">= 0",
            -2.0,
            "must be >= 0, got ",
        ),
        (
            lambda: gcdp_validate.nonnegative_vector([0.0, math.nan], "s"),
            "s[1]",
            "finite",
            None,
            "must be finite, got ",
        ),
        (
            lambda: gcdp_validate.unit_vector([0.5, 1.5, 2.0], "u"),
            "u[1]",
            "in [0, 1]",
            1.5,
            "must be in [0, 1], got ",
        ),
        (
            lambda: gcdp_validate.unit_vector([0.5, -0.5], "u"),
            "u[1]",
            ">= 0",
            -0.5,
            "must be >= 0, got ",
        ),
    ],
)
def test_each_refusal_keeps_its_field_limit_value_and_sentence(call, field, limit, value, words):
    err = _refusal(call)
    assert err.field == field
    assert err.limit == limit
    if value is None:  # NaN: the refused value is a float NaN
        assert isinstance(err.value, float) and math.isnan(err.value)
    else:
        assert err.value == value
        assert type(err.value) is type(value)
    assert words in str(err)  # the value follows (test below)


def test_refused_entry_values_are_python_floats():
    err = _refusal(lambda: gcdp_validate.nonnegative_vector(np.array([1.0, -4.0]), "s"))
    assert type(err.value) is float


def test_finite_reals_flattens_and_views_the_callers_float_array():
    given = np.array([[1.0, 2.0], [3.0, 4.0]])
    out = validate.finite_reals(given, "x")
    assert out.shape == (4,)
    assert np.shares_memory(out, given)


@pytest.mark.parametrize(
    "check",
    [
        lambda a: gcdp_validate.finite_vector(a, "v"),
        lambda a: gcdp_validate.nonnegative_vector(a, "v"),
        lambda a: gcdp_validate.unit_vector(a, "v"),
        lambda a: gcdp_validate.finite_answers(a, "v"),
    ],
)
def test_gcdp_checks_return_a_copy(check):
    given = np.array([0.25, 0.5])
    out = check(given)
    assert np.array_equal(out, given)
    assert not np.shares_memory(out, given)


def test_finite_answers_copies_a_batch():
    given = np.array([[0.25, 0.5], [0.75, 1.0]])
    out = gcdp_validate.finite_answers(given, "a")
    assert out.shape == (2, 2)
    assert not np.shares_memory(out, given)


@pytest.mark.parametrize(
    ("call", "sentence"),
    [
        (
            lambda: gcdp_validate.nonnegative_vector([1.0, -0.5], "s"),
            "s[1]: must be >= 0, got -0.5",
        ),
        (lambda: gcdp_validate.unit_vector([1.5], "u"), "u[0]: must be in [0, 1], got 1.5"),
        (lambda: gcdp_validate.finite_vector([math.nan], "v"), "v[0]: must be finite, got nan"),
        (lambda: validate.finite_reals([0.0, math.inf], "x"), "x[1]: must be finite, got inf"),
    ],
)
def test_a_refused_entry_is_written_as_a_number(call, sentence):
    """The sentence said ``got np.float64(-0.5)`` (numpy 2's repr of an array entry)."""
    assert str(_refusal(call)) == sentence
