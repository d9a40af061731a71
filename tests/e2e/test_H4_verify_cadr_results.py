"""``trace verify`` on a CADR-LDP run's results.json: the figures the signed trace can
recompute (``app/trace_verify_results.py``, ``verify_cadr_results``). Helper H's user
trial (scripts/H_inspect_user.py) found no figure of a CADR-LDP results.json checked:
an edited θ, release or error verified clean."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from ldpfleet.app.cli import app
from ldpfleet.app.trace_verify import verify_run
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario
from typer.testing import CliRunner

CADR = """
[scenario]
name = "h4-degrees"
seed = 2
[graph]
source = "barabasi_albert:n=20,m=2,seed=5"
[cadr]
theta = 3
trace = "{trace}"
[broker]
url = "memory"
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("cadr")

    async def make():
        for trace in ("all", "control"):
            scenario = parse_scenario(CADR.format(trace=trace))
            await run_scenario(scenario, broker="memory", out_dir=base / trace, run_id=f"h4{trace}")

    asyncio.run(make())
    return base


def _edit(runs, kind, tmp_path, key, change):
    target = tmp_path / kind
    shutil.copytree(runs / kind, target)
    results = json.loads((target / "results.json").read_text())
    holder, parts = results, key.split(".")
    for part in parts[:-1]:
        holder = holder[part]
    holder[parts[-1]] = change(holder[parts[-1]])
    (target / "results.json").write_text(json.dumps(results))
    return target


@pytest.mark.parametrize("kind", ["all", "control"])
def test_the_clean_runs_verify_with_their_figures_checked(runs, kind):
    report = verify_run(runs / kind)
    assert report.ok, report.mismatches
    # trace_messages, eps, alpha, theta, histogram, 20 x (released, per_device released,
    # estimate, abs_error, raw_abs_error) when present, mae, raw.mae, postprocessed.mae
    assert report.checked["results_figures"] >= 5 + 20 * 3, report.checked


@pytest.mark.parametrize("kind", ["all", "control"])
@pytest.mark.parametrize(
    ("key", "change"),
    [
        ("theta", lambda v: v + 1),
        ("trace_messages", lambda v: v + 1),
        ("eps", lambda v: v * 2),
        ("released.n0001", lambda v: v + 1.0),
        ("per_device.n0001.released", lambda v: v + 1.0),
        ("histogram", lambda v: [v[0] + 1, *v[1:]]),
        ("raw.mae", lambda v: v / 2),
    ],
)
def test_one_edited_figure_is_results_differs(runs, tmp_path, kind, key, change):
    target = _edit(runs, kind, tmp_path, key, change)
    report = verify_run(target)
    found = [m for m in report.mismatches if m.reason == "results_differs"]
    assert any(m.detail.startswith(f"results.json {key} is ") for m in found), found
    result = CliRunner().invoke(app, ["trace", "verify", str(target)])
    assert result.exit_code == 1, result.output
    assert "MISMATCH results: results_differs: " in result.output
