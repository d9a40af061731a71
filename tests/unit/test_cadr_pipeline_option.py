"""The pipeline choice of CADR-LDP: ``[cadr] pipeline`` in a scenario (default "dp") and
``ldpfleet bench cadr --pipeline``."""

from __future__ import annotations

import json

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
    dp_sum = parse_scenario(CADR + 'theta = "auto-sum"\n')
    with pytest.raises(ValueError, match="auto-sum"):
        CadrSettings.of_scenario(dp_sum)


def test_bench_cadr_runs_either_pipeline_and_prints_the_baselines():
    args = ["bench", "cadr", "--graph", "barabasi_albert:n=120,m=3,seed=2", "--runs", "1"]
    outputs = {}
    for pipeline in ("dp", "paper"):
        result = CliRunner().invoke(app, [*args, "--pipeline", pipeline])
        assert result.exit_code == 0, result.output
        outputs[pipeline] = json.loads(result.output)
    dp, paper = outputs["dp"], outputs["paper"]
    assert dp["pipeline"] == "dp" and dp["mae"] == dp["postprocessed"]["mae"]
    assert paper["pipeline"] == "paper" and paper["mae"] == paper["raw"]["mae"]
    assert "geometric" in dp["spent"] and "geometric" not in paper["spent"]
    assert set(dp["baselines"]) == {"constant_median_oracle", "all_zero"}
    bad = CliRunner().invoke(app, [*args, "--pipeline", "fast"])
    assert bad.exit_code != 0 and "--pipeline" in bad.output


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
        ("--eps", "60", "--eps must be in (0, 50], got 60.0"),
        ("--eps", "0", "--eps must be in (0, 50], got 0.0"),
        ("--alpha", "1", "--alpha must be in (0, 1), got 1.0"),
    ):
        bad = CliRunner().invoke(app, [*base, option, value])
        assert bad.exit_code == 2 and sentence in bad.output, bad.output
    sweep = CliRunner().invoke(app, ["bench", "cadr-sweep", "--eps-list", "1,60"])
    assert sweep.exit_code != 0 and "(0, 50]" in sweep.output, sweep.output
