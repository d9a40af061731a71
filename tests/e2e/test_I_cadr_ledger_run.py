"""A CADR-LDP run's ledger.json names its run (``"run"`` beside device -> ledger), so
``trace verify`` refuses another run's ledger.json of the same scenario and seed
(``ledger_run``) although its charges are identical (user trial: a swapped CADR ledger.json
verified clean, the stream runs' did not).

Two memory runs of one small CADR-LDP scenario, run ids ``ia`` and ``ib``: the untouched
run verifies clean (exit 0); run ``ia`` with run ``ib``'s ledger.json is exit 1 with the
one mismatch ``ledger_run``."""

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

SCENARIO = """
[scenario]
name = "tiny-degrees-i"
seed = 3
[graph]
source = "barabasi_albert:n=12,m=2,seed=1"
[cadr]
method = "clip"
theta = "auto-dev"
[broker]
url = "memory"
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("cadr-runs")
    outs = {}
    for run in ("ia", "ib"):
        outs[run] = base / run
        asyncio.run(
            run_scenario(parse_scenario(SCENARIO), broker="memory", out_dir=outs[run], run_id=run)
        )
    return outs


def test_a_cadr_ledger_names_its_run_and_holds_every_device(runs):
    document = json.loads((runs["ia"] / "ledger.json").read_text())
    assert document.pop("run") == "ia"
    assert len(document) == 12
    assert all("accounts" in ledger for ledger in document.values())
    other = json.loads((runs["ib"] / "ledger.json").read_text())
    assert other.pop("run") == "ib"
    assert other == document  # same scenario and seed: identical charges


def test_the_untouched_cadr_run_verifies_clean(runs):
    report = verify_run(runs["ia"])
    assert report.ok, report.mismatches
    result = CliRunner().invoke(app, ["trace", "verify", str(runs["ia"])])
    assert result.exit_code == 0, result.output


def test_another_runs_cadr_ledger_is_ledger_run(runs, tmp_path):
    target = tmp_path / "swapped"
    shutil.copytree(runs["ia"], target)
    shutil.copy(runs["ib"] / "ledger.json", target / "ledger.json")
    report = verify_run(target)
    assert [m.reason for m in report.mismatches] == ["ledger_run"], report.mismatches
    assert "holds the ledgers of run ib, the trace is of run ia" in report.mismatches[0].detail
    result = CliRunner().invoke(app, ["trace", "verify", str(target)])
    assert result.exit_code == 1, result.output
    assert "ledger_run" in result.output
