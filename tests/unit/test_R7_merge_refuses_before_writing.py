"""``ldpfleet merge`` of a partitioned run refuses a fleet piece before writing anything
(helper R7). The shard-given-twice refusal (privacy review V2) and the missing
outcomes.json came after ``merge_partition_dirs``, which had already written
``OUT/collector/`` and linked the workers' traces and stores into OUT: a refused merge left
a half-merged OUT. The partition merge is replaced by a recorder (its own tests cover it)."""

from __future__ import annotations

import json

import pytest
from ldpfleet.broker.trace import TraceError
from ldpfleet.scenarios import merge


def _coordinator(path):
    path.mkdir(parents=True)
    document = {"run": "r1", "partitions": 2, "scenario": {"spec": {}}}
    (path / "results.json").write_text(json.dumps(document))
    return path


def _worker(path, index: int):
    path.mkdir(parents=True)
    document = {"run": "r1", "partition": {"index": index, "count": 2}}
    (path / "results.json").write_text(json.dumps(document))
    return path


def _fleet(path, shard: str | None):
    path.mkdir(parents=True)
    if shard is not None:
        (path / "outcomes.json").write_text(json.dumps({"shard": shard, "devices": []}))
    return path


@pytest.fixture
def partition_merges(monkeypatch):
    calls = []

    def recorded(coordinator, partitions, out):
        calls.append(out)
        (out / "collector").mkdir(parents=True)  # what the real one writes first
        return out / "collector"

    monkeypatch.setattr(merge, "merge_partition_dirs", recorded)
    return calls


@pytest.mark.parametrize("second", ["0/2", None], ids=["shard-twice", "no-outcomes"])
def test_a_refused_fleet_piece_leaves_out_unwritten(tmp_path, partition_merges, second):
    coordinator = _coordinator(tmp_path / "coordinator")
    workers = [_worker(tmp_path / f"part{p}", p) for p in range(2)]
    fleets = [_fleet(tmp_path / "f0", "0/2"), _fleet(tmp_path / "f0-again", second)]
    with pytest.raises(TraceError, match=r"shard 0/2 is in both|no outcomes\.json"):
        merge.merge_run(coordinator, [*workers, *fleets], tmp_path / "out")
    assert partition_merges == []
    assert not (tmp_path / "out").exists()
