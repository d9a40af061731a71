"""Does the installed step 9b give the answer ``M2_rules.py`` replays? (issue 19, helper M2)

Regenerates the streams of ``M2_cells_collect.py SEED TRIALS`` (the recorded answers are
main's) and compares ``detect_period`` with ``M2_rules.rule_answer(row, RULE)`` on each.

Run: ``python scripts/M2_replay_check.py DATA.jsonl SEED TRIALS "(level, margin)"``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as grid
from cpr_short_limit import BELOW
from M2_rules import rule_answer


def main(path: str, seed: int, trials: int, rule: tuple) -> None:
    with open(path) as handle:
        rows = iter([json.loads(line) for line in handle])
    cells, checked, mismatches = grid.periodic_cells(), 0, 0
    for cell in BELOW:
        source, period, n, eps0 = cell
        if not P.SHORT_STREAM <= n < P.SHORT_CYCLES_STREAM:
            continue
        index = cells.index(cell)
        for trial in range(trials):
            rng = np.random.default_rng([seed, index, trial])
            x = SquareWave(eps0).perturb(grid.clean_stream(source, period, n, rng), rng)
            row = next(rows)
            got, want = P.detect_period(x).period, rule_answer(row, rule)
            checked += 1
            if got != want:
                mismatches += 1
                print(f"  mismatch {cell} trial {trial}: installed {got} replayed {want}")
    print(f"{checked} streams, {mismatches} mismatches")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), eval(sys.argv[4]))
