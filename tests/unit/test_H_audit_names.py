"""``run_audit`` with what a user types (helper H, 2026-12-06): each case failed before its
fix (a name in other case, with spaces or misspelt was answered with the list of all
entries only; ``None`` or a list with ``get_mechanism``'s list of stream mechanisms)."""

from __future__ import annotations

import pytest

import ldpfleet


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("Laplace", "laplace"), ("RR", "rr"), ("laplace ", "laplace"), ("pieceweise", "piecewise")],
)
def test_a_near_name_is_refused_with_the_name_meant(typed, meant):
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.run_audit(typed, 1.0, trials=100)
    error = info.value
    assert error.field == "mechanism" and error.value == typed and error.limit
    assert str(error).endswith(f"; did you mean {meant!r}?")


def test_a_padded_import_path_is_refused_with_the_path_meant():
    typed = " ldpfleet.protocol.sw:SquareWave "
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.run_audit(typed, 1.0, trials=100)
    assert str(info.value).endswith("; did you mean 'ldpfleet.protocol.sw:SquareWave'?")


def test_no_hint_when_nothing_is_near():
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.run_audit("zzzz", 1.0, trials=100)
    assert "did you mean" not in str(info.value)


def test_an_option_error_of_a_valid_name_has_no_hint():
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.run_audit("laplace", -1.0, trials=100)
    assert info.value.field == "eps" and "did you mean" not in str(info.value)


@pytest.mark.parametrize("value", [None, 5, ["laplace"], b"rr"])
def test_a_non_name_is_refused_in_the_audits_words(value):
    """Was get_mechanism's sentence: "must be a built-in (sw, sw01, laplace, raw, ...)",
    which leaves out the battery entries run_audit takes."""
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.run_audit(value, 1.0, trials=100)
    error = info.value
    assert error.field == "mechanism" and error.value == value
    assert "battery entry" in str(error) and "raw" not in str(error)
