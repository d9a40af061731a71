"""The report's numbers for people (issue 22): rounding, abridged lists, and the ledger
histogram's bins ending at the budget."""

from __future__ import annotations

from ldpfleet.app.report import _fmt, _num, spend_bins


def test_numbers_are_rounded_and_lists_abridged():
    assert _num(0.7176818459833546) == "0.7177"
    assert _num(2000.0000000001) == "2000"
    assert _num(12345.678) == "12346"
    assert _num(1234567) == "1,234,567"
    assert _num(None) == "—" and _num(True) == "True"
    text = _fmt([0.7176818459833546] * 20)
    assert text.startswith("[0.7177, 0.7177,") and "(20 values; exact in results.json)" in text
    assert _fmt({"a": 1.23456789}) == "a: 1.235"


def test_a_spend_equal_to_the_budget_falls_in_the_last_bin_left_of_the_line():
    eps = 2.0
    edges, drawn = spend_bins([2.0000000000000284, 1.2, 2.0], eps)
    assert edges[-1] == eps and edges[0] == 0.0
    assert max(drawn) == eps  # drawn at the line's left, inside [edges[-2], edges[-1]]
    assert edges[-2] < drawn[0] <= edges[-1]


def test_a_real_overspend_extends_past_the_budget():
    edges, drawn = spend_bins([2.5, 1.0], 2.0)
    assert edges[-1] == 2.5 and max(drawn) == 2.5


def test_the_headline_counts_withdrawn_reports():
    """A run where devices stopped at a rejection: 42 of 64 reports arrived, 22 were
    withdrawn, none lost; the headline said "0 of 64 (4 rejected)" and nothing of the 22."""
    from ldpfleet.app.report import _headline

    results = {"reports_expected": 64, "reports_lost": 0, "reports_rejected": 4,
               "reports_withdrawn": 22, "reports_received": 42}  # fmt: skip
    text = _headline(results, None)
    assert "(4 rejected, 22 withdrawn)" in text, text
    assert "(4 rejected)" in _headline({**results, "reports_withdrawn": 0}, None)
