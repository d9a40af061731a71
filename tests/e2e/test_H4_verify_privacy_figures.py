"""``trace verify`` on results.json's ``privacy`` where the claim is not the devices'
ledgers: a bulk-gateway run (``app/trace_verify_bulk.py``: against the plan and the worst
window of the stored ``eps0``) and a raw stream under a GC-DP central release (against
the collector's ledger). Helper H's user trial (scripts/H_inspect_user.py) raised
``privacy.max_window_spent`` by one in both and verify said 0 mismatches."""

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

from tests.conftest import ROOT

BULK = """
[scenario]
name = "h4-bulk"
seed = 4
[fleet]
devices = 60
connection = "bulk"
gateway_devices = 30
[stream]
steps = 20
eps = 1.0
w = 10
batch_steps = 5
[source]
kind = "synthetic"
shape = "sine"
period = [6, 10]
amplitude = 1.0
bounds = [-1.5, 1.5]
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("privacy")
    (base / "bulk.toml").write_text(BULK)
    result = CliRunner().invoke(
        app, ["run", str(base / "bulk.toml"), "--broker", "memory", "--out", str(base / "bulk")]
    )
    assert result.exit_code == 0, result.output
    release = (ROOT / "scenarios" / "occupancy-release.toml").read_text()
    release = release.replace("devices = 20", "devices = 5").replace("steps = 1800", "steps = 300")
    assert "devices = 5" in release and "steps = 300" in release
    scenario = parse_scenario(release)
    asyncio.run(run_scenario(scenario, broker="memory", out_dir=base / "raw", run_id="h4-raw"))
    return base


def _edit(runs, kind, tmp_path, change):
    target = tmp_path / kind
    shutil.copytree(runs / kind, target)
    results = json.loads((target / "results.json").read_text())
    change(results["privacy"])
    (target / "results.json").write_text(json.dumps(results))
    return target


@pytest.mark.parametrize("kind", ["bulk", "raw"])
def test_the_clean_runs_verify_with_their_privacy_checked(runs, kind):
    report = verify_run(runs / kind)
    assert report.ok, report.mismatches
    assert report.checked["results_figures"] >= 3


@pytest.mark.parametrize(
    ("kind", "key", "change"),
    [
        ("bulk", "max_window_spent", lambda v: v / 2),
        ("bulk", "within_budget", lambda v: not v),
        ("bulk", "eps", lambda v: v * 2),
        ("bulk", "eps0", lambda v: v * 2),
        ("raw", "max_window_spent", lambda v: v + 1),
        ("raw", "within_budget", lambda v: not v),
        ("raw", "devices", lambda v: v + 1),
    ],
)
def test_an_edited_privacy_figure_is_results_differs(runs, tmp_path, kind, key, change):
    target = _edit(runs, kind, tmp_path, lambda p: p.update({key: change(p[key])}))
    report = verify_run(target)
    found = [m for m in report.mismatches if m.reason == "results_differs"]
    assert found and all(m.device == "results" for m in found), report.mismatches
    assert any(m.detail.startswith(f"results.json privacy.{key} is ") for m in found), found
    result = CliRunner().invoke(app, ["trace", "verify", str(target)])
    assert result.exit_code == 1, result.output


@pytest.mark.parametrize("key", ["mean_abs_error", "max_abs_error"])
def test_an_edited_bulk_accuracy_figure_is_results_differs(runs, tmp_path, key):
    target = tmp_path / "bulk"
    shutil.copytree(runs / "bulk", target)
    results = json.loads((target / "results.json").read_text())
    results["accuracy"][key] += 0.01
    (target / "results.json").write_text(json.dumps(results))
    found = [m for m in verify_run(target).mismatches if m.reason == "results_differs"]
    assert len(found) == 1, found
    assert found[0].detail.startswith(f"results.json accuracy.{key} is ")
    assert "recomputed from the stored rows and the plan" in found[0].detail
