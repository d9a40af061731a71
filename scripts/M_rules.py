"""Replay step-9-like rules on ``M_collect.py`` output (issue 19, helper M, 2026-12-06).

A rule (level, cycle window ``[kmin, kmax]`` of whole cycles ``n // T``, ``scope``, ``nmax``)
acts on streams with ``SHORT_STREAM <= n < nmax`` where the detector abstained: ``scope``
"window" searches only the periods whose whole cycles lie in the window (Bonferroni over
them); "all" searches every period with >= 3 whole cycles (Bonferroni over all) and claims
the winner only if its whole cycles lie in the window; "candidate" tests the detector's
own refined ``candidate`` instead of the winner (Bonferroni over all periods, since the
candidate was chosen by the data); "agree" claims the winner only if it is the candidate.
Printed per rule: aperiodic claims
(total, worst family, worst (family, n, eps0) cell), periodic exact / wrong (total and per
shape), phase-jump exact / wrong.

Run: ``python scripts/M_rules.py DATA.jsonl [RULES]`` (RULES: a Python list of tuples
``(level, kmin, kmax, scope, nmax)``; default a calibration sweep).
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter

SHORT_STREAM = 96


def rule_answer(row: dict, rule: tuple) -> int | None:
    """The answer of the detector plus ``rule`` on one recorded stream."""
    level, kmin, kmax, scope, nmax = rule
    n, answer = row["n"], row["answer"]
    if answer is not None or not (SHORT_STREAM <= n < nmax):
        return answer
    periods = list(range(3, n // 3 + 1))
    logps = row["anova"]
    inside = [i for i, q in enumerate(periods) if kmin <= n // q <= kmax]
    pool = inside if scope == "window" else list(range(len(periods)))
    if not pool:
        return None
    best = min(pool, key=lambda i: logps[i])
    candidate = row["candidate"]
    if scope in ("candidate", "agree"):
        if candidate is None or not 3 <= candidate <= n // 3:
            return None
        if scope == "agree" and periods[best] != candidate:
            return None
        best = periods.index(candidate)
    if best not in inside or math.exp(logps[best]) * len(pool) >= level:
        return None
    return periods[best]


def summary(rows: list[dict], rule: tuple) -> str:
    fam, cell = Counter(), Counter()
    exact, wrong, shape_exact, shape_wrong = 0, 0, Counter(), Counter()
    jump_exact, jump_wrong = 0, 0
    for row in rows:
        got = rule_answer(row, rule)
        if "kind" in row:
            fam[row["kind"]] += got is not None
            cell[(row["kind"], row["n"], row["eps0"])] += got is not None
        elif "source" in row:
            key = (row["period"], row["n"], row["eps0"])
            shape_exact[key] += got == row["period"]
            shape_wrong[key] += got is not None and got != row["period"]
            exact += got == row["period"]
            wrong += got is not None and got != row["period"]
        else:
            jump_exact += got == row["period"]
            jump_wrong += got is not None and got != row["period"]
    worst_family = max(fam.items(), key=lambda kv: kv[1])
    worst_cell = max(cell.items(), key=lambda kv: kv[1])
    return (
        f"{rule}: aperiodic {sum(fam.values())} worst family {worst_family} worst cell "
        f"{worst_cell}; periodic exact {exact} wrong {wrong}; jumps exact {jump_exact} "
        f"wrong {jump_wrong}"
    )


def per_shape(rows: list[dict], rules: list[tuple]) -> str:
    keys = sorted({(r["period"], r["n"], r["eps0"]) for r in rows if "source" in r})
    lines = []
    for key in keys:
        sub = [r for r in rows if "source" in r and (r["period"], r["n"], r["eps0"]) == key]
        cols = []
        for rule in rules:
            got = [rule_answer(r, rule) for r in sub]
            e = sum(g == key[0] for g in got)
            w = sum(g is not None and g != key[0] for g in got)
            cols.append(f"{e}/{w}")
        lines.append(f"{key} of {len(sub)}: " + "  ".join(cols))
    return "\n".join(lines)


DEFAULT_RULES = [
    (0.0, 0, 0, "window", 0),
    *[(lv, 3, 5, "window", nmax) for lv in (0.01, 0.005, 0.002) for nmax in (128, 200)],
    *[(lv, 4, 5, "window", nmax) for lv in (0.01, 0.005, 0.002) for nmax in (128, 200)],
    *[(lv, 4, 4, "window", nmax) for lv in (0.01, 0.005, 0.002) for nmax in (128, 200)],
    *[(lv, 3, 5, "all", nmax) for lv in (0.01, 0.005, 0.002) for nmax in (128, 200)],
    *[(lv, 4, 5, "all", nmax) for lv in (0.01, 0.005, 0.002) for nmax in (128, 200)],
]


if __name__ == "__main__":
    with open(sys.argv[1]) as handle:
        data = [json.loads(line) for line in handle]
    # a command-line list of tuples, possibly a comprehension
    rules = eval(sys.argv[2]) if len(sys.argv) > 2 else DEFAULT_RULES
    for rule in rules:
        print(summary(data, rule), flush=True)
    if len(sys.argv) > 3:
        print(per_shape(data, rules))
