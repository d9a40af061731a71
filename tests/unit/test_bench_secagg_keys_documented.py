"""Every key of ``ldpfleet bench secagg``'s JSON is explained in docs/secagg.md's table
"bench secagg's JSON, key by key" (before: only ``exact`` was, and ``max_abs_error``, in
the same JSON as ``exact: true``, read as a contradiction: it is the fixed-point
quantisation of the decoded total, not an error of the protocol)."""

import re
from pathlib import Path

from ldpfleet.app.bench_secagg import bench_secagg
from ldpfleet.scenarios.loop import run as run_loop

DOC = Path(__file__).resolve().parents[2] / "docs" / "secagg.md"
HEADING = "### bench secagg's JSON, key by key"


def _keys(d: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in d.items():
        out.append(prefix + key)
        if isinstance(value, dict):
            out += _keys(value, prefix + key + ".")
    return out


def _documented() -> set[str]:
    text = DOC.read_text()
    assert HEADING in text, f"docs/secagg.md has no section {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {k for row in rows for k in re.findall(r"`([a-z0-9_.]+)`", row.split("|")[1])}


def test_every_key_of_a_secagg_bench_is_documented():
    result = run_loop(bench_secagg(6, 3, neighbors=4, dropout=0.2, broker="memory"))
    keys, documented = _keys(result), _documented()
    assert [k for k in keys if k not in documented] == []
    assert documented - set(keys) == {"seconds_per_stage.consistency"}  # --active only
