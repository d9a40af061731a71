"""CADR-LDP end to end over a transport: ``CadrDevice`` agents, the batching relay and the
collector (θ search by secure aggregation, NDOE, LPEA, DSR) — on the in-memory transport,
with shuffled delivery, and on the embedded amqtt broker and Mosquitto. The same seed gives
the same release everywhere (the relay's barrier fixes each device's input order)."""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3

import numpy as np
import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.degree_postprocess import (
    degree_prior,
    histogram_prior,
    noise_weight,
    post_process,
    score,
)
from ldpfleet.collector.theta_search import deviation_target, local_error, theta_by_deviation
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_budget import THETA_FRACTION, CadrBudget
from ldpfleet.protocol.cadr_messages import DsrReport
from ldpfleet.protocol.cadr_theta_noise import (
    bucket_count,
    bucket_grid,
    counts_above,
    theta_from_counts,
)
from ldpfleet.protocol.lpea import PADDED_ROUNDS
from ldpfleet.scenarios.cadr_run import run_cadr_fleet
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario
from msgspec import UNSET

from tests.virtual_time import VirtualTimeLoop

GRAPH = generate("barabasi_albert", 40, seed=5, m=3)
EPS_DSR = 0.9 * 3.0


async def test_fleet_run_on_memory_matches_the_exact_searches_and_keeps_every_promise():
    result = await run_cadr_fleet(GRAPH, theta="auto-dev", seed=3, pipeline="paper")
    degrees = GRAPH.degrees()
    expected, rounds = theta_by_deviation(
        1, int(degrees.max()), lambda t: int(np.sum(degrees > t)), GRAPH.n, EPS_DSR
    )
    assert (result["theta"], result["theta_rounds"]) == (expected, rounds)
    assert result["ledger_exact"] and result["ledger_min"] == pytest.approx(3.0)
    assert result["max_kept_degree"] <= result["theta"]
    assert len(result["released"]) == GRAPH.n and sum(result["histogram"]) == GRAPH.n
    assert result["refused_by_devices"] == 0 and result["rejected_by_collector"] == 0
    assert result["lpea_round_cap"] == PADDED_ROUNDS and result["device_messages_up"] > 0
    device = result["per_device"]["n0000"]
    assert device["degree"] == degrees[0] and device["thm35_bound"] > 0
    assert 0.9 <= result["bound_holds"] <= 1.0  # the bound's V_i term is a variance: loose
    # "paper": the raw DSR value is the release, so both per-device errors are its error
    assert device["abs_error"] == device["raw_abs_error"] == abs(degrees[0] - device["released"])
    assert "estimate" not in device


async def test_an_ra_run_states_the_budget_its_ledgers_charge():
    """RA runs no NDOE: results.json's ``budget`` (``bench cadr``'s fleet ``spent``) listed
    ``ndoe`` = αε/2 all the same, summing to ε while every ledger holds (1 - α/2)ε."""
    graph = generate("barabasi_albert", 12, seed=1, m=2)
    result = await run_cadr_fleet(graph, method="ra", theta=2, seed=1)
    assert "ndoe" not in result["budget"] and set(result["budget"]) == {"lpea", "dsr"}
    charged = sum(result["budget"].values())
    assert charged == pytest.approx(result["ledger_max"]) == pytest.approx(0.95 * 3.0)


async def test_dp_pipeline_searches_theta_privately_and_releases_the_post_processed_sequence():
    result = await run_cadr_fleet(GRAPH, theta="auto-dev", seed=3)  # pipeline "dp"
    degrees = GRAPH.degrees()
    (query,) = result["theta_queries"]  # one secure sum of noisy bucket counts
    thresholds = query["thresholds"]
    # 40 devices (a mid-size fleet): the θ search takes min(ε/2, 1.5, 1200/n) = 1.5
    budget = CadrBudget.for_pipeline(3.0, 0.1, "dp", True, GRAPH.n)
    assert budget.theta_fraction == THETA_FRACTION and budget.theta == pytest.approx(1.5)
    eps_dsr = budget.dsr
    # the public degree bound is n - 1 (not the graph's maximum degree, which is private)
    bound = GRAPH.n - 1
    assert (result["degree_bound"], result["degree_bound_source"]) == (bound, "devices")
    assert bound > degrees.max()
    assert thresholds == bucket_grid(bound, bucket_count(GRAPH.n, budget.theta))
    assert query["counts"] == counts_above(query["bucket_sums"]).tolist()
    target = deviation_target(GRAPH.n, eps_dsr, noise_weight(eps_dsr))
    expected = theta_from_counts(thresholds, np.array(query["counts"]), target, bound)
    assert result["pipeline"] == "dp" and result["theta"] == expected
    assert result["budget"] == budget.as_dict() and result["budget"]["theta"] > 0
    search = result["theta_search"]
    assert search["eps"] == budget.theta and search["noise_parties"] == 36  # ceil(0.9 * 40)
    assert result["ledger_exact"]  # θ + NDOE + LPEA + DSR = eps in every ledger
    claim = result["privacy_claim"]  # part by part; uncovered: the peer graph (the
    # collector side reads every up/peer_batch, privacy review V2) and the phases' timing
    assert claim["charged_total"] == pytest.approx(3.0) and len(claim["not_covered"]) == 2
    for ledger in result["ledgers"].values():
        assert ledger["accounts"]["node"]["charges"] == 4  # θ search, NDOE, LPEA, DSR
    names = list(result["per_device"])
    released = [result["released"][name] for name in names]
    prior = degree_prior(query["bucket_sums"], thresholds, bound, GRAPH.n)
    # the released histogram reads the same counts by boot (docs/cadr.md)
    hist = histogram_prior(query["bucket_sums"], thresholds, bound, GRAPH.n, budget.theta, 36)
    post = post_process(released, result["theta"], eps_dsr, prior, hist)  # the collector's
    assert [result["per_device"][name]["estimate"] for name in names] == post.estimates.tolist()
    assert result["estimate_histogram"] == post.histogram.tolist()
    assert result["mae"] == score(degrees, post.estimates, post.histogram)["mae"]
    assert result["raw"]["mae"] == pytest.approx(np.mean(np.abs(degrees - released)))
    assert set(result["baselines"]) == {"constant_median_oracle", "all_zero"}
    # per device: abs_error is the released estimate's error (what mae averages),
    # raw_abs_error the raw DSR value's (what raw.mae averages); abs_error was the raw one
    rows = [result["per_device"][name] for name in names]
    assert [r["abs_error"] for r in rows] == [abs(r["degree"] - r["estimate"]) for r in rows]
    assert [r["raw_abs_error"] for r in rows] == [abs(r["degree"] - r["released"]) for r in rows]
    assert np.mean([r["abs_error"] for r in rows]) == pytest.approx(result["mae"])
    assert np.mean([r["raw_abs_error"] for r in rows]) == pytest.approx(result["raw"]["mae"])


async def test_search_by_sum_picks_the_minimum_of_the_summed_local_errors():
    result = await run_cadr_fleet(GRAPH, theta="auto-sum", seed=1, pipeline="paper")
    degrees = GRAPH.degrees()
    totals = {
        t: sum(local_error(int(d), t, EPS_DSR) for d in degrees)
        for t in range(1, int(degrees.max()) + 1)
    }
    # fixed point at 2^-16 per device: the chosen θ's exact total is within n * 2^-16 of
    # the minimum (it IS the minimum unless two totals are that close)
    assert totals[result["theta"]] - min(totals.values()) <= GRAPH.n * 2.0**-16
    assert result["theta_rounds"] == 1


async def test_shuffled_delivery_gives_the_same_release():
    plain = await run_cadr_fleet(GRAPH, theta=4, seed=11)
    rng = random.Random(0)
    shuffled_transport = MemoryTransport(delay=lambda topic, payload, client: rng.uniform(0, 0.003))
    shuffled = await run_cadr_fleet(GRAPH, broker=shuffled_transport, theta=4, seed=11)
    assert shuffled["released"] == plain["released"]
    assert shuffled["kept_edge_ratio"] == plain["kept_edge_ratio"]


async def test_forged_and_malformed_traffic_is_refused_and_the_run_completes():
    transport = MemoryTransport()
    run = "cadr-forged"

    async def attacker():
        async with transport.connect("mallory") as conn:
            await asyncio.sleep(0)
            for _ in range(200):  # until the fleet is busy; the relay/collector refuse all
                await conn.publish(topics.up(run, "n0001", "peer_batch"), b"{not json")
                forged = DsrReport(run=run, sender="n0002", value=1e9, theta=3, eps=1.0)
                await conn.publish(topics.up(run, "n0002", "dsr"), codec.encode(forged))
                await asyncio.sleep(0.001)

    task = asyncio.create_task(attacker())
    result = await run_cadr_fleet(GRAPH, broker=transport, theta=3, seed=2, run=run)
    await task
    honest = await run_cadr_fleet(GRAPH, theta=3, seed=2)
    assert result["released"] == honest["released"]  # nothing forged was aggregated


async def test_embedded_broker_gives_the_memory_release(embedded_url):
    graph = generate("barabasi_albert", 25, seed=2, m=2)
    memory = await run_cadr_fleet(graph, theta="auto-dev", seed=4)
    embedded = await run_cadr_fleet(graph, broker=embedded_url, theta="auto-dev", seed=4)
    assert embedded["broker"] == "mqtt" and embedded["released"] == memory["released"]
    assert embedded["theta"] == memory["theta"]


async def test_mosquitto_gives_the_memory_release(mosquitto_url):
    memory = await run_cadr_fleet(GRAPH, theta="auto-dev", seed=6, method="lh")
    mosquitto = await run_cadr_fleet(
        GRAPH, broker=mosquitto_url, theta="auto-dev", seed=6, method="lh"
    )
    assert mosquitto["released"] == memory["released"]
    assert mosquitto["ledger_exact"]


SCENARIO = """
[scenario]
name = "tiny-degrees"
seed = 3
[graph]
source = "barabasi_albert:n=30,m=2,seed=1"
[cadr]
# the negotiated method: these tests check the relay phases (padding, deadline, counts);
# the default method clip runs none (tests/e2e/test_P_clip_fleet.py)
method = "ll"
theta = "auto-dev"
[broker]
url = "memory"
"""


async def test_a_cadr_scenario_writes_results_ledgers_releases_and_a_control_trace(tmp_path):
    results = await run_scenario(parse_scenario(SCENARIO), out_dir=tmp_path)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["devices"] == 30 and saved["theta"] == results["theta"]
    ledgers = json.loads((tmp_path / "ledger.json").read_text())
    assert ledgers.pop("run") == saved["run"]  # the ledgers name their run
    assert len(ledgers) == 30
    assert all(abs(doc["accounts"]["node"]["spent"] - 3.0) < 1e-9 for doc in ledgers.values())
    with sqlite3.connect(tmp_path / "collector.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM reports").fetchone()[0] == 30
    with sqlite3.connect(tmp_path / "trace.sqlite") as db:
        kinds = dict(db.execute("SELECT kind, COUNT(*) FROM messages GROUP BY kind").fetchall())
    assert kinds["degree_release"] == 1 and kinds["cadr_theta"] == 1 and kinds["cadr_plan"] == 1
    assert "peer_batch" not in kinds and "dsr_report" not in kinds
    _assert_no_relay_count(saved, tmp_path / "trace.sqlite")


# what the relay counts (rounds, supersteps, items, batches, edges added per round) depends
# on every device's list and stays with the relay; a key or a trace row that brings one
# back to the collector's results or trace fails here
RELAY_COUNT_WORDS = ("round", "superstep", "item", "batch", "added")


def _assert_no_relay_count(results: dict, trace: object, overran: object = UNSET) -> None:
    counting = [k for k in results if any(w in k for w in RELAY_COUNT_WORDS)]
    # theta_rounds: the collector's own secure sums (1 for the dp search); the round cap is
    # the collector's public request
    assert set(counting) <= {"theta_rounds", "lpea_round_cap"}, counting
    assert results["lpea_round_cap"] == PADDED_ROUNDS
    with sqlite3.connect(trace) as db:
        rows = db.execute("SELECT kind, payload FROM messages").fetchall()
    kinds = {kind for kind, _ in rows}
    assert "peer_step" not in kinds  # one per round: their number counts the rounds
    reports = [codec.decode(payload) for kind, payload in rows if kind == "phase_report"]
    assert [(r.phase, r.ok, r.seq) for r in reports] == [("ndoe", True, 1), ("lpea", True, 2)]
    for report in reports:
        fields = {f for f in report.__struct_fields__ if f not in ("v", "run", "sender", "seq")}
        # overran: whether the public deadline held (absent without one: UNSET)
        assert fields == {"phase", "ok", "max_rounds", "detail", "overran"}
        assert report.overran is overran


async def test_two_processes_on_mosquitto_give_the_memory_release(mosquitto_url):
    spec = "barabasi_albert:n=40,m=3,seed=5"  # = GRAPH
    memory = await run_cadr_fleet(GRAPH, theta=5, seed=9)
    split = await run_cadr_fleet(
        GRAPH, broker=mosquitto_url, theta=5, seed=9, processes=2, graph_spec=spec
    )
    assert split["processes"] == 2 and split["released"] == memory["released"]
    assert split["ledger_exact"] and split["kept_edge_ratio"] == memory["kept_edge_ratio"]


def test_the_cli_reports_each_cadr_stage_as_it_completes_and_writes_the_report(tmp_path):
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    scenario = tmp_path / "tiny.toml"
    scenario.write_text(SCENARIO)
    result = CliRunner().invoke(app, ["run", str(scenario), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    done = [line for line in result.output.splitlines() if "✓ stage" in line]
    # one line per stage, in the order the run went through them
    assert [line.split("stage ", 1)[1].split(":")[0] for line in done] == list(
        saved["stage_seconds"]
    )
    page = (tmp_path / "out" / "report.html").read_text()
    assert "CADR-LDP degree release" in page and "<img" in page
    # the release beside the trivial baselines (app.cadr_report), the pipeline named
    assert "Release against knowing nothing (pipeline dp)" in page
    assert "constant true median" in page and "(non-private oracle)" in page


def test_a_public_deadline_holds_each_relay_phase_and_covers_the_timing(tmp_path):
    # Issue 20: with [cadr] peer_deadline_seconds the relay ends no phase (NDOE, LPEA)
    # before the deadline, the reports say the deadline held, and the claim covers the
    # timing. The release is the one without the deadline, value for value.
    # On virtual time (the run is wholly in the loop: memory broker): on the real clock a
    # phase's work had to end within the 1 s deadline, and LPEA took 0.53 s at load 25 (a
    # 2x margin): with each loop callback 10 ms late the claim said the timing "overran".
    # Here the work takes no time and the run's clock advances only by what waits on a
    # timer, so the two held phases show as 2 deadlines of the run's time (the lower
    # bound the collector's wall-clock stage_seconds showed before).
    deadline = 1.0
    timed = SCENARIO.replace(
        'theta = "auto-dev"', f'theta = "auto-dev"\npeer_deadline_seconds = {deadline}'
    )

    async def timed_run() -> float:
        await run_scenario(parse_scenario(timed), out_dir=tmp_path / "timed")
        return asyncio.get_running_loop().time()

    seconds = VirtualTimeLoop.run(timed_run())
    asyncio.run(run_scenario(parse_scenario(SCENARIO), out_dir=tmp_path / "plain"))
    saved = json.loads((tmp_path / "timed" / "results.json").read_text())
    plain = json.loads((tmp_path / "plain" / "results.json").read_text())
    assert saved["released"] == plain["released"]
    assert seconds >= 2 * deadline  # NDOE and LPEA each held to the deadline
    claim = saved["privacy_claim"]
    (timing,) = [p for p in claim["parts"] if "timing" in p["part"]]
    assert timing["covered"] == "yes" and timing["deadline_seconds"] == deadline
    assert "held to the public deadline 1 s" in timing["note"]
    assert timing["part"] not in claim["not_covered"]
    # the one part left: the peer graph the collector side can read (privacy review V2)
    assert "1 uncovered part(s): peer graph" in claim["statement"]
    (off,) = [p for p in plain["privacy_claim"]["parts"] if "timing" in p["part"]]
    assert off["covered"] == "no" and off["part"] in plain["privacy_claim"]["not_covered"]
    _assert_no_relay_count(saved, tmp_path / "timed" / "trace.sqlite", overran=False)


async def test_a_phase_that_overruns_the_deadline_is_named_in_the_claim():
    # One device's NDOE batch is delayed 1 s on the way to the relay, so the NDOE phase
    # cannot end before 1 s > the 0.5 s deadline (a lower bound set by the delay, not by
    # the machine's speed): the relay reports it overran, the claim names the timing
    # part uncovered with the phase and the seconds past the deadline; same release.
    def late_ndoe(topic: str, payload: bytes, client: str) -> float:
        slow = topic.endswith("/n0001/up/peer_batch") and b'"phase":"ndoe"' in payload
        return 1.0 if slow else 0.0

    timed = await run_cadr_fleet(
        GRAPH, broker=MemoryTransport(delay=late_ndoe), theta=3, seed=2, peer_deadline=0.5
    )
    plain = await run_cadr_fleet(GRAPH, theta=3, seed=2)
    assert timed["released"] == plain["released"]
    claim = timed["privacy_claim"]
    (timing,) = [p for p in claim["parts"] if "timing" in p["part"]]
    assert timing["covered"] == "no" and timing["part"] in claim["not_covered"]
    assert timing["overran_seconds"]["ndoe"] >= 0.5
    assert "overran the public deadline of 0.5 s" in timing["note"] and "ndoe by" in timing["note"]


async def test_a_configured_degree_bound_below_the_maximum_clips_and_is_stated():
    # the operator's public D = 5 < the graph's maximum degree: every device clips its
    # degree to D (θ search bucket, NDOE score, θ <= D), the run completes, and the claim
    # names D as configured, covered; "graph-max" is named as not covered
    degrees = GRAPH.degrees()
    assert degrees.max() > 5
    result = await run_cadr_fleet(GRAPH, theta="auto-dev", seed=3, degree_bound=5)
    assert (result["degree_bound"], result["degree_bound_source"]) == (5, "configured")
    (query,) = result["theta_queries"]
    assert max(query["thresholds"]) <= 5 and 1 <= result["theta"] <= 5
    assert result["max_kept_degree"] <= result["theta"] and result["ledger_exact"]
    assert result["refused_by_devices"] == 0 and result["rejected_by_collector"] == 0
    stated = [p for p in result["privacy_claim"]["parts"] if p["part"].startswith("degree")]
    assert [(p["part"], p["covered"]) for p in stated] == [
        ("degree bound D = 5 (configured)", "yes")
    ]
    leaked = await run_cadr_fleet(GRAPH, theta="auto-dev", seed=3, degree_bound="graph-max")
    assert leaked["degree_bound"] == int(degrees.max())
    assert (
        f"degree bound D = {int(degrees.max())} (graph-max)"
        in (leaked["privacy_claim"]["not_covered"])
    )
