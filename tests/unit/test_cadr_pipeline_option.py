"""The pipeline choice of CADR-LDP: ``[cadr] pipeline`` in a scenario (default "dp") and
``ldpfleet bench cadr --pipeline``."""

from __future__ import annotations

import dataclasses
import json

import msgspec
import pytest
from ldpfleet.app.cli import app
from ldpfleet.scenarios.cadr_run import CadrSettings
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario
from typer.testing import CliRunner

CADR = """
[scenario]
name = "g"
[graph]
source = "barabasi_albert:n=30,m=2,seed=1"
[cadr]
"""


def test_the_scenario_key_defaults_to_dp_and_reaches_the_settings():
    assert parse_scenario(CADR).spec.cadr.pipeline == "dp"
    paper = parse_scenario(CADR + 'pipeline = "paper"\n')
    assert CadrSettings.of_scenario(paper).pipeline == "paper"
    with pytest.raises(ScenarioError, match="pipeline"):
        parse_scenario(CADR + 'pipeline = "fast"\n')


def test_dp_refuses_the_search_by_sum():
    """On load (the file), and by ``CadrSettings`` for a scenario built in code."""
    with pytest.raises(ScenarioError, match=r'cadr\.theta: "auto-sum"'):
        parse_scenario(CADR + 'theta = "auto-sum"\n')
    paper_sum = parse_scenario(CADR + 'theta = "auto-sum"\npipeline = "paper"\n')
    spec = msgspec.structs.replace(
        paper_sum.spec, cadr=msgspec.structs.replace(paper_sum.spec.cadr, pipeline="dp")
    )
    dp_sum = dataclasses.replace(paper_sum, spec=spec)
    with pytest.raises(ValueError, match="auto-sum"):
        CadrSettings.of_scenario(dp_sum)


def _bench_cadr_json(args: list[str], option: str, values: tuple[str, ...]) -> list[dict]:
    """``ldpfleet bench cadr *args option value``'s JSON for each value."""
    outputs = []
    for value in values:
        result = CliRunner().invoke(app, [*args, option, value])
        assert result.exit_code == 0, result.output
        outputs.append(json.loads(result.output))
    return outputs


def test_bench_cadr_runs_either_pipeline_and_prints_the_baselines():
    args = ["bench", "cadr", "--graph", "barabasi_albert:n=120,m=3,seed=2", "--runs", "1"]
    dp, paper = _bench_cadr_json(args, "--pipeline", ("dp", "paper"))
    assert dp["pipeline"] == "dp" and dp["mae"] == dp["postprocessed"]["mae"]
    assert paper["pipeline"] == "paper" and paper["mae"] == paper["raw"]["mae"]
    # ``spent`` by budget part (the θ search named), the mechanism labels beside it
    assert "theta" in dp["spent"] and "theta" not in paper["spent"]
    assert (
        "geometric" in dp["spent_by_mechanism"] and "geometric" not in paper["spent_by_mechanism"]
    )
    assert set(dp["baselines"]) == {"constant_median_oracle", "all_zero"}
    bad = CliRunner().invoke(app, [*args, "--pipeline", "fast"])
    assert bad.exit_code != 0 and "--pipeline" in bad.output


def test_bench_cadr_prints_the_same_budget_and_theta_search_keys_on_every_transport():
    """The reference bench keyed ``spent`` by mechanism label (geometric, ...) and the fleet
    bench by budget part (theta, ...); its ``theta_search`` was a dict here, a list of
    per-run dicts there. Now both: ``spent`` by part, ``spent_by_mechanism``, and one
    ``theta_search`` dict (the fleet adds its survivors and counts' error per run)."""
    for method, parts in (("ll", {"theta", "ndoe", "lpea", "dsr"}), ("auto", {"theta", "dsr"})):
        args = ["bench", "cadr", "--graph", "barabasi_albert:n=60,m=2,seed=3", "--runs", "2"]
        _same_keys_on_both_transports([*args, "--method", method], parts)


def _same_keys_on_both_transports(args: list[str], parts: set[str]) -> None:
    """The check above for one method (auto = the default clip: no NDOE/LPEA parts)."""
    reference, fleet = _bench_cadr_json(args, "--transport", ("reference", "memory"))
    assert reference["spent"] == pytest.approx(fleet["spent"])
    assert set(fleet["spent"]) == parts
    assert reference["spent_by_mechanism"] == pytest.approx(fleet["spent_by_mechanism"])
    shared = {"eps", "mechanism", "noise_parties", "theta_exact", "thetas"}
    assert shared <= set(reference["theta_search"]) and shared <= set(fleet["theta_search"])
    for bench in (reference, fleet):
        assert len(bench["theta_search"]["thetas"]) == 2
        assert sorted(set(bench["theta_search"]["thetas"])) == bench["theta"]
    assert len(fleet["theta_search"]["survivors"]) == 2


def test_bench_cadr_refuses_zero_runs_instead_of_printing_nan():
    """``--runs 0`` averaged nothing and printed ``"mae": NaN`` (not JSON)."""
    args = ["bench", "cadr", "--graph", "barabasi_albert:n=30,m=2,seed=1", "--runs", "0"]
    bad = CliRunner().invoke(app, args)
    assert bad.exit_code == 2, bad.output
    assert "--runs must be an integer >= 1, got 0" in bad.output and "NaN" not in bad.output


def test_bench_cadr_takes_the_scenario_budget_range():
    """``--eps 60`` ran where a scenario's ``[cadr] eps`` stops at 50; the sweep too."""
    base = ["bench", "cadr", "--graph", "barabasi_albert:n=30,m=2,seed=1", "--runs", "1"]
    for option, value, sentence in (
        ("--eps", "60", "--eps must be in [0.001, 50], got 60.0"),
        ("--eps", "0", "--eps must be in [0.001, 50], got 0.0"),
        ("--alpha", "1", "--alpha must be in (0, 1), got 1.0"),
    ):
        bad = CliRunner().invoke(app, [*base, option, value])
        assert bad.exit_code == 2 and sentence in bad.output, bad.output
    sweep = CliRunner().invoke(app, ["bench", "cadr-sweep", "--eps-list", "1,60"])
    assert sweep.exit_code != 0 and "[0.001, 50]" in sweep.output, sweep.output


def test_bench_cadr_and_the_sweep_refuse_a_budget_below_the_run_range():
    """``--eps 1e-300`` with a given θ died in thm35_bound (an untyped ZeroDivisionError)."""
    base = ["bench", "cadr", "--graph", "barabasi_albert:n=30,m=2,seed=1", "--runs", "1"]
    bad = CliRunner().invoke(app, [*base, "--theta", "5", "--eps", "1e-300"])
    assert bad.exit_code == 2 and "--eps must be in [0.001, 50], got 1e-300" in bad.output, (
        bad.output
    )
    sweep = CliRunner().invoke(app, ["bench", "cadr-sweep", "--eps-list", "1,1e-300"])
    assert sweep.exit_code != 0 and "[0.001, 50]" in sweep.output, sweep.output
