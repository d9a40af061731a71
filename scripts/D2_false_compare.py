"""Compare two runs of ``cpr_false_claims_family.py`` (old and new ``detect_period`` on the
same streams; issue 19, helper D2, step 3c's re-registration, check (ii)).

Prints the totals, every cell whose claims differ, the cells with any claim (at 40 trials a
cell one claim is 2.5 %, above 1 %), and the verdict of check (ii): NEW's total not above
OLD's, and no cell where NEW is above 1 % and above OLD's count.

Run: ``python scripts/D2_false_compare.py F_old.jsonl F_new.jsonl``.
"""

from __future__ import annotations

import json
import sys

CELL_LIMIT = 0.01  # check (ii): no cell above 1 % (unless OLD's count there is as high)


def _cells(path: str) -> dict[tuple[str, int, float], dict]:
    with open(path) as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return {(r["kind"], int(r["n"]), float(r["eps0"])): r for r in rows}


def main(old_path: str, new_path: str) -> int:
    old, new = _cells(old_path), _cells(new_path)
    if set(old) != set(new):
        raise SystemExit(f"cells differ: {sorted(set(old) ^ set(new))}")
    total_old = sum(r["claims"] for r in old.values())
    total_new = sum(r["claims"] for r in new.values())
    trials = sum(r["trials"] for r in new.values())
    offending = []
    for key in sorted(old):
        o, n = old[key], new[key]
        if o["claimed"] != n["claimed"]:
            print(f"changed {key}: old {o['claimed']} new {n['claimed']}")
        if o["claims"] or n["claims"]:
            print(f"claims {key}: old {o['claims']} new {n['claims']} of {n['trials']}")
        if n["claims"] / n["trials"] > CELL_LIMIT and n["claims"] > o["claims"]:
            offending.append(key)
    holds = total_new <= total_old and not offending
    print(f"cells {len(new)}, streams {trials}; total old {total_old} new {total_new}")
    print(f"cells above 1 % and above old: {offending}")
    print(f"check (ii) holds: {holds}")
    return 0 if holds else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
