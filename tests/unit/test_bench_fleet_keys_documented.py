"""Every key of ``ldpfleet bench fleet``'s JSON is explained in docs/scaling.md's table
"bench fleet's JSON, key by key" (before: ``values_per_s``, ``total_seconds``,
``trace_messages``, ``duplicates``, ``peak_rss_mb.broker_before`` / ``fleet_total`` /
``collector_process`` and others were in no document)."""

from pathlib import Path

from ldpfleet.app.bench import bench_fleet
from ldpfleet.scenarios.loop import run as run_loop

from tests.doc_keys import documented_keys, json_keys

DOC = Path(__file__).resolve().parents[2] / "docs" / "scaling.md"
HEADING = "### bench fleet's JSON, key by key"


def test_every_key_of_a_fleet_bench_is_documented(tmp_path):
    result = run_loop(bench_fleet(4, 10, broker="memory", reconstruct="cpr", out_dir=tmp_path))
    keys, documented = json_keys(result), documented_keys(DOC, HEADING)
    assert [k for k in keys if k not in documented] == []
    # and the table names no key the bench lacks (a renamed key is caught either way),
    # but for those of a partitioned run only
    assert documented - set(keys) == {"reconstruct.merge_seconds", "reconstruct.collectors"}
