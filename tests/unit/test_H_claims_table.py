"""docs/claims.md stays a readable table: every claim row is one line with the six cells of
its header (a stray ``|`` inside a cell, even inside a code span, splits it on GitHub and
shifts the evidence links into a seventh column), and the summary counts at the top are the
counts of the rows' status words."""

from __future__ import annotations

import re

from tests.conftest import ROOT

CLAIMS = ROOT / "docs" / "claims.md"
ROW = re.compile(r"^\| ([CGDAR])(\d+) \|")
# summary line label -> the claim letter(s) its rows start with
PARTS = {
    "Issue 19, CPR": "C",
    "Issue 19, GC-DP": "G",
    "Issue 20, CADR-LDP": "D",
    "Audit battery": "A",
    "README headlines": "R",
}
STATUSES = ("holds", "holds with caveat", "does not hold", "not measured")


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def claim_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if ROW.match(line)]


def status_of(cell: str) -> str:
    """The status word a row's status cell starts with (bold or not, with a note after)."""
    plain = cell.replace("*", "").strip()
    for word in sorted(STATUSES, key=len, reverse=True):
        if plain.startswith(word):
            return word
    raise AssertionError(f"no status word in {cell[:60]!r}")


def counted(text: str) -> dict[str, dict[str, int]]:
    counts = {letter: dict.fromkeys(STATUSES, 0) for letter in PARTS.values()}
    for line in claim_rows(text):
        counts[ROW.match(line).group(1)][status_of(cells(line)[2])] += 1
    return counts


def summary(text: str) -> dict[str, dict[str, int]]:
    out = {}
    for line in text.splitlines():
        row = cells(line) if line.startswith("| ") else []
        for label, letter in PARTS.items():
            if row and row[0].startswith(label):
                out[letter] = dict(zip(STATUSES, map(int, row[1:5]), strict=True))
    return out


def test_every_claim_row_has_six_cells():
    bad = [cells(line)[0] for line in claim_rows(CLAIMS.read_text()) if len(cells(line)) != 6]
    assert bad == []


def test_the_44_claims_are_there():
    assert len(claim_rows(CLAIMS.read_text())) == 44


def test_the_summary_counts_the_rows_statuses():
    text = CLAIMS.read_text()
    assert summary(text) == counted(text)


def test_a_stray_pipe_and_a_wrong_count_are_seen():
    row = "| C9 | p | holds | `a|b` | cmd | [x](x.md) |"
    assert len(cells(row)) == 7
    text = "| Issue 19, CPR (1 promises) | 0 | 1 | 0 | 0 |\n" + row
    assert summary(text)["C"] != counted(text)["C"]
