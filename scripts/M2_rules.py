"""Replay step 9b with a neighbour margin on ``M_collect.py`` / ``M2_cells_collect.py`` output
(issue 19, helper M2, 2026-12-06).

Rule ``(level, margin)``: step 9b (streams of 96-127 samples where the detector abstained;
the refused candidate with 4-5 whole cycles, which must also be the phase-ANOVA winner over
periods 3 .. n // 3, claimed if its p-value times their number is below ``level``) plus:
the candidate's ANOVA log p-value must be below those of BOTH neighbours ``T - 1`` and
``T + 1`` by at least ``margin`` (natural log units; 0 is step 9b as on main). Four whole
cycles hardly separate ``T`` from ``T +- 1``: the margin refuses a winner whose neighbour
is nearly as good.

The recorded answers are those of the installed detector (main, step 9b at 2e-4 on), so a
rule can only ADD claims to them; rows main already claimed are kept as they are.

Printed per rule: aperiodic claims (total, worst family, worst cell), periodic exact /
wrong, phase-jump exact / wrong; and per (T, n, eps0) or held-out cell exact / wrong (and
fv / ac exact where recorded).

Run: ``python scripts/M2_rules.py DATA.jsonl "[(level, margin), ...]"``.
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter, defaultdict

from M_rules import SHORT_STREAM

SHORT_CYCLES_STREAM = 128


def rule_answer(row: dict, rule: tuple) -> int | None:
    """The answer of the detector plus step 9b at ``rule = (level, margin)``."""
    level, margin = rule
    n, answer, candidate = row["n"], row["answer"], row["candidate"]
    if answer is not None or not SHORT_STREAM <= n < SHORT_CYCLES_STREAM:
        return answer
    if candidate is None or not 3 <= candidate <= n // 3 or not 4 <= n // candidate <= 5:
        return None
    logps = row["anova"]  # periods 3 .. n // 3
    at = candidate - 3
    if min(range(len(logps)), key=lambda i: logps[i]) != at:
        return None
    if math.exp(logps[at]) * len(logps) >= level:
        return None
    neighbours = [logps[i] for i in (at - 1, at + 1) if 0 <= i < len(logps)]
    if neighbours and min(neighbours) - logps[at] < margin:
        return None
    return candidate


def summary(rows: list[dict], rule: tuple) -> None:
    fam, cell = Counter(), Counter()
    exact, wrong, jump_exact, jump_wrong = 0, 0, 0, 0
    shapes = defaultdict(lambda: [0, 0, 0, 0, 0])
    for row in rows:
        got = rule_answer(row, rule)
        if "kind" in row:
            fam[row["kind"]] += got is not None
            cell[(row["kind"], row["n"], row["eps0"])] += got is not None
        elif "source" in row:
            ok, bad = got == row["period"], got is not None and got != row["period"]
            exact, wrong = exact + ok, wrong + bad
            key = (
                (row["source"], row["period"], row["n"], row["eps0"])
                if "fv" in row
                else (row["period"], row["n"], row["eps0"])
            )
            entry = shapes[key]
            entry[0] += ok
            entry[1] += bad
            entry[2] += row.get("fv") == row["period"]
            entry[3] += row.get("ac") == row["period"]
            entry[4] += 1
        else:
            jump_exact += got == row["period"]
            jump_wrong += got is not None and got != row["period"]
    worst_family = max(fam.items(), key=lambda kv: kv[1]) if fam else None
    worst_cell = max(cell.items(), key=lambda kv: kv[1]) if cell else None
    print(
        f"{rule}: aperiodic {sum(fam.values())} worst family {worst_family} worst cell "
        f"{worst_cell}; periodic exact {exact} wrong {wrong}; jumps exact {jump_exact} "
        f"wrong {jump_wrong}",
        flush=True,
    )
    for key, (ok, bad, fv, ac, total) in sorted(shapes.items(), key=str):
        if key[-2] < SHORT_CYCLES_STREAM and key[-2] >= SHORT_STREAM:
            print(f"    {key} of {total}: exact {ok} wrong {bad} (fv {fv} ac {ac})")


if __name__ == "__main__":
    with open(sys.argv[1]) as handle:
        data = [json.loads(line) for line in handle]
    for rule in eval(sys.argv[2]):  # a command-line list of tuples
        summary(data, rule)
