"""A CADR run warns where its release cannot place the fleet (issue 20; helper E's
measurement, docs/cadr.md "Small ε"): ``fleet_signal = ε_DSR · √(n / 2)`` below 1 means the
noise on the mean of the n released values exceeds θ, whatever θ is."""

import json
import math

import pytest
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol.cadr_budget import CadrBudget, fleet_signal, release_warnings
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.cadr_run import run_cadr_fleet


def test_fleet_signal_is_the_mean_noise_against_theta():
    # sd of the mean of n Laplace(θ/ε) values is √2·θ/(ε·√n); signal 1 is sd = θ
    for eps_dsr, n in ((0.01, 100), (0.3, 50), (2.0, 4039)):
        sd_over_theta = math.sqrt(2) / (eps_dsr * math.sqrt(n))
        assert fleet_signal(eps_dsr, n) == pytest.approx(1 / sd_over_theta)
    assert release_warnings(0.1, 199) != [] and release_warnings(0.1, 201) == []
    with pytest.raises(ParameterError, match="eps_dsr"):
        fleet_signal(0.0, 10)
    with pytest.raises(ParameterError, match="devices"):
        fleet_signal(1.0, 0)


def test_the_warning_names_the_figures():
    (sentence,) = release_warnings(0.02, 1000)
    assert "eps_dsr = 0.02" in sentence and "1,000 devices" in sentence
    assert "0.447 < 1" in sentence and "baselines" in sentence


@pytest.mark.parametrize(("eps", "warned"), [(0.02, True), (3.0, False)])
async def test_a_fleet_run_carries_the_warning_in_results(eps, warned):
    graph = generate("erdos_renyi", 15, seed=4, p=0.3)
    result = await run_cadr_fleet(graph, theta="auto-dev", seed=5, eps=eps)
    dsr = CadrBudget.for_pipeline(eps, 0.1, "dp", False, graph.n).dsr
    assert result["budget"]["dsr"] == pytest.approx(dsr)
    assert result["warnings"] == release_warnings(dsr, graph.n)
    assert bool(result["warnings"]) is warned


def test_the_report_shows_the_warning_beside_the_baselines():
    from ldpfleet.app.cadr_report import release_vs_baselines

    row = {"mae": 1.0, "mse": 2.0, "histogram_l1": 0.5, "histogram_emd": 0.5}
    results = {
        "pipeline": "dp", "raw": row, "postprocessed": row,
        "baselines": {"constant_median_oracle": {**row, "value": 3}, "all_zero": row},
        "warnings": release_warnings(0.02, 1000),
    }  # fmt: skip
    page = release_vs_baselines(results)
    assert 'class="bad">warning: at eps_dsr = 0.02 over 1,000 devices' in page
    assert "warning:" not in release_vs_baselines({**results, "warnings": []})


@pytest.mark.parametrize("transport", ["reference", "memory"])
@pytest.mark.parametrize(("eps", "warned"), [(0.02, True), (3.0, False)])
def test_bench_cadr_json_carries_the_warning(transport, eps, warned):
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    args = ["bench", "cadr", "--graph", "erdos_renyi:n=15,p=0.3,seed=4", "--runs", "1"]
    out = CliRunner().invoke(app, [*args, "--eps", str(eps), "--transport", transport])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output.strip().splitlines()[-1])
    assert result["warnings"] == release_warnings(result["spent"]["dsr"], 15)
    assert bool(result["warnings"]) is warned


def test_after_a_theta_search_the_warning_names_the_counts_not_a_guess():
    (searched,) = release_warnings(0.02, 1000, searched=True)
    (unsearched,) = release_warnings(0.02, 1000)
    assert "theta search's noisy counts" in searched and "data-independent" not in searched
    assert "data-independent guess" in unsearched
    assert searched.startswith("at eps_dsr = 0.02 over 1,000 devices")


@pytest.mark.parametrize("transport", ["reference", "memory"])
def test_a_searched_mid_size_run_warns_about_the_counts_median(transport):
    """n = 80 at ε = 1: the θ search runs (mid-size fleet share) and ε_DSR·√(n/2) < 1."""
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    args = ["bench", "cadr", "--graph", "barabasi_albert:n=80,m=3,seed=4", "--runs", "1"]
    out = CliRunner().invoke(app, [*args, "--eps", "1", "--transport", transport])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output.strip().splitlines()[-1])
    assert result["spent"]["theta"] > 0
    assert result["warnings"] == release_warnings(result["spent"]["dsr"], 80, searched=True)
    assert "theta search's noisy counts" in result["warnings"][0]
