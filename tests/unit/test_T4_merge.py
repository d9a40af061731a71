"""Gaps found by helper T4's planted-bug hunt in ``ldpfleet merge``
(scenarios/merge.py): the warning of a missing shard (its last one too) reaches the merged
results.json beside the warnings already there, the trace key is kept, a directory given
twice or as the output is refused, and ``report`` finds only its own run's shards. Each
test names the mutants it kills."""

from __future__ import annotations

import json

import pytest
from ldpfleet.broker.trace import TraceError
from ldpfleet.scenarios import merge


def _collector(path, **extra):
    path.mkdir(parents=True)
    document = {"run": "r1", "mean_estimates": {}, "scenario": {"spec": {}}, **extra}
    (path / "results.json").write_text(json.dumps(document))
    return path


def _fleet(path, shard: str, run: str = "r1"):
    path.mkdir(parents=True)
    (path / "outcomes.json").write_text(json.dumps({"shard": shard, "devices": []}))
    (path / "ledger.json").write_text(json.dumps({"run": run, "devices": {}}))
    return path


def test_the_last_shard_missing_is_named(tmp_path):
    """Kills MG1: the shard indices looked for were ``range(k - 1)``: a merge of shards
    0/3 and 1/3 (the last one missing) said nothing; the existing test drops the middle
    one."""
    shards = [_fleet(tmp_path / f"f{i}", f"{i}/3") for i in (0, 1)]
    warning = merge.missing_shards(shards)
    assert warning is not None and "merged 2 of 3 fleet shards (missing 2/3)" in warning


def test_shards_of_runs_cut_differently_give_no_count(tmp_path):
    """Kills MG2: shards named of different counts (0/2 and 2/3: pieces of two runs) are
    not counted against either (no "missing 1/3" warning invented from one of them)."""
    shards = [_fleet(tmp_path / "f0", "0/2"), _fleet(tmp_path / "f2", "2/3")]
    assert merge.missing_shards(shards) is None


@pytest.fixture
def fake_merger(monkeypatch):
    """``write_merged`` replaced by one writing a merged results.json with a warning of
    its own and no trace key (the real merger needs a whole run's pieces)."""
    from ldpfleet.scenarios import sides

    def write_merged(collector, fleets, out):
        document = {"run": "r1", "warnings": ["a warning of the merger"], "trace": {}}
        (out / "results.json").write_text(json.dumps(document))

    monkeypatch.setattr(sides, "write_merged", write_merged)


def test_a_merge_missing_a_shard_says_so_in_results_json(tmp_path, fake_merger):
    """Kills MG6 (the missing-shard warning never written into the merged results.json)
    and MG11 (it replaced the warnings already there) and MG5 (the collector side's trace
    key not carried into the merged results.json: ``trace verify OUT`` then has no
    anchor)."""
    collector = _collector(tmp_path / "c", trace={"public_key": "ab" * 32, "messages": 5})
    shard = _fleet(tmp_path / "f0", "0/2")
    out = merge.merge_run(collector, [shard], tmp_path / "out")
    results = json.loads((out / "results.json").read_text())
    assert results["warnings"][0] == "a warning of the merger"
    assert len(results["warnings"]) == 2 and "missing 1/2" in results["warnings"][1]
    assert results["trace"]["public_key"] == "ab" * 32


def test_a_piece_given_twice_or_as_the_output_is_refused(tmp_path):
    """Kills MG3 (a shard given twice merged twice) and MG4 (``--out`` the collector's own
    directory, whose results.json the merge overwrote); both were tested only by an
    embedded-broker end-to-end run."""
    collector = _collector(tmp_path / "c")
    shard = _fleet(tmp_path / "f0", "0/1")
    with pytest.raises(TraceError, match="is given twice"):
        merge.merge_run(collector, [shard, shard], tmp_path / "out")
    with pytest.raises(TraceError, match="would overwrite"):
        merge.merge_run(collector, [shard], collector)


def test_a_merged_run_is_not_a_collector_side():
    """Kills MG7: a merged results.json (``side_processes``) that also carries a collector
    key (``partitions``) was taken for a collector side's."""
    assert merge.is_collector_side({"mean_estimates": {}}) is True
    assert merge.is_collector_side({"side_processes": {}, "partitions": 2}) is False


def test_report_finds_only_its_own_runs_shards(tmp_path):
    """Kills MG8: ``shard_dirs_near`` took every shard directory beside the collector's,
    another run's too (its ledgers then merged into this run's report)."""
    collector = _collector(tmp_path / "collector")
    mine = _fleet(tmp_path / "fleet-0", "0/1", run="r1")
    _fleet(tmp_path / "fleet-old", "0/1", run="r0")
    assert merge.shard_dirs_near(collector, "r1") == [mine]


def _interrupted_write(self, data, *args, **kwargs):
    """Half of ``data`` written, then a Ctrl-C."""
    with open(self, "w" if isinstance(data, str) else "wb") as handle:
        handle.write(data[: len(data) // 2])
    raise KeyboardInterrupt


@pytest.mark.parametrize("step", ["warning", "trace key"])
def test_a_merge_stopped_while_rewriting_results_json_keeps_it_whole(tmp_path, monkeypatch, step):
    """Real defect: the merge's two rewrites of the merged results.json (the missing-shard
    warning, the collector side's trace key) wrote it in place with ``write_text`` (the
    check in test_atomic_outputs.py looks for ``"results.json").write_text`` only): a stop
    mid-write left half a results.json, which ``report`` and ``trace verify`` then
    refused. Now both go through ``jsonout.write_results`` (written beside, renamed)."""
    path = tmp_path / "results.json"
    before = {"run": "r1", "warnings": ["w0"], "trace": {}, "values": list(range(500))}
    path.write_text(json.dumps(before))
    collector = tmp_path / "collector.json"
    collector.write_text(json.dumps({"trace": {"public_key": "ab" * 32}}))
    monkeypatch.setattr(type(path), "write_text", _interrupted_write)
    monkeypatch.setattr(type(path), "write_bytes", _interrupted_write)
    with pytest.raises(KeyboardInterrupt):
        if step == "warning":
            merge._add_warning(path, "merged 1 of 2 fleet shards")
        else:
            merge._keep_trace_key(collector, path)
    assert json.loads(path.read_text()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["collector.json", "results.json"]
