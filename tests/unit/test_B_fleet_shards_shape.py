"""results.json ``fleet.shards`` has one shape (helper B, 2026-12-07): before, the shards the
runner started (``[fleet] shards``) wrote ``count, peak_rss_mb, total_peak_rss_mb, seconds,
exit_codes`` and a split run's fleet sides ``count, peak_rss_mb, total_peak_rss_mb,
secure_sum_stopped`` (keyed ``i/k``). Now both carry ``scenarios.shards.SHARD_ENTRY_KEYS``,
keyed by shard index, null where a key does not apply; docs/results.md names every key."""

from __future__ import annotations

from pathlib import Path

from ldpfleet.scenarios.runner import fleet_process_stats
from ldpfleet.scenarios.shards import SHARD_ENTRY_KEYS, ShardedFleet
from ldpfleet.scenarios.sides import _shards_entry

DOC = Path(__file__).resolve().parents[2] / "docs" / "results.md"


def test_runner_started_shards_carry_every_key():
    fleet = object.__new__(ShardedFleet)  # what a run leaves, without starting processes
    fleet.shards, fleet.peak_rss_mb = 2, {0: 100.0, 1: 120.5}
    fleet.shard_seconds, fleet.exit_codes = {1: 3.25, 0: 3.0}, {0: 0, 1: 1}
    entry = fleet_process_stats(fleet)
    assert tuple(entry) == SHARD_ENTRY_KEYS
    assert entry["total_peak_rss_mb"] == 220.5 and entry["seconds"] == {0: 3.0, 1: 3.25}
    assert entry["exit_codes"] == {0: 0, 1: 1}
    assert entry["secure_sum_stopped"] is None and entry["said_done"] is None


def test_split_fleet_sides_carry_every_key_keyed_by_index():
    outcomes = [
        {"shard": "1/2", "peak_rss_mb": 90.0, "secure_sum": {"stopped": "secure sum stopped"}},
        {"shard": "0/2", "peak_rss_mb": 80.0, "secure_sum": None},
    ]
    entry = _shards_entry(outcomes, {1: True})
    assert tuple(entry) == SHARD_ENTRY_KEYS
    assert entry["count"] == 2 and entry["peak_rss_mb"] == {0: 80.0, 1: 90.0}
    assert entry["secure_sum_stopped"] == {0: None, 1: "secure sum stopped"}
    assert entry["said_done"] == {0: False, 1: True}  # shard 0 was not heard
    assert entry["seconds"] is None and entry["exit_codes"] is None
    assert _shards_entry(outcomes[:1], None)["count"] == 2  # a missing shard still counts
    assert _shards_entry(outcomes, None)["said_done"] is None  # no record kept


def test_the_results_document_names_every_key():
    row = next(r for r in DOC.read_text().splitlines() if r.startswith("| `fleet.shards` |"))
    assert [k for k in SHARD_ENTRY_KEYS if f"`{k}`" not in row] == []
