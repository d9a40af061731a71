"""Exit codes that do not lie (issue 22): a bench whose secure sum is not exact exits 1 with
one sentence after its JSON; ``trace show/stats/export --kind`` refuses a kind that is
neither recorded nor a kind of the protocol (exit 2), while a real kind with no messages
selects nothing and exits 0."""

from __future__ import annotations

import json

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

from tests.conftest import ROOT

runner = CliRunner()


def test_an_aborted_bench_secure_sum_exits_1_with_one_sentence():
    # 14 of 20 devices leave after sharing: 6 survivors reach the threshold 6 in number (so
    # the command runs), but a dropped device's self-mask seed has only 4 live holders among
    # its 9 neighbours, so the collector cannot unmask (deterministic: who drops out is
    # drawn from the seed)
    result = runner.invoke(
        app, ["bench", "secagg", "--devices", "20", "--dim", "4", "--dropout", "0.7"]
    )
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout.splitlines()[0])
    assert document["exact"] is None and document["aborted"]
    failed = [line for line in result.output.splitlines() if line.startswith("failed:")]
    assert len(failed) == 1 and "session aborted" in failed[0], result.output


def test_a_bench_secure_sum_that_must_abort_is_refused_up_front():
    # 7 of 12 devices would leave: 5 < the threshold 6, the session could only abort
    result = runner.invoke(
        app, ["bench", "secagg", "--devices", "12", "--dim", "4", "--dropout", "0.6"]
    )
    assert result.exit_code == 2, result.output
    assert "--dropout: must leave at least the threshold t = 6" in result.output


def test_an_exact_bench_secure_sum_exits_0():
    result = runner.invoke(
        app, ["bench", "secagg", "--devices", "12", "--dim", "4", "--dropout", "0.1"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["exact"] is True
    assert "failed:" not in result.output


@pytest.fixture(scope="module")
def quickstart_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("qs") / "run"
    result = runner.invoke(
        app,
        ["run", str(ROOT / "scenarios" / "quickstart.toml"), "--broker", "memory", "--out",
         str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("command", ["show", "stats", "export"])
def test_trace_refuses_an_unknown_kind(quickstart_run, command):
    result = runner.invoke(app, ["trace", command, str(quickstart_run), "--kind", "bogus"])
    assert result.exit_code == 2, result.output
    assert "--kind 'bogus' is not a message kind" in result.output
    assert "recorded in" in result.output and "sw_report" in result.output
    assert len(result.output.strip().splitlines()) == 1  # one sentence


def test_trace_suggests_the_close_kind(quickstart_run):
    result = runner.invoke(app, ["trace", "show", str(quickstart_run), "--kind", "rejct"])
    assert result.exit_code == 2
    assert "did you mean 'reject'?" in result.output


def test_a_protocol_kind_absent_from_the_trace_selects_nothing(quickstart_run):
    result = runner.invoke(app, ["trace", "show", str(quickstart_run), "--kind", "reject"])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    shown = runner.invoke(app, ["trace", "show", str(quickstart_run), "--kind", "ack"])
    assert shown.exit_code == 0 and " ack " in shown.stdout


def test_a_run_whose_secure_sum_aborted_exits_1_with_one_sentence(tmp_path):
    """``ldpfleet run``: the stream completes, then 3 of 12 devices on a ring (neighbors =
    2) leave the secure sum after sharing (dropout 0.25 of the seeded draw): enough remain
    for the threshold, but the ring is cut and unmasking would reveal each arc's sum, so
    the session aborts (a dropout leaving fewer than the threshold, 0.6 before, is now
    refused when the scenario loads)."""
    text = (ROOT / "scenarios" / "quickstart.toml").read_text()
    text = text.replace("devices = 50", "devices = 12").replace("steps = 200", "steps = 20")
    text += (
        "\n[secure_sum]\ndim = 4\nclip = [5.0, 35.0]\nneighbors = 2\ndropout = 0.25\n"
        'dropout_stage = "after_shares"\nstage_timeout = 3.0\n[broker]\nurl = "memory"\n'
    )
    path = tmp_path / "aborting.toml"
    path.write_text(text)
    result = runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    said = [line for line in result.output.splitlines() if "secure sum aborted:" in line]
    assert len(said) == 1, result.output
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["reports_lost"] == 0 and results["secure_sum"]["aborted"]


def test_run_refuses_a_shard_broker_for_a_one_shard_run(tmp_path):
    quick = str(ROOT / "scenarios" / "quickstart.toml")
    result = runner.invoke(
        app, ["run", quick, "--broker", "memory", "--shard-broker", "mqtt://127.0.0.1:1", "-o",
              str(tmp_path / "o")],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "--shard-broker" in result.output and "one shard" in result.output
    assert not (tmp_path / "o" / "results.json").exists()
