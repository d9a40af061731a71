"""A fleet θ search over more devices than one secure-sum session takes (issue 20, helper
N's odd-graph battery, scripts/N_odd_graphs.py).

The dp pipeline's θ search is ONE secure sum over every device; a session takes at most
``MAX_PARTICIPANTS`` (10,000) devices (``protocol.secagg.server``). A 19,946-node sparse
graph went through ``bench cadr --transport memory`` (43.7 s) and ``ldpfleet run`` (63.8 s)
connecting every device before the secure sum refused with ``devices: need 2..10000
devices, got 19946`` — a sentence naming neither the θ search nor a way out, after a minute
(the in-process reference releases the same graph in 2.9 s). The refusal belongs before any
device starts, like the other typed refusals of ``run_cadr_fleet`` (θ above D, ...), and
when the scenario loads. A given θ searches nothing, so it is not refused.

Without the fix (/tmp/N-fleet-size.diff against main, scenarios/cadr_run.py) the run opens
the broker (the test's stand-in raises) and fails only inside the secure sum."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from ldpfleet.devices.graphs import Graph
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.secagg.messages import MAX_PARTICIPANTS
from ldpfleet.scenarios import cadr_run


def _path_graph(n: int) -> Graph:
    """A path on ``n`` nodes: every degree 1 or 2."""
    nodes = np.arange(n - 1)
    return Graph.from_edges(n, nodes, nodes + 1)


@contextlib.asynccontextmanager
async def _no_broker(_broker):
    """``open_broker``'s stand-in: a refused run must never get here."""
    raise AssertionError("the run opened a broker before refusing")
    yield  # pragma: no cover


async def test_a_theta_search_over_more_devices_than_a_session_is_refused_before_any_start(
    monkeypatch,
):
    monkeypatch.setattr(cadr_run, "open_broker", _no_broker)
    graph = _path_graph(MAX_PARTICIPANTS + 1)
    with pytest.raises(ParameterError) as refused:
        await cadr_run.run_cadr_fleet(graph, method="auto", theta="auto-dev", eps=1.0)
    error = refused.value
    assert error.field == "devices" and error.value == MAX_PARTICIPANTS + 1
    assert f"{MAX_PARTICIPANTS:,}" in str(error.limit)
    assert "theta" in error.reason and "θ search" in error.reason  # names the way out


def test_the_scenario_is_refused_when_it_loads(tmp_path):
    from ldpfleet.scenarios.schema import ScenarioError, load_scenario

    edges = tmp_path / "path.txt"
    edges.write_text("".join(f"{i} {i + 1}\n" for i in range(MAX_PARTICIPANTS)))
    scenario = tmp_path / "big.toml"
    scenario.write_text(
        f'[scenario]\nname = "big"\n[graph]\nsource = "{edges}"\n'
        '[cadr]\neps = 1.0\n[broker]\nurl = "memory"\n'
    )
    with pytest.raises(ScenarioError, match="θ search"):
        cadr_run.load_scenario_graph(load_scenario(scenario))


async def test_a_given_theta_searches_nothing_and_is_not_refused_for_its_size(monkeypatch):
    """The refusal is the θ search's: a given θ (no secure sum) reaches the broker."""
    monkeypatch.setattr(cadr_run, "open_broker", _no_broker)
    graph = _path_graph(MAX_PARTICIPANTS + 1)
    with pytest.raises(AssertionError, match="opened a broker"):
        await cadr_run.run_cadr_fleet(graph, method="auto", theta=2, eps=1.0)


async def test_a_search_at_the_session_limit_is_not_refused_for_its_size(monkeypatch):
    monkeypatch.setattr(cadr_run, "open_broker", _no_broker)
    graph = _path_graph(MAX_PARTICIPANTS)
    with pytest.raises(AssertionError, match="opened a broker"):
        await cadr_run.run_cadr_fleet(graph, method="auto", theta="auto-dev", eps=1.0)
