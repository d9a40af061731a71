"""docs/claims.md's summary table counts its rows: each part's holds / with caveat / does
not hold / not measured equal the statuses of that part's rows (C, G, D, A, R), and the
"all" line their sums — so a row whose status changes cannot leave the summary stale."""

from __future__ import annotations

import re
from collections import Counter

from tests.conftest import ROOT

CLAIMS = (ROOT / "docs" / "claims.md").read_text()
PARTS = {"C": "Issue 19, CPR", "G": "Issue 19, GC-DP", "D": "Issue 20, CADR-LDP",
         "A": "Audit battery", "R": "README headlines"}  # fmt: skip
KINDS = ("holds", "caveat", "no", "unmeasured")


def _status(cell: str) -> str:
    cell = cell.lower()
    if "does not hold" in cell:
        return "no"
    if "not measured" in cell:
        return "unmeasured"
    if "caveat" in cell:
        return "caveat"
    assert cell.strip("* ").startswith("holds"), cell
    return "holds"


def _rows() -> Counter:
    counts: Counter = Counter()
    for line in CLAIMS.splitlines():
        if re.match(r"\| [CGDAR]\d+ \|", line):
            cells = [c.strip() for c in line.split("|")]
            counts[(cells[1][0], _status(cells[3]))] += 1
    return counts


def _summary() -> dict[str, list[int]]:
    found = {}
    for line in CLAIMS.splitlines():
        for letter, title in PARTS.items():
            if line.startswith(f"| {title} ("):
                found[letter] = [int(c) for c in line.split("|")[2:6]]
        if line.startswith("| **all ("):
            found["all"] = [int(c.strip(" *")) for c in line.split("|")[2:6]]
    return found


def test_each_part_counts_its_rows():
    rows, summary = _rows(), _summary()
    assert set(summary) == {*PARTS, "all"}
    for letter in PARTS:
        assert summary[letter] == [rows[(letter, k)] for k in KINDS], letter


def test_the_all_line_is_the_sum_and_names_the_row_count():
    rows, summary = _rows(), _summary()
    assert summary["all"] == [sum(rows[(p, k)] for p in PARTS) for k in KINDS]
    assert f"| **all ({sum(rows.values())})** |" in CLAIMS
