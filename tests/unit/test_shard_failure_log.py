"""A fleet shard that writes no outcome is explained at once: the runner logs the end of
the shard's log (a bench's scratch folder, and the log in it, is gone after the run)."""

from __future__ import annotations

import asyncio
import contextlib
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


class _DoneFleet:
    """A fleet whose devices are already done (``run`` returns at once)."""

    def __init__(self, config, transport, *, shard):
        self.shard = shard

    async def run(self):
        return []

    def outcomes(self):
        return []


@contextlib.asynccontextmanager
async def _no_broker(url, *, credentials=None):
    yield object(), None


def test_a_shard_writes_its_ledger_before_its_event_loop_closes(tmp_path, monkeypatch):
    """Closing an event loop restores SIGTERM's default action: a shard that wrote its
    ledger and outcomes after the loop ended was killed by a runner's SIGTERM in that
    window (the runner stops shards ``finish_grace`` after the collector ends; on a busy
    machine a shard was still tearing down) and its devices' ledgers were lost — seen as
    a missing shards/fleet-0-of-2/ledger.json in tests/e2e/test_trace_verify.py under load.
    Deterministic check: the outputs are written while the shard's loop is running."""
    from ldpfleet.scenarios import fleet_shard

    seen = []

    def record(target, *args, **kwargs):
        seen.append(asyncio.get_running_loop())  # raises RuntimeError outside the loop

    monkeypatch.setattr(fleet_shard, "Fleet", _DoneFleet)
    monkeypatch.setattr(fleet_shard, "open_broker", _no_broker)
    monkeypatch.setattr(fleet_shard, "write_shard_outputs", record)
    monkeypatch.setattr(fleet_shard, "fleet_config", lambda *a, **k: None)
    monkeypatch.setattr(fleet_shard, "fleet_state_file", lambda *a, **k: None)
    scenario = parse_scenario((ROOT / "scenarios" / "quickstart.toml").read_text())
    outcomes, target = fleet_shard.run_fleet_shard(
        scenario, "mqtt://127.0.0.1:1", "r1", (0, 2), out=tmp_path / "s0"
    )
    assert outcomes == [] and target == tmp_path / "s0"
    assert len(seen) == 1
