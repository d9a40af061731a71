"""What results.json says of a stream run's privacy and accuracy, checked against the trace
and the ledgers (helper G): ``privacy`` states the w-event claim and what the ledgers spent,
every report in the trace carries the run's mechanism, eps0 and w and no device spends more
than eps in any w consecutive steps of it; ``accuracy.baselines`` scores a constant guess.

The memory case covers the one-collector path and passes once the lead applies helper G's
patches to scenarios/runner.py (``privacy``) and scenarios/stream_document.py
(``accuracy.baselines``); the embedded case (the split run, scenarios/sides.py) needs the
stream_document.py patch only."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

SCENARIO = """
[scenario]
name = "claimed"
seed = 11
[fleet]
devices = 4
[stream]
steps = 60
eps = 1.5
w = 7
batch_steps = 9
mechanism = "duchi"
[source]
kind = "synthetic"
shape = "sawtooth"
period = [8, 16]
amplitude = 4.0
offset = 10.0
bounds = [0.0, 20.0]
"""


def _reports(out) -> list[dict]:
    result = CliRunner().invoke(app, ["trace", "export", str(out), "--kind", "sw_report"])
    assert result.exit_code == 0, result.output
    return [json.loads(line)["payload"] for line in result.stdout.splitlines() if line.strip()]


def _worst_window(reports: list[dict], w: int) -> float:
    """The largest eps0 sum over w consecutive steps of any device, from the trace alone."""
    worst = 0.0
    spent: dict[str, dict[int, float]] = {}
    for report in reports:
        steps = spent.setdefault(report["sender"], {})
        for t in range(report["t0"], report["t0"] + len(report["values"])):
            steps[t] = steps.get(t, 0.0) + report["eps0"]
    for steps in spent.values():
        series = np.zeros(max(steps) + 1)
        for t, eps0 in steps.items():
            series[t] = eps0
        worst = max(worst, float(np.convolve(series, np.ones(w))[: len(series)].max()))
    return worst


@pytest.mark.parametrize("broker", ["memory", pytest.param("embedded", marks=pytest.mark.slow)])
def test_results_state_the_claim_the_trace_and_ledgers_bear_out(tmp_path, broker):
    scenario = tmp_path / "claimed.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(scenario), "-o", str(out), "-b", broker])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    ledger = json.loads((out / "ledger.json").read_text())
    privacy = results["privacy"]
    assert (privacy["mechanism"], privacy["eps"], privacy["w"]) == ("duchi", 1.5, 7)
    assert privacy["eps0"] == pytest.approx(1.5 / 7)
    assert privacy["devices"] == 4
    assert privacy["max_window_spent"] == ledger["max_window_spent"]
    assert privacy["within_budget"] is True and ledger["within_budget"] is True
    assert "1.5-LDP over any 7 consecutive steps" in privacy["claim"]

    reports = _reports(out)
    assert len(reports) == 4 * 7  # 60 steps in batches of 9: 7 reports per device
    for report in reports:
        assert report["mechanism"] == "duchi"
        assert report["w"] == 7
        assert report["eps0"] == results["stream"]["eps0"]
    assert _worst_window(reports, 7) == pytest.approx(privacy["max_window_spent"], rel=1e-9)

    baselines = results["accuracy"]["baselines"]
    assert baselines["devices"] == 4
    assert baselines["constant"]["value"] == 10.0
    truths = [d["true_mean"] for d in results["per_device"].values()]
    assert baselines["constant"]["mean_abs_error"] == pytest.approx(
        float(np.mean(np.abs(np.array(truths) - 10.0)))
    )
    assert isinstance(baselines["beats_constant"], bool)
