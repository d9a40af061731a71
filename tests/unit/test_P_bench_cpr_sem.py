"""``bench cpr --trials 1``: the cosine table's ``sem`` is null (one trial has no spread to
estimate), not 0.0, which read as an exact mean (helper P, 2026-12-06)."""

from ldpfleet.app.bench_cpr import _cosine_cell


def test_one_trial_has_no_standard_error_and_two_have_one():
    one = _cosine_cell(("music", 2.0, 5, 1, 144, 3, ("cpr", "sw")))
    assert [row["sem"] for row in one] == [None, None]
    two = _cosine_cell(("music", 2.0, 5, 2, 144, 3, ("cpr", "sw")))
    assert all(isinstance(row["sem"], float) and row["sem"] >= 0.0 for row in two)
    assert [row["method"] for row in two] == ["cpr", "sw"]
