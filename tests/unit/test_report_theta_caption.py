"""The report's θ figure says whether a θ search ran: with the small-fleet rule or a
configured θ no search ran, so "the model the θ search minimises" was false there."""

from __future__ import annotations

import pytest
from ldpfleet.app.report import _cadr_section


def _results(chosen_by: str | None) -> dict:
    degrees = [1, 2, 2, 3, 5, 1, 4, 2]
    results = {
        "pipeline": "dp",
        "method": "ll",
        "eps": 3.0,
        "alpha": 0.1,
        "theta": 3,
        "budget": {"dsr": 2.7},
        "raw": {"mae": 1.5},
        "per_device": {f"d{i}": {"degree": d, "estimate": d} for i, d in enumerate(degrees)},
    }
    if chosen_by is not None:
        results["theta_chosen_by"] = chosen_by
    return results


@pytest.mark.parametrize(
    ("chosen_by", "words"),
    [
        (None, "The error model the θ search minimises"),
        ("search", "The error model the θ search minimises"),
        ("small-fleet", "none ran: θ was chosen by the public small-fleet rule"),
        ("configured", "none ran: θ was given in the configuration"),
    ],
)
def test_the_theta_caption_says_whether_a_search_ran(chosen_by, words):
    html = _cadr_section(_results(chosen_by))
    assert words in html
    if chosen_by in ("small-fleet", "configured"):
        assert "The error model the θ search minimises" not in html
