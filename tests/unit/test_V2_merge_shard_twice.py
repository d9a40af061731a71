"""Privacy review V2: ``ldpfleet merge`` refuses two copies of one fleet shard.

A shard started again with another ``--out`` (so without its ``OUT/device-state.sqlite``),
or the same ``ldpfleet fleet --shard i/k`` command run twice, privatises its devices' steps
afresh; with noise the seed cannot replay the collector may receive both copies of a batch
(it refuses the second as a ``replay`` after receiving it: tests/unit/
test_V2_stream_claim_public.py). Given both directories, the merge kept one ledger per device
(ledger.json is a dict by device id) and showed one copy's spend, ``within_budget`` true,
with no word of the second copy. Fails before the fix (merged, or another error)."""

from __future__ import annotations

import json

import pytest
from ldpfleet.broker.trace import TraceError
from ldpfleet.scenarios.merge import merge_run


def _collector(path):
    path.mkdir(parents=True)
    document = {"run": "r1", "mean_estimates": {}, "scenario": {"spec": {}}}
    (path / "results.json").write_text(json.dumps(document))
    return path


def _fleet(path, shard: str):
    path.mkdir(parents=True)
    (path / "outcomes.json").write_text(json.dumps({"shard": shard, "devices": []}))
    return path


def test_two_copies_of_one_shard_are_refused_naming_both(tmp_path):
    collector = _collector(tmp_path / "c")
    first = _fleet(tmp_path / "f0", "0/2")
    second = _fleet(tmp_path / "f0-again", "0/2")
    other = _fleet(tmp_path / "f1", "1/2")
    with pytest.raises(TraceError, match=r"shard 0/2 is in both .*f0 and .*f0-again") as error:
        merge_run(collector, [first, other, second], tmp_path / "out")
    assert "replay" in str(error.value)
    assert not (tmp_path / "out").exists()  # refused before anything is written
