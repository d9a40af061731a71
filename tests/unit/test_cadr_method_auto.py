"""The default CADR method: ``"auto"`` in a scenario's ``[cadr]`` and in ``bench cadr``
resolves to "clip" under the dp pipeline (no negotiation: the whole view is ε-node-LDP;
docs/preregistration/V-clip-default.md passed) and to "ll" (the paper's LPEA-LOW) under
"paper"; an explicit method is kept as given."""

from __future__ import annotations

import json

import pytest
from ldpfleet.app.cli import app
from ldpfleet.protocol.cadr_budget import resolve_method
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.cadr_run import CadrSettings
from ldpfleet.scenarios.schema import load_scenario, parse_scenario
from typer.testing import CliRunner

SCENARIO = """
[scenario]
name = "auto-method"
seed = 0

[graph]
source = "barabasi_albert:n=60,m=2,seed=1"

[cadr]
eps = 3.0
{extra}
"""


def test_auto_resolves_per_pipeline_and_explicit_methods_stay():
    assert resolve_method("auto", "dp") == "clip"
    assert resolve_method("auto", "paper") == "ll"
    for method in ("ll", "lh", "ra", "clip", "er"):
        assert resolve_method(method, "dp") == method
        assert resolve_method(method, "paper") == method


def test_auto_with_an_unknown_pipeline_is_a_typed_error():
    with pytest.raises(ParameterError) as caught:
        resolve_method("auto", "fast")
    assert (caught.value.field, caught.value.value) == ("pipeline", "fast")


@pytest.mark.parametrize(
    ("extra", "method"),
    [
        ("", "clip"),
        ('pipeline = "paper"', "ll"),
        ('method = "ll"', "ll"),
        ('method = "lh"\npipeline = "paper"', "lh"),
    ],
)
def test_a_scenario_without_a_method_runs_the_pipelines_default(extra, method):
    loaded = parse_scenario(SCENARIO.format(extra=extra))
    assert loaded.spec.cadr.method in ("auto", method)
    assert CadrSettings.of_scenario(loaded).method == method


def test_the_shipped_facebook_scenario_runs_clip():
    assert CadrSettings.of_scenario(load_scenario("facebook-degrees")).method == "clip"


def test_settings_resolve_auto_for_library_callers_too():
    assert CadrSettings(method="auto").method == "clip"
    assert CadrSettings(method="auto", pipeline="paper").method == "ll"


@pytest.mark.parametrize(
    ("args", "method", "parts"),
    [
        ([], "clip", {"theta", "dsr"}),
        (["--pipeline", "paper"], "ll", {"ndoe", "lpea", "dsr"}),
        (["--method", "ll"], "ll", {"theta", "ndoe", "lpea", "dsr"}),
    ],
)
def test_bench_cadr_default_method(args, method, parts):
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "cadr",
            "--graph",
            "barabasi_albert:n=120,m=3",
            "--eps",
            "3",
            "--runs",
            "1",
            *args,
        ],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["method"] == method
    assert set(out["spent"]) == parts
    assert sum(out["spent"].values()) == pytest.approx(3.0)


def test_bench_cadr_non_private_default_measures_ll():
    result = CliRunner().invoke(
        app,
        ["bench", "cadr", "--graph", "barabasi_albert:n=80,m=3", "--theta", "8", "--non-private"],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["method"] == "ll"


def test_bench_cadr_refuses_an_unknown_method_with_exit_2():
    result = CliRunner().invoke(app, ["bench", "cadr", "--method", "fast", "--runs", "1"])
    assert result.exit_code == 2
    assert "auto, ll, lh, ra, er, clip" in result.output
