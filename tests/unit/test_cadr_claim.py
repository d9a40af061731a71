"""The CADR-LDP privacy claim part by part (protocol.cadr_budget.privacy_claim) and its
table in the run report (app.cadr_report)."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from ldpfleet.app.cadr_report import degree_figure_inputs, release_vs_baselines
from ldpfleet.protocol.cadr_budget import (
    THETA_FRACTION,
    CadrBudget,
    privacy_claim,
    resolve_degree_bound,
)
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.cadr_run import CadrSettings
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario


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
    # the relay's report to the collector holds public facts only; the relay itself is a
    # communication role with the broker's trust; the phase's wall-clock duration is the
    # one channel left (its number of rounds is public: padding)
    relay = _part(claim, None, "relay phase report")
    assert relay["covered"] == "yes" and not relay["charged"] and relay["eps"] == 0.0
    assert "no count" in relay["part"]
    # the peer graph: the collector side runs the relay and its login reads every
    # up/peer_batch (privacy review V2), so it is covered by no ε
    peers = _part(claim, None, "peer graph")
    assert peers["covered"] == "no" and "collector" in peers["seen_by"]
    timing = _part(claim, None, "timing")
    assert claim["not_covered"] == [peers["part"], timing["part"]]
    assert "NOT established" in claim["statement"] and "2(1-α)ε" in claim["statement"]
    # the bound proven for every graph is group privacy over the fleet (helper E: beyond the
    # star one node's list moves kept degrees elsewhere, docs/audit-graph.md)
    assert "proven n(1-α)ε over n devices" in claim["statement"]


def test_the_small_eps_rule_gives_the_theta_search_more_and_keeps_the_ledger_exact():
    # ε_θ = max(f α ε, min(ε/2, 0.5, 1200/n)) from ε = 1 up; at ε <= 0.5 all but NDOE,
    # LPEA and 0.1 ε (0.86 ε at α = 0.1); linear in between; the difference from DSR only
    cases = ((4039, 0.5, 0.43), (7115, 0.25, 0.215), (4039, 3.0, 1200 / 4039),
             (4039, 0.75, (0.86 * 0.75 + 1200 / 4039) / 2), (500, 5.0, 0.5),
             (10_000, 5.0, 0.3), (7115, 3.0, 0.18), (7115, 1.0, 1200 / 7115))  # fmt: skip
    for n, eps, want in cases:
        budget = CadrBudget.for_pipeline(eps, 0.1, "dp", True, n)
        assert budget.theta == pytest.approx(want, rel=1e-12)
        assert budget.ndoe == budget.lpea == pytest.approx((1 - THETA_FRACTION) * 0.1 * eps / 2)
        assert math.fsum(e for _, e in budget.parts()) == pytest.approx(eps, rel=1e-12)
        assert budget.dsr == pytest.approx(eps - want - (1 - THETA_FRACTION) * 0.1 * eps)
    # the paper's split and a given θ take nothing extra
    assert CadrBudget.for_pipeline(0.5, 0.1, "dp", False, 4039).theta == 0
    assert CadrBudget.for_pipeline(0.5, 0.1, "paper", True, 4039).theta == 0
    with pytest.raises(ParameterError) as bad:
        CadrBudget(1.0, 0.1, 0.0, 0.2)  # extra without a θ search
    assert bad.value.field == "theta_extra"
    with pytest.raises(ParameterError):
        CadrBudget(1.0, 0.1, 0.6, 0.9)  # would leave DSR nothing


def test_the_paper_claim_lists_the_exact_theta_counts_as_uncovered():
    claim = privacy_claim(CadrBudget(3.0, 0.1), "ll")
    assert math.isclose(claim["charged_total"], 3.0, rel_tol=1e-12)
    assert any("exact secure sums" in part for part in claim["not_covered"])
    assert len(claim["not_covered"]) == 3  # the θ counts, the peer graph, the phases' timing


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
    assert "caveat" in page and page.count("<tr>") == 4 + 1 + 9 + 1  # two tables
    del results["privacy_claim"]
    assert "Privacy claim" not in release_vs_baselines(results)


def _timing(claim: dict) -> dict:
    (part,) = [p for p in claim["parts"] if "timing" in p["part"]]
    return part


def test_the_timing_part_says_which_case_held():
    # issue 20: the relay phases' durations are covered only under a public deadline that
    # every phase kept; without one, or when a phase overran it, they are named uncovered
    budget = CadrBudget(3.0, 0.1, THETA_FRACTION)
    off = privacy_claim(budget, "ll")
    assert _timing(off)["covered"] == "no" and _timing(off)["part"] in off["not_covered"]
    assert "peer_deadline_seconds (off)" in _timing(off)["note"]
    held = privacy_claim(budget, "ll", deadline=120.0, overrun={})
    peers = next(p["part"] for p in held["parts"] if p["part"].startswith("peer graph"))
    assert _timing(held)["covered"] == "yes" and held["not_covered"] == [peers]  # V2
    assert "held to the public deadline 120 s" in _timing(held)["note"]
    assert "ended by the deadline" in _timing(held)["note"]
    assert "1 uncovered part(s): peer graph" in held["statement"]
    late = privacy_claim(budget, "lh", deadline=60.0, overrun={"lpea": 12.5})
    assert _timing(late)["covered"] == "no"
    assert late["not_covered"] == [peers, _timing(late)["part"]]
    assert "overran the public deadline of 60 s (lpea by 12.5 s)" in _timing(late)["note"]
    assert _timing(late)["overran_seconds"] == {"lpea": 12.5}
    # er runs no relay phase: no timing part whatever the deadline
    er = privacy_claim(budget, "er", deadline=60.0)
    assert not [p for p in er["parts"] if "timing" in p["part"]]


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, 86_401.0])
def test_a_bad_peer_deadline_is_refused_naming_field_limit_and_value(bad):
    with pytest.raises(ParameterError) as refused:
        CadrSettings(peer_deadline=bad)
    assert refused.value.field == "peer_deadline_seconds"
    assert "0..86400" in str(refused.value) and repr(bad) in str(refused.value)
    toml = f"""[scenario]
name = "t"
[graph]
source = "barabasi_albert:n=30,m=2,seed=1"
[cadr]
peer_deadline_seconds = {bad!r}
"""
    with pytest.raises(ScenarioError) as invalid:  # the schema's own check, same limits
        parse_scenario(toml)
    limit = "<= 86400.0" if bad > 0 else ">= 0.0"  # nan: not >= 0
    assert f"cadr.peer_deadline_seconds: Expected `float` {limit}, got " in str(invalid.value)
    assert str(invalid.value).endswith(repr(bad))


def test_a_given_theta_opens_no_theta_sum_and_is_not_named_uncovered():
    # θ fixed in the configuration: no search ran, so neither the dp part nor the paper's
    # "exact secure sums" part applies
    budget = CadrBudget.for_pipeline(3.0, 0.1, "dp", False, 4039)
    claim = privacy_claim(budget, "ll", theta_searched=False)
    first = claim["parts"][0]
    assert first["part"].startswith("θ: given") and first["covered"] == "yes"
    assert not any("secure sum" in part for part in claim["not_covered"])
    searched = privacy_claim(CadrBudget.for_pipeline(3.0, 0.1, "paper", True, 4039), "ll")
    assert any("exact secure sums" in part for part in searched["not_covered"])


def test_the_degree_bound_is_public_by_default_and_the_graph_maximum_is_named_uncovered():
    # D is published in the plan: the graph's maximum degree is one node's exact degree
    assert resolve_degree_bound("auto", "dp", 4039, 1045) == (4038, "devices")
    assert resolve_degree_bound("auto", "paper", 4039, 1045) == (1045, "graph-max")
    assert resolve_degree_bound("graph-max", "dp", 4039, 1045) == (1045, "graph-max")
    assert resolve_degree_bound("devices", "paper", 4039, 1045) == (4038, "devices")
    assert resolve_degree_bound(300, "dp", 4039, 1045) == (300, "configured")
    assert resolve_degree_bound("devices", "dp", 1, 0) == (1, "devices")  # D >= 1
    budget = CadrBudget.for_pipeline(3.0, 0.1, "dp", True, 4039)
    public = privacy_claim(budget, "ll", degree_bound=(4038, "devices"))
    (row,) = [p for p in public["parts"] if p["part"].startswith("degree bound")]
    assert row["covered"] == "yes" and row["eps"] == 0.0 and "n - 1" in row["note"]
    assert not any(p.startswith("degree bound") for p in public["not_covered"])
    leaked = privacy_claim(budget, "ll", degree_bound=(1045, "graph-max"))
    assert "degree bound D = 1045 (graph-max)" in leaked["not_covered"]
    assert "degree bound D = 1045" in leaked["statement"]
    assert math.isclose(leaked["charged_total"], public["charged_total"])  # D is not charged


@pytest.mark.parametrize("bad", [0, -3, "max", True, 2.5])
def test_a_bad_degree_bound_is_refused_naming_the_field_and_value(bad):
    with pytest.raises(ParameterError) as refused:
        resolve_degree_bound(bad, "dp", 40, 7)
    assert refused.value.field == "degree_bound" and repr(bad) in str(refused.value)
    with pytest.raises(ParameterError):
        CadrSettings(degree_bound=bad)


def test_the_scenario_reads_degree_bound_and_refuses_bad_values():
    def toml(value: str) -> str:
        return f"""[scenario]
name = "t"
[graph]
source = "barabasi_albert:n=30,m=2,seed=1"
[cadr]
degree_bound = {value}
"""

    assert parse_scenario(toml('"graph-max"')).spec.cadr.degree_bound == "graph-max"
    assert parse_scenario(toml("12")).spec.cadr.degree_bound == 12
    for bad in ("0", '"max"'):
        with pytest.raises(ScenarioError) as invalid:
            parse_scenario(toml(bad))
        assert "cadr.degree_bound" in str(invalid.value)


def test_a_given_theta_above_the_degree_bound_is_refused_before_any_device_starts():
    """Every device refuses θ > D (protocol.cadr_device), so a fleet run with ``theta = 10,
    degree_bound = 5`` waited for releases that never came (``ldpfleet run`` hung past 60 s)
    (the in-process reference still runs it: ``bench cadr-sweep`` grids go past D). Now the
    fleet refuses it before any device starts, naming theta, D and the value; θ = D and
    the θ rules still run."""
    from ldpfleet.devices.graphs import Graph
    from ldpfleet.protocol.cadr_budget import check_theta_within_bound
    from ldpfleet.scenarios.cadr_run import run_cadr_fleet

    with pytest.raises(ParameterError) as refused:
        check_theta_within_bound(10, (5, "configured"))
    assert refused.value.field == "theta"
    assert "D = 5 (configured)" in str(refused.value) and "got 10" in str(refused.value)
    check_theta_within_bound(5, (5, "configured"))
    check_theta_within_bound("auto-dev", (5, "configured"))
    leaves = np.arange(1, 8)
    star = Graph.from_edges(8, np.zeros(7, dtype=np.int64), leaves)  # D = n - 1 = 7
    with pytest.raises(ParameterError, match="theta"):
        CadrSettings(theta=8).bound_for(star)
    with pytest.raises(ParameterError, match="theta"):
        asyncio.run(run_cadr_fleet(star, broker="memory", theta=6, degree_bound=5))
    assert CadrSettings(theta=7).bound_for(star) == 7


def test_the_claim_sentence_names_only_parts_the_method_runs():
    """``ra`` runs no NDOE, yet its statement said "the NDOE codes and each device's own
    DSR value are ε-DP parts of it" (``ldpfleet run`` with ``method = "ra"``)."""
    ra = privacy_claim(CadrBudget(3.0, 0.1), "ra")["statement"]
    assert "NDOE codes" not in ra
    assert "each device's own DSR value is an ε-DP part of it" in ra
    ll = privacy_claim(CadrBudget(3.0, 0.1, THETA_FRACTION), "ll")["statement"]
    assert "the θ search, the NDOE codes and each device's own DSR value are ε-DP" in ll


def _dp_results() -> dict:
    """A dp run's results.json figures: raw DSR values far off, the estimates exact."""
    per_device = {
        f"n{i}": {"degree": 19, "released": 19.0 + (-1) ** i * 9.0, "estimate": 19}
        for i in range(4)
    }
    return {"pipeline": "dp", "eps": 3.0, "alpha": 0.1, "theta": 19, "mae": 0.0,
            "raw": {"mae": 9.0}, "budget": {"theta": 0.5, "ndoe": 0.06, "lpea": 0.06,
            "dsr": 2.38}, "per_device": per_device}  # fmt: skip


def test_the_report_plots_the_pipelines_release_and_the_theta_model_at_its_dsr_budget():
    # before: under "dp" the report's histogram showed the raw DSR values as the
    # "released degree", and its θ figure drew the raw-release error model at
    # ε_dsr = (1 - α) ε = 2.7 (dp's is 2.38) with the post-processed MAE (0) as "this run"
    figure = degree_figure_inputs(_dp_results())
    assert figure.released.tolist() == [19.0] * 4 and "post-processed" in figure.label
    assert figure.eps_dsr == 2.38 and figure.model_mae == 9.0
    paper = {**_dp_results(), "pipeline": "paper", "budget": {"dsr": 2.7}, "mae": 9.0}
    figure = degree_figure_inputs(paper)
    assert figure.released.tolist() == [28.0, 10.0, 28.0, 10.0] and figure.eps_dsr == 2.7
    assert figure.model_mae == 9.0
    older = {k: v for k, v in paper.items() if k not in ("budget", "raw", "pipeline")}
    assert degree_figure_inputs(older).eps_dsr == pytest.approx(2.7)  # (1 - α) ε
