"""Paired old / new answers on the phase-jump check's streams (``cpr_phase_jumps``: cells,
``jump_stream``, seeds ``[SEED, index, trial]``): exact answers each lost and gained, not
only the totals (issue 19, helper D; informational, after step 3c's failed check (c)).

Run: ``python scripts/D_jump_pairs.py OLD NEW SEED TRIALS`` (OLD, NEW: copies of
``collector/period.py``; SEED: ``cpr_phase_jumps.SEED`` or a fresh one).
"""

from __future__ import annotations

import sys

import numpy as np
from ldpfleet.app.bench_cpr import grid_template
from ldpfleet.app.cpr_phase_jumps import cells, jump_stream
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from cpr_period_ab import load_old


def main(argv: list[str]) -> None:
    old = load_old(argv[0]).detect_period
    new = load_old(argv[1]).detect_period
    seed, trials = int(argv[2]), int(argv[3])
    totals = {"old": 0, "new": 0, "lost": 0, "gained": 0, "changed": 0}
    for index, (kind, period, cycles, eps0, jumps) in enumerate(cells()):
        for trial in range(trials):
            rng = np.random.default_rng([seed, index, trial])
            clean = jump_stream(grid_template(kind, period, rng), period * cycles, jumps, rng)
            y = SquareWave(eps0).perturb(clean, rng)
            a, b = old(y).period, new(y).period
            totals["old"] += a == period
            totals["new"] += b == period
            totals["changed"] += a != b
            if a == period and b != period:
                totals["lost"] += 1
                print(f"lost {kind}/{period}/{cycles}/{eps0}/{jumps} trial {trial}: {a} -> {b}")
            totals["gained"] += a != period and b == period
    print(totals)


if __name__ == "__main__":
    main(sys.argv[1:])
