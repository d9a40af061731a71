"""A fleet shard that writes no outcome is explained at once: the runner logs the end of
the shard's log (a bench's scratch folder, and the log in it, is gone after the run)."""

from __future__ import annotations

import logging

from ldpfleet.scenarios.schema import parse_scenario
from ldpfleet.scenarios.shards import ShardedFleet

from tests.conftest import ROOT


def test_a_shard_without_outcome_logs_the_end_of_its_log_once(tmp_path, caplog):
    scenario = parse_scenario((ROOT / "scenarios" / "quickstart.toml").read_text())
    fleet = ShardedFleet(scenario, "mqtt://127.0.0.1:1", "r1", seed=1, shards=2, out_dir=tmp_path)
    shard_dir = tmp_path / "shards" / "fleet-0-of-2"
    shard_dir.mkdir(parents=True)
    lines = [f"line {i}" for i in range(30)] + ["SyntaxError: invalid syntax (cadr_messages.py)"]
    (shard_dir / "fleet.log").write_text("\n".join(lines))
    fleet.exit_codes[0] = 1
    with caplog.at_level(logging.WARNING, logger="ldpfleet.scenarios.shards"):
        fleet._load(0)
        fleet._load(0)  # once per shard
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1
    assert "fleet shard 0/2 wrote no outcome (exit code 1)" in said[0]
    assert "SyntaxError: invalid syntax" in said[0] and "line 29" in said[0]
    assert "line 5\n" not in said[0]  # only the end of the log
    outcome = fleet.outcomes()[0]
    assert outcome.unfinished.startswith("shard 0/2 wrote no outcome (exit code 1")
