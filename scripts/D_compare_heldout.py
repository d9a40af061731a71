"""Compare two runs of ``cpr_user_heldout.py periodic`` (old and new ``detect_period`` on the
same streams; issue 19, helper D): exact answers per cell, the ``am`` cells' far answers,
cells newly below a baseline (sign test p < 0.05).

Run: ``python scripts/D_compare_heldout.py P_old.jsonl P_new.jsonl``.
"""

from __future__ import annotations

import json
import sys

AM_CELLS = ((150, 1000, 5.0), (1000, 10000, 1.0), (1000, 10000, 5.0))


def _rows(path: str) -> dict:
    with open(path) as handle:
        rows = [json.loads(line) for line in handle]
    return {(r["source"], r["period"], r["n"], r["eps0"]): r for r in rows}


def main(old_path: str, new_path: str) -> None:
    old, new = _rows(old_path), _rows(new_path)
    am = {"old": [0, 0, 0], "new": [0, 0, 0]}  # exact, near, far
    lost_total = gained_total = 0
    for key in sorted(old):
        o, n = old[key], new[key]
        if key[0] == "am" and key[1:] in AM_CELLS:
            for who, r in (("old", o), ("new", n)):
                am[who][0] += r["hits"]["ours"]
                am[who][1] += r["near"]
                am[who][2] += r["far"]
        diff = n["hits"]["ours"] - o["hits"]["ours"]
        newly_below = [b for b in ("fv", "ac") if n["below_p"][b] < 0.05 <= o["below_p"][b]]
        if (
            diff
            or newly_below
            or (o["near"], o["far"], o["abstain"])
            != (
                n["near"],
                n["far"],
                n["abstain"],
            )
        ):
            print(
                f"{key}: exact {o['hits']['ours']} -> {n['hits']['ours']}, near {o['near']} ->"
                f" {n['near']}, far {o['far']} -> {n['far']}, abstain {o['abstain']} ->"
                f" {n['abstain']}" + (f"; NEWLY BELOW {newly_below}" if newly_below else "")
            )
        if key[0] != "am" or key[1:] not in AM_CELLS:
            lost_total += max(0, -diff)
            gained_total += max(0, diff)
    exact = [sum(r["hits"]["ours"] for r in d.values()) for d in (old, new)]
    print(f"exact total {exact[0]} -> {exact[1]}")
    print(f"am cells (exact, near, far): old {am['old']} new {am['new']}")
    print(f"other cells: exact lost {lost_total}, gained {gained_total} (net cell sums)")


if __name__ == "__main__":
    main(*sys.argv[1:3])
