"""``ldpfleet merge`` with odd pieces (helper Q's held-out QA): a piece's JSON that is not
JSON or not an object was a JSONDecodeError traceback or "a whole run's results"; a merge
of some of the shards said nothing while its ledger held only their devices."""

from __future__ import annotations

import json

import pytest
from ldpfleet.broker.trace import TraceError
from ldpfleet.scenarios.merge import merge_run, missing_shards


def _collector(path, text: str | None = None):
    path.mkdir(parents=True)
    document = {"run": "r1", "mean_estimates": {}, "scenario": {"spec": {}}}
    (path / "results.json").write_text(text if text is not None else json.dumps(document))
    return path


def _fleet(path, shard: str, text: str | None = None):
    path.mkdir(parents=True)
    outcomes = {"shard": shard, "devices": []}
    (path / "outcomes.json").write_text(text if text is not None else json.dumps(outcomes))
    return path


@pytest.mark.parametrize(
    ("results", "outcomes", "needle"),
    [
        ("{bad", None, "results.json is not a run's JSON (Expecting property"),
        ("[1, 2]", None, "results.json is not a run's JSON object, got a list"),
        (None, "", "outcomes.json is not a run's JSON"),
        (None, "null", "outcomes.json is not a run's JSON object, got a NoneType"),
    ],
)
def test_a_piece_that_is_not_a_json_object_is_one_sentence(tmp_path, results, outcomes, needle):
    collector = _collector(tmp_path / "c", results)
    fleet = _fleet(tmp_path / "f0", "0/1", outcomes)
    with pytest.raises(TraceError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        merge_run(collector, [fleet], tmp_path / "out")


def test_missing_shards_are_named(tmp_path):
    f0 = _fleet(tmp_path / "f0", "0/3")
    f2 = _fleet(tmp_path / "f2", "2/3")
    warning = missing_shards([f0, f2])
    assert warning is not None and "merged 2 of 3 fleet shards (missing 1/3)" in warning
    f1 = _fleet(tmp_path / "f1", "1/3")
    assert missing_shards([f0, f1, f2]) is None


def test_shards_not_named_i_of_k_give_no_warning(tmp_path):
    assert missing_shards([_fleet(tmp_path / "f0", "all")]) is None
