"""The small-fleet rule below ε = 0.5 (issue 20, helper E; docs/cadr.md "Small ε: the
small-fleet rule on larger fleets"): where it fires on fleets of hundreds or thousands of
devices, and that there it beats the θ search it replaces."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import cadr_reference as ref
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol.cadr_budget import ThetaPlan, small_fleet_theta


@pytest.mark.parametrize(
    ("eps", "last_fired"),
    [(0.5, 27), (0.3, 47), (0.2, 71), (0.1, 142), (0.05, 285), (0.02, 714), (0.01, 1428),
     (0.005, 2858)],
)  # fmt: skip
def test_the_rule_fires_up_to_the_fleet_sizes_the_small_eps_section_names(eps, last_fired):
    # D = n - 1; the boundaries of the grid in docs/cadr.md (one boundary, no gaps below)
    assert small_fleet_theta(eps, 0.1, last_fired, last_fired - 1) is not None
    assert small_fleet_theta(eps, 0.1, last_fired + 1, last_fired) is None
    assert small_fleet_theta(eps, 0.1, last_fired // 2, last_fired // 2 - 1) is not None


def _searching_always(monkeypatch) -> None:
    """``private_run`` with the θ search forced on where the rule fires."""

    def search_plan(rule, *args):
        return ThetaPlan(rule, "search" if isinstance(rule, str) else "configured")

    monkeypatch.setattr(ref, "plan_theta", search_plan)


def test_on_a_fleet_of_250_at_eps_005_the_rule_beats_the_search_it_replaces(monkeypatch):
    # deterministic (fixed graph and run seeds); the grid measured the forced search at
    # 12x the rule's summed MAE on calibration (docs/cadr.md): a search winning here means
    # the measurement no longer describes the code
    graph = generate("barabasi_albert", 250, seed=7, m=3)
    seeds = (0, 1, 2)
    rule = [ref.private_run(graph, "ll", "auto-dev", 0.05, 0.1, s, pipeline="dp") for s in seeds]
    assert {run.theta_chosen_by for run in rule} == {"small-fleet"}
    _searching_always(monkeypatch)
    search = [ref.private_run(graph, "ll", "auto-dev", 0.05, 0.1, s, pipeline="dp") for s in seeds]
    assert {run.theta_chosen_by for run in search} == {"search"}
    assert np.mean([r.mae for r in rule]) < np.mean([r.mae for r in search])
