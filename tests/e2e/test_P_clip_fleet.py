"""Method clip over a transport (protocol.cadr_budget, "Method clip"): no relay phase, each
device's release is its own ``clip(d, 0, θ) + Laplace`` from its own generator, every
ledger holds ε, results.json names clip and its claim; ``bench cadr --method clip`` on
the reference and the fleet."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ldpfleet.app.cli import app
from ldpfleet.collector.degree_postprocess import post_process, search_priors
from ldpfleet.devices.graphs import Graph, generate
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.protocol.dsr import dsr_release
from ldpfleet.scenarios.cadr_run import run_cadr_fleet
from typer.testing import CliRunner

from tests.conftest import shared_name

GRAPH = generate("barabasi_albert", 40, seed=5, m=3)


def _expected(graph: Graph, theta: int, eps_dsr: float, seed: int) -> dict[str, float]:
    """Device i's release with no θ search: its generator ``[seed, i]``'s first draws."""
    width = max(4, len(str(graph.n - 1)))
    return {
        f"n{i:0{width}d}": float(
            dsr_release(min(int(d), theta), theta, eps_dsr, np.random.default_rng([seed, i]))
        )
        for i, d in enumerate(graph.degrees())
    }


async def test_a_clip_fleet_run_releases_each_devices_own_clipped_degree():
    result = await run_cadr_fleet(GRAPH, method="clip", theta=4, seed=3, pipeline="paper")
    assert result["method"] == "clip" and result["released"] == _expected(GRAPH, 4, 3.0, 3)
    assert result["budget"] == {"dsr": 3.0} and result["ledger_exact"]
    assert result["ledger_min"] == result["ledger_max"] == 3.0
    assert result["lpea_round_cap"] is None and set(result["stage_seconds"]) == {"theta", "dsr"}
    d = GRAPH.degrees()
    assert result["kept_edge_ratio"] == np.minimum(d, 4).sum() / d.sum()
    assert result["max_kept_degree"] == 4
    for ledger in result["ledgers"].values():
        assert ledger["accounts"]["node"]["charges"] == 1  # Laplace only
    assert result["rejected_by_collector"] == 0 and result["refused_by_devices"] == 0


async def test_a_dp_clip_run_charges_lls_theta_part_and_states_the_whole_view_claim():
    result = await run_cadr_fleet(GRAPH, method="clip", theta="auto-dev", seed=3)
    ll = CadrBudget.for_pipeline(3.0, 0.1, "dp", True, GRAPH.n)
    clip = CadrBudget.for_pipeline(3.0, 0.1, "dp", True, GRAPH.n, "clip")
    assert result["budget"] == {"theta": ll.theta, "dsr": clip.dsr} and result["ledger_exact"]
    for ledger in result["ledgers"].values():
        assert ledger["accounts"]["node"]["charges"] == 2  # θ search, Laplace
    claim = result["privacy_claim"]
    assert claim["not_covered"] == [] and "IS ε-node-LDP" in claim["statement"]
    assert not any("LPEA" in p["part"] or "NDOE" in p["part"] for p in claim["parts"])
    # the post-processing knows the kept ratio: 1
    # and reads the DSR values into both readings (helpers T and Y: exact_releases)
    (query,) = result["theta_queries"]
    names = list(result["per_device"])
    values = [result["released"][name] for name in names]
    prior, hist = search_priors(query["bucket_sums"], query["thresholds"], GRAPH.n - 1,
                                query["survivors"], ll.theta, 36,
                                exact_releases=(values, result["theta"], clip.dsr))  # fmt: skip
    post = post_process(values, result["theta"], clip.dsr, prior, hist, known_ratio=1.0)
    assert [result["per_device"][n]["estimate"] for n in names] == post.estimates.tolist()


def _graph(edges: list[tuple[int, int]]) -> Graph:
    u, v = np.array(edges).T
    return Graph.from_edges(7, u, v)


async def test_other_devices_lists_do_not_move_a_devices_release():
    """Node 0 keeps its list; every other edge is rewired: node 0's release is the same
    under the same seed (θ given: no θ search reads the others)."""
    edges = [(0, 1), (0, 2), (0, 3), (1, 2), (3, 4), (4, 5), (5, 6), (2, 6)]
    other = [(0, 1), (0, 2), (0, 3), (1, 4), (1, 5), (1, 6), (2, 5), (4, 6), (3, 6)]
    first = await run_cadr_fleet(_graph(edges), method="clip", theta=3, seed=5)
    second = await run_cadr_fleet(_graph(other), method="clip", theta=3, seed=5)
    assert first["released"]["n0000"] == second["released"]["n0000"]
    assert first["released"] != second["released"]


async def test_the_embedded_broker_gives_the_memory_clip_release(embedded_url):
    graph = generate("barabasi_albert", 25, seed=2, m=2)
    memory = await run_cadr_fleet(graph, method="clip", theta="auto-dev", seed=4)
    embedded = await run_cadr_fleet(
        graph, broker=embedded_url, method="clip", theta="auto-dev", seed=4
    )
    assert embedded["broker"] == "mqtt" and embedded["released"] == memory["released"]


async def test_mosquitto_gives_the_memory_clip_release(mosquitto_url):
    memory = await run_cadr_fleet(GRAPH, method="clip", theta="auto-dev", seed=6)
    mosquitto = await run_cadr_fleet(
        GRAPH, broker=mosquitto_url, method="clip", theta="auto-dev", seed=6,
        run=shared_name(mosquitto_url, "clip-mosquitto"),
    )  # fmt: skip
    assert mosquitto["released"] == memory["released"] and mosquitto["ledger_exact"]
    assert mosquitto["theta"] == memory["theta"]


def _bench(*extra: str) -> dict:
    args = ["bench", "cadr", "--graph", "barabasi_albert:n=60,m=2,seed=3", "--runs", "1"]
    result = CliRunner().invoke(app, [*args, "--method", "clip", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("transport", ["reference", "memory"])
def test_bench_cadr_method_clip_prints_its_budget_without_negotiation(transport):
    bench = _bench("--transport", transport)
    assert bench["method"] == "clip" and set(bench["spent"]) == {"theta", "dsr"}
    assert sum(bench["spent"].values()) == pytest.approx(3.0)
    assert set(bench["spent_by_mechanism"]) == {"geometric", "laplace"}
    assert set(bench["baselines"]) == {"constant_median_oracle", "all_zero"}
    assert bench["mae"] == bench["postprocessed"]["mae"] > 0


def test_bench_cadr_still_refuses_an_unknown_method_and_clip_without_a_projection():
    base = ["bench", "cadr", "--graph", "barabasi_albert:n=30,m=2,seed=1", "--runs", "1"]
    bad = CliRunner().invoke(app, [*base, "--method", "clap"])
    assert bad.exit_code == 2 and "is not one of auto, ll, lh, ra, er, clip" in bad.output
    flat = CliRunner().invoke(app, [*base, "--method", "clip", "--non-private", "--theta", "3"])
    assert flat.exit_code == 2 and "--non-private" in flat.output, flat.output
