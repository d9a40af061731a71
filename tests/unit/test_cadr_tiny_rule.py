"""The small-fleet rule (issue 20, docs/cadr-private.md "Small graphs: the limit and the
guard"): where the dp θ search's bucket counts carry less than one fleet of signal
(``n < √K σ``, public n, ε, α, D) the dp pipeline runs no θ search, takes θ = ⌈√D⌉ and
the split of a given θ. Every test here fails on the code before the rule (no
``small_fleet_theta`` / ``plan_theta``; ``private_run`` searched θ on any fleet)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.collector import cadr_reference as ref
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.degree_postprocess import count_signal_ratio
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol.cadr_budget import (
    SMALL_FLEET_THETA_CLAIM,
    THETA_FRACTION,
    CadrBudget,
    plan_theta,
    privacy_claim,
    small_fleet_theta,
    theta_extra,
)
from ldpfleet.protocol.cadr_theta_noise import bucket_count, bucket_grid, noise_parties
from ldpfleet.protocol.errors import ParameterError


def _signal_ratio(eps: float, n: int, bound: int) -> float:
    """The collector's own reading of the same public test (the small-fleet guard's)."""
    eps_theta = CadrBudget(eps, 0.1, THETA_FRACTION, theta_extra(eps, 0.1, n)).theta
    buckets = len(bucket_grid(bound, bucket_count(n, eps_theta))) + 1
    return count_signal_ratio(n, buckets, eps_theta, noise_parties(n))


@pytest.mark.parametrize(("eps", "last_fired"), [(0.5, 27), (1, 23), (3, 23), (5, 23)])
def test_the_rule_fires_exactly_below_one_fleet_of_signal(eps, last_fired):
    fired = [n for n in range(2, 120) if small_fleet_theta(eps, 0.1, n, n - 1) is not None]
    assert fired == list(range(2, last_fired + 1))  # D = n - 1: one boundary, no gaps
    for n in range(2, 120):
        assert (n in fired) == (_signal_ratio(eps, n, n - 1) < 1)


def test_the_rules_theta_is_the_ceiling_of_the_root_of_the_public_bound():
    assert [small_fleet_theta(3, 0.1, n, n - 1) for n in (2, 5, 10, 15, 17, 23)] == [
        1, 2, 3, 4, 4, 5,
    ]  # fmt: skip
    assert small_fleet_theta(3, 0.1, 15, 30) == math.ceil(math.sqrt(30))  # a configured D


@pytest.mark.parametrize(
    ("args", "field"),
    [((3, 0.1, 0, 5), "devices"), ((3, 0.1, 10, 0), "degree_bound"), ((-1, 0.1, 10, 9), "eps"),
     ((3, 1.5, 10, 9), "alpha"), ((3, 0.1, 10.5, 9), "devices")],
)  # fmt: skip
def test_bad_input_is_refused_naming_the_field(args, field):
    with pytest.raises(ParameterError) as caught:
        small_fleet_theta(*args)
    assert caught.value.field == field


def test_only_a_dp_deviation_search_on_a_tiny_fleet_is_replaced():
    assert plan_theta("auto-dev", "dp", 3, 0.1, 15, 14).rule == 4
    assert plan_theta("auto-dev", "dp", 3, 0.1, 15, 14).small_fleet
    assert not plan_theta("auto-dev", "dp", 3, 0.1, 15, 14).searched
    assert plan_theta("auto-dev", "paper", 3, 0.1, 15, 14).rule == "auto-dev"  # unaffected
    assert plan_theta("auto-sum", "paper", 3, 0.1, 15, 14).rule == "auto-sum"
    assert plan_theta(7, "dp", 3, 0.1, 15, 14).chosen_by == "configured"
    assert plan_theta("auto-dev", "dp", 3, 0.1, 24, 23).chosen_by == "search"


def test_the_claim_names_the_rule_charges_no_theta_and_sums_to_eps():
    budget = CadrBudget.for_pipeline(3.0, 0.1, "dp", False, 15)
    claim = privacy_claim(budget, "ll", theta_searched=False, small_fleet=True)
    theta_row = claim["parts"][0]
    assert theta_row["part"] == SMALL_FLEET_THETA_CLAIM
    assert "n < √K·σ" in theta_row["part"] and "no θ search" in theta_row["part"]
    assert (theta_row["eps"], theta_row["charged"], theta_row["covered"]) == (0.0, False, "yes")
    assert claim["charged_total"] == pytest.approx(3.0)
    assert "θ search" not in claim["statement"]


GRAPH = generate("erdos_renyi", 15, seed=4, p=0.3)


def test_in_process_a_tiny_fleet_runs_the_rule_and_its_ledger_sums_to_eps():
    run = ref.private_run(GRAPH, "ll", "auto-dev", 3.0, 0.1, 5, pipeline="dp")
    assert (run.theta, run.theta_chosen_by, run.theta_search) == (4, "small-fleet", {})
    assert "geometric" not in run.spent and sum(run.spent.values()) == pytest.approx(3.0)
    given = ref.private_run(GRAPH, "ll", 4, 3.0, 0.1, 5, pipeline="dp")
    assert (run.mae, run.raw, run.postprocessed) == (given.mae, given.raw, given.postprocessed)


def test_in_process_the_paper_pipeline_and_larger_fleets_still_search():
    paper = ref.private_run(GRAPH, "ll", "auto-dev", 3.0, 0.1, 5, pipeline="paper")
    assert paper.theta_chosen_by == "search" and paper.theta_rounds > 0
    large = generate("erdos_renyi", 40, seed=4, p=0.1)
    run = ref.private_run(large, "ll", "auto-dev", 3.0, 0.1, 5, pipeline="dp")
    assert run.theta_chosen_by == "search" and run.theta_search and "geometric" in run.spent


def test_in_process_the_release_is_the_dsr_values_own_deconvolution(monkeypatch):
    # no θ-search counts: no prior; post_process of the raw values alone (checked by MAE);
    # both pipelines post-process in degree_postprocess.post_process_release, which looks
    # post_process up in its module at call time
    captured = {}
    original = dpp.post_process

    def spy(released, theta, eps_dsr, prior=None, hist=None, **options):
        captured.update(prior=prior, hist=hist, theta=theta, eps_dsr=eps_dsr)
        return original(released, theta, eps_dsr, prior, hist, **options)

    monkeypatch.setattr(dpp, "post_process", spy)
    run = ref.private_run(GRAPH, "ll", "auto-dev", 1.0, 0.1, 2, pipeline="dp")
    assert captured["prior"] is None and captured["hist"] is None
    assert captured["eps_dsr"] == pytest.approx(0.9)  # DSR keeps (1 - α)ε
    assert np.isfinite(run.mae) and run.theta == captured["theta"] == 4
