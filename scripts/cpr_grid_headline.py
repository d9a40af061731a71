"""Headline numbers of a ``ldpfleet bench cpr --grid --json`` result, per source.

Per source (built-in or ``--grid-template`` STEM:COLUMN): cells, mean exact-match accuracy
(%) of detect_period / folded variance / autocorrelation, exact trials of each, cells below
the better baseline (one-sided paired sign test p < ``BELOW_LEVEL``) and clearly below
(p < ``BELOW_LEVEL`` / cells), the share of abstaining trials; then the false claims of each
detector summed over the aperiodic cells, with the worst cell.

Run: ``python scripts/cpr_grid_headline.py grid.json`` (docs/cpr.md, "Your own templates").
"""

from __future__ import annotations

import json
import sys

from ldpfleet.app.bench_cpr import BELOW_LEVEL, DETECTORS


def source_lines(grid: list[dict]) -> list[str]:
    """One line per source of the grid, in grid order."""
    strict = BELOW_LEVEL / len(grid)
    lines = []
    for source in dict.fromkeys(row["source"] for row in grid):
        rows = [row for row in grid if row["source"] == source]
        mean = [100 * sum(r["accuracy"][d] for r in rows) / len(rows) for d in DETECTORS]
        exact = [sum(round(r["accuracy"][d] * r["trials"]) for r in rows) for d in DETECTORS]
        below = sum(min(r["below_p"].values()) < BELOW_LEVEL for r in rows)
        clearly = sum(min(r["below_p"].values()) < strict for r in rows)
        abstain = 100 * sum(r["abstain"] for r in rows) / len(rows)
        lines.append(
            f"{source}: {len(rows)} cells, mean % ours / FV / ACF "
            f"{' / '.join(f'{m:.1f}' for m in mean)}, exact {' / '.join(map(str, exact))} of "
            f"{sum(r['trials'] for r in rows)}, below {below}, clearly below {clearly}, "
            f"abstain {abstain:.1f} %"
        )
    return lines


def false_claim_lines(aperiodic: list[dict]) -> list[str]:
    """False claims of each detector over every aperiodic cell, and its worst cell."""
    total = sum(cell["trials"] for cell in aperiodic)
    lines = []
    for name in DETECTORS:
        claims = sum(round(c["false_claims"][name] * c["trials"]) for c in aperiodic)
        worst = max(c["false_claims"][name] for c in aperiodic)
        lines.append(
            f"false claims {name}: {claims} of {total} ({100 * claims / total:.2f} %), "
            f"worst cell {100 * worst:.1f} %"
        )
    return lines


def main(path: str) -> None:
    with open(path) as handle:
        result = json.load(handle)
    print(f"seed {result['seed']}, {result['trials']} trials per cell, {result['seconds']} s")
    print("\n".join(source_lines(result["grid"]) + false_claim_lines(result["aperiodic"])))


if __name__ == "__main__":
    main(sys.argv[1])
