"""Helper G, exploratory (after the pre-registered verdict; not part of its criteria): step
3c's named-period margin on phase-jump streams (``cpr_phase_jumps.cells()``: 240 cells), paired
per stream, margin as set against None, computed with the margin only where a veto was seen
(elsewhere the answers are equal by construction; scripts/G_ab.py).

    python scripts/G_jumps.py SEED TRIALS
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import G_ab
from ldpfleet.app import bench_cpr as b
from ldpfleet.app import cpr_phase_jumps as pj
from ldpfleet.collector import period_search
from ldpfleet.protocol.sw import SquareWave


def _grade(answer: int | None, period: int) -> str:
    if answer is None:
        return "none"
    if answer == period:
        return "exact"
    return "near" if abs(answer - period) <= max(1, round(0.01 * period)) else "wrong"


def main(seed: int, trials: int) -> None:
    """Print each changed stream and the old -> new grade counts."""
    margin = 7.0 if period_search.VETO_NAMED_MARGIN is None else period_search.VETO_NAMED_MARGIN
    moves: Counter = Counter()
    total = vetoes = 0
    for i, (kind, period, cycles, eps0, jumps) in enumerate(pj.cells()):
        for trial in range(trials):
            rng = np.random.default_rng([seed, i, trial])
            cycle = b.grid_template(kind, period, rng)
            clean = pj.jump_stream(cycle, period * cycles, jumps, rng)
            y = SquareWave(eps0).perturb(clean, rng)
            r = G_ab.measure(y)
            total += 1
            vetoes += r["veto"]
            new = G_ab.new_answer(r, margin)
            if new != r["old"]:
                grades = (_grade(r["old"], period), _grade(new, period))
                moves[grades] += 1
                print(f"{kind}/{period}/{cycles}/{eps0}/{jumps} trial {trial}: {r['old']} -> {new}")
    print(f"streams {total}, vetoes {vetoes}, changed {sum(moves.values())}")
    for (old, new), count in moves.most_common():
        print(f"  {old} -> {new}: {count}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
