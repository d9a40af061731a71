"""``trace verify``'s step 5: results.json's figures against the trace, the collector's
store, the ledgers and the signed scenario (``app/trace_verify_results.py``). Helper H's
user trial (scripts/H_inspect_user.py) edited one figure of results.json at a time —
``reports_received``, ``trace.messages``, ``privacy.max_window_spent``, ``privacy.eps``,
``devices``, ``reports_lost``, ``accuracy.mean_abs_error``, ``privacy.within_budget`` — and
verify exited 0 for all but ``run``; each is now ``results_differs`` (exit 1)."""

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

from tests.tiny_scenarios import stream_text

STREAM = stream_text("verify-results", seed=5, devices=3, steps=20, eps=1.0, period=6)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("figures") / "run"
    asyncio.run(run_scenario(parse_scenario(STREAM), broker="memory", out_dir=out, run_id="h4r"))
    return out


def _edit(run_dir, tmp_path, key: str, change):
    target = tmp_path / "run"
    shutil.copytree(run_dir, target)
    results = json.loads((target / "results.json").read_text())
    parts = key.split(".")
    holder = results
    for part in parts[:-1]:
        holder = holder[part]
    holder[parts[-1]] = change(holder[parts[-1]])
    (target / "results.json").write_text(json.dumps(results))
    return target


def test_the_clean_run_checks_its_figures(run_dir):
    report = verify_run(run_dir)
    assert report.ok, report.mismatches
    # devices, trace.messages, 6 stream, 4 privacy params, 3 spends, 2 store counts,
    # 2 accuracy, reports_lost, devices_complete
    assert report.checked["results_figures"] == 21, report.checked
    assert any(note.startswith("results.json's figures that the trace") for note in report.notes)


@pytest.mark.parametrize(
    ("key", "change", "named"),
    [
        ("reports_received", lambda v: v - 1, "the collector's store"),
        ("stream.values_received", lambda v: v + 4, "the collector's store"),
        ("trace.messages", lambda v: v + 1, "the trace's rows"),
        ("devices", lambda v: v + 1, "the scenario"),
        ("devices_complete", lambda v: v - 1, "per_device (state done)"),
        ("reports_lost", lambda v: v + 1, "missing_batches"),
        ("privacy.eps", lambda v: v * 2, "the scenario"),
        ("privacy.eps0", lambda v: v * 2, "the scenario"),
        ("stream.w", lambda v: v + 1, "the scenario"),
        ("privacy.max_window_spent", lambda v: v / 2, "the ledgers"),
        ("privacy.within_budget", lambda v: not v, "the ledgers"),
        ("privacy.devices", lambda v: v + 1, "the ledgers"),
        ("accuracy.mean_abs_error", lambda v: v / 2, "per_device"),
        ("accuracy.max_abs_error", lambda v: v + 0.1, "per_device"),
    ],
)
def test_one_edited_figure_is_results_differs(run_dir, tmp_path, key, change, named):
    target = _edit(run_dir, tmp_path, key, change)
    report = verify_run(target)
    found = [m for m in report.mismatches if m.reason == "results_differs"]
    assert len(found) == 1, report.mismatches
    assert found[0].detail.startswith(f"results.json {key} is ")
    assert f"; recomputed from {named}: " in found[0].detail
    result = CliRunner().invoke(app, ["trace", "verify", str(target)])
    assert result.exit_code == 1, result.output
    assert f"MISMATCH results: results_differs: results.json {key} is " in result.output


def test_a_device_estimate_edited_breaks_the_accuracy_arithmetic(run_dir, tmp_path):
    target = _edit(run_dir, tmp_path, "per_device.d0001.mean_estimate", lambda v: v + 1)
    reasons = {m.detail.split(" is ")[0] for m in verify_run(target).mismatches}
    assert "results.json accuracy.mean_abs_error" in reasons


def test_a_figure_the_run_does_not_have_is_not_checked(run_dir, tmp_path):
    target = _edit(run_dir, tmp_path, "privacy", lambda v: {"claim": v["claim"]})
    report = verify_run(target)
    assert report.ok, report.mismatches
