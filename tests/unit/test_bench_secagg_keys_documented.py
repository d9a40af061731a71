"""Every key of ``ldpfleet bench secagg``'s JSON is explained in docs/secagg.md's table
"bench secagg's JSON, key by key" (before: only ``exact`` was, and ``max_abs_error``, in
the same JSON as ``exact: true``, read as a contradiction: it is the fixed-point
quantisation of the decoded total, not an error of the protocol)."""

from pathlib import Path

from ldpfleet.app.bench_secagg import bench_secagg
from ldpfleet.scenarios.loop import run as run_loop

from tests.doc_keys import documented_keys, json_keys

DOC = Path(__file__).resolve().parents[2] / "docs" / "secagg.md"
HEADING = "### bench secagg's JSON, key by key"


def test_every_key_of_a_secagg_bench_is_documented():
    result = run_loop(bench_secagg(6, 3, neighbors=4, dropout=0.2, broker="memory"))
    keys, documented = json_keys(result), documented_keys(DOC, HEADING)
    assert [k for k in keys if k not in documented] == []
    assert documented - set(keys) == {"seconds_per_stage.consistency"}  # --active only
