"""CPR through the fleet: the runner's stream stage with ``reconstruct``, its outputs, and
the ``bench cpr`` command."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ldpfleet.app.cli import app
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario
from typer.testing import CliRunner

PERIODIC = """
[scenario]
name = "cpr-e2e"
seed = 2
[fleet]
devices = 12
[stream]
steps = 3000
eps = 5.0
w = 5
batch_steps = 250
reconstruct = "{method}"
[source]
kind = "periodic"
dataset = "music"
bounds = [10.0, 20.0]
"""


async def test_cpr_stage_reports_periods_distances_and_saves_reconstructions(tmp_path):
    scenario = parse_scenario(PERIODIC.format(method="cpr"))
    results = await run_scenario(scenario, broker="memory", out_dir=tmp_path)
    assert results["reports_lost"] == 0
    summary = results["reconstruction"]
    assert summary["method"] == "cpr" and summary["streams"] == 12
    # music cycles (T = 13) at eps0 = 1 with 3,000 steps: measured 100% in the bench
    assert summary["period_accuracy"] >= 11 / 12
    assert summary["mean_cosine_distance"] < 0.1
    for entry in results["per_device"].values():
        assert entry["period_true"] == 13
        assert {
            "period_hat",
            "period_confidence",
            "period_correct",
            "cosine_distance",
        } <= entry.keys()
    saved = np.load(tmp_path / "reconstructions.npz")
    assert len([k for k in saved.files if not k.endswith(".template")]) == 12
    values = saved["d0000"]
    assert values.shape == (3000,) and values.min() >= 10.0 and values.max() <= 20.0
    assert saved["d0000.template"].shape == (results["per_device"]["d0000"]["period_hat"],)
    assert results["stages"]["reconstruct"]["status"] == "ok"
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert on_disk["reconstruction"]["period_accuracy"] == summary["period_accuracy"]


async def test_baseline_reconstruction_and_laplace_devices(tmp_path):
    cpr_free = parse_scenario(PERIODIC.format(method="sw_filter"))
    filtered = await run_scenario(cpr_free, broker="memory", out_dir=tmp_path / "filter")
    assert filtered["reconstruction"]["method"] == "sw_filter"
    assert filtered["per_device"]["d0001"]["period_hat"] is None
    # sw_filter names no period: not scored (it was "period accuracy 0%", every device wrong)
    assert filtered["per_device"]["d0001"]["period_correct"] is None
    assert filtered["reconstruction"]["period_accuracy"] is None
    text = PERIODIC.format(method="laplace").replace(
        'reconstruct = "laplace"', 'reconstruct = "laplace"\nmechanism = "laplace"'
    )
    laplace = await run_scenario(parse_scenario(text), broker="memory", out_dir=tmp_path / "lap")
    assert laplace["reports_lost"] == 0 and laplace["stream"]["mechanism"] == "laplace"
    # on the same streams and budget CPR beats both baselines (seed 003, Fig. 2)
    cpr = await run_scenario(
        parse_scenario(PERIODIC.format(method="cpr")), broker="memory", out_dir=tmp_path / "cpr"
    )
    best = cpr["reconstruction"]["mean_cosine_distance"]
    assert best < filtered["reconstruction"]["mean_cosine_distance"]
    assert best < laplace["reconstruction"]["mean_cosine_distance"]


def test_incompatible_reconstruction_is_a_scenario_error():
    with pytest.raises(ScenarioError, match=r"stream\.reconstruct"):
        parse_scenario(
            PERIODIC.format(method="cpr").replace("w = 5", 'w = 5\nmechanism = "laplace"')
        )


def test_bench_cpr_prints_detection_and_cosine_tables():
    result = CliRunner().invoke(
        app,
        ["bench", "cpr", "--dataset", "synthetic", "--eps", "5", "--w", "5", "--cosine-eps", "5",
         "--trials", "3", "--n", "1500", "--fleet-streams", "0"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["detection"] == [
        {
            "dataset": "synthetic",
            "eps": 5.0,
            "w": 5,
            "accuracy": figures["detection"][0]["accuracy"],
        }
    ]
    methods = {row["method"] for row in figures["cosine"]}
    assert methods == {"cpr", "sw", "sw_moving", "sw_filter", "laplace", "lbd"}
    assert figures["speed"]["cpr_ms_per_stream_10k_median"] > 0
    bad = CliRunner().invoke(app, ["bench", "cpr", "--dataset", "nope"])
    assert bad.exit_code == 2 and "not one of" in bad.output
