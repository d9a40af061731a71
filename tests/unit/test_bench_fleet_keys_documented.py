"""Every key of ``ldpfleet bench fleet``'s JSON is explained in docs/scaling.md's table
"bench fleet's JSON, key by key" (before: ``values_per_s``, ``total_seconds``,
``trace_messages``, ``duplicates``, ``peak_rss_mb.broker_before`` / ``fleet_total`` /
``collector_process`` and others were in no document)."""

import re
from pathlib import Path

from ldpfleet.app.bench import bench_fleet
from ldpfleet.scenarios.loop import run as run_loop

DOC = Path(__file__).resolve().parents[2] / "docs" / "scaling.md"
HEADING = "### bench fleet's JSON, key by key"


def _keys(d: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in d.items():
        out.append(prefix + key)
        if isinstance(value, dict):
            out += _keys(value, prefix + key + ".")
    return out


def _documented() -> set[str]:
    text = DOC.read_text()
    assert HEADING in text, f"docs/scaling.md has no section {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {k for row in rows for k in re.findall(r"`([a-z0-9_.]+)`", row.split("|")[1])}


def test_every_key_of_a_fleet_bench_is_documented(tmp_path):
    result = run_loop(bench_fleet(4, 10, broker="memory", reconstruct="cpr", out_dir=tmp_path))
    keys, documented = _keys(result), _documented()
    assert [k for k in keys if k not in documented] == []
    # and the table names no key the bench lacks (a renamed key is caught either way),
    # but for those of a partitioned run only
    assert documented - set(keys) == {"reconstruct.merge_seconds", "reconstruct.collectors"}
