"""The CADR-LDP privacy claim part by part (protocol.cadr_budget.privacy_claim) and its
table in the run report (app.cadr_report)."""

from __future__ import annotations

import math

import pytest
from ldpfleet.app.cadr_report import release_vs_baselines
from ldpfleet.protocol.cadr_budget import THETA_FRACTION, CadrBudget, privacy_claim


def _part(claim: dict, mechanism: str | None, text: str = "") -> dict:
    return next(p for p in claim["parts"] if p["mechanism"] == mechanism and text in p["part"])


def test_the_dp_claim_names_every_part_and_sums_to_the_ledger():
    budget = CadrBudget(3.0, 0.1, THETA_FRACTION)
    claim = privacy_claim(budget, "ll")
    assert math.isclose(claim["charged_total"], 3.0, rel_tol=1e-12)
    assert _part(claim, "geometric")["eps"] == pytest.approx(0.18)
    assert _part(claim, "geometric")["covered"] == "yes"
    assert _part(claim, "warner_rr")["covered"] == "caveat"  # RR once per node, hard cap
    assert _part(claim, "laplace")["eps"] == pytest.approx(2.7)
    relay = _part(claim, None, "relay phase report")
    assert relay["covered"] == "no" and not relay["charged"]
    assert claim["not_covered"] == [relay["part"]]
    assert "NOT established" in claim["statement"] and "2(1-α)ε" in claim["statement"]


def test_the_paper_claim_lists_the_exact_theta_counts_as_uncovered():
    claim = privacy_claim(CadrBudget(3.0, 0.1), "ll")
    assert math.isclose(claim["charged_total"], 3.0, rel_tol=1e-12)
    assert any("exact secure sums" in part for part in claim["not_covered"])
    assert len(claim["not_covered"]) == 2  # the θ counts and the relay's phase report


def test_er_and_ra_charge_only_what_they_run():
    er = privacy_claim(CadrBudget(3.0, 0.1, THETA_FRACTION), "er")
    assert {p["mechanism"] for p in er["parts"] if p["charged"]} == {"geometric", "laplace"}
    ra = privacy_claim(CadrBudget(3.0, 0.1, THETA_FRACTION), "ra")
    assert "exponential" not in {p["mechanism"] for p in ra["parts"]}
    assert ra["charged_total"] == pytest.approx(3.0 - 0.06)


def test_the_report_shows_the_claim_table():
    figures = {"mae": 1.0, "mse": 2.0, "histogram_l1": 0.1, "histogram_emd": 0.5}
    results = {
        "pipeline": "dp",
        "raw": figures,
        "postprocessed": figures,
        "baselines": {"constant_median_oracle": {**figures, "value": 3}, "all_zero": figures},
        "budget": {"theta": 0.18},
        "privacy_claim": privacy_claim(CadrBudget(3.0, 0.1, THETA_FRACTION), "ll"),
    }
    page = release_vs_baselines(results)
    assert "Privacy claim, part by part" in page and "relay phase report" in page
    assert "caveat" in page and page.count("<tr>") == 4 + 1 + 6 + 1  # two tables
    del results["privacy_claim"]
    assert "Privacy claim" not in release_vs_baselines(results)
