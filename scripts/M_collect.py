"""Data for choosing a step-9 extension to 4-6-cycle streams of 96-199 samples (issue 19,
helper M, 2026-12-06; docs/preregistration/M-short-anova-cycles.md).

For every stream: the installed ``detect_period``'s answer and ``candidate`` (at n >=
``SHORT_STREAM`` an abstention means steps 4-8 abstained, so any step-9-like rule only adds
to it), and the log p-value of the one-way phase ANOVA (``anova_logp``) at every period
with >= 3 whole cycles: enough to replay any rule "claim the ANOVA winner of a period set
if its p-value times the set's size is below a level and its cycles lie in a window"
offline.

Streams: the eight families of ``cpr_short_limit.py`` at n in ``LENGTHS`` x eps0 0.2, 1, 5
x TRIALS (seeds ``[SEED, family, n, eps0 x 10, trial]``); the 11 held-out sources at
``SHAPES`` x eps0 x TRIALS // 10 (``[SEED + 1, ...]``); the phase-jump cells of
``app/cpr_phase_jumps.py`` shorter than 200 samples x TRIALS // 10 (``[SEED + 2, ...]``).

Run: ``nice -n 5 python scripts/M_collect.py SEED TRIALS OUT.jsonl``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from ldpfleet.app import cpr_phase_jumps as pj
from ldpfleet.app.bench_cpr import grid_template
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as grid
from cpr_short_limit import FAMILIES, null_stream

LENGTHS = (96, 100, 110, 128, 150, 199)
SHAPES = (
    (23, 100),
    (30, 100),
    (12, 96),
    (24, 96),
    (20, 110),
    (25, 100),
    (40, 120),
    (30, 150),
    (50, 150),
    (40, 199),
    (16, 100),
)


def record(x: np.ndarray, **fields) -> str:
    """One JSON line: the fields, the detector's answer and the ANOVA log p-values."""
    n = x.size
    estimate = P.detect_period(x)
    logps = [round(P.anova_logp(x, q), 3) for q in range(3, n // 3 + 1)]
    row = {"n": n, "answer": estimate.period, "candidate": estimate.candidate, "anova": logps}
    return json.dumps({**fields, **row})


def main(seed: int, trials: int, out: str) -> None:
    with open(out, "w") as handle:
        for fi, family in enumerate(FAMILIES):
            for n in LENGTHS:
                for eps0 in grid.EPS0:
                    for trial in range(trials):
                        rng = np.random.default_rng([seed, fi, n, int(eps0 * 10), trial])
                        x = SquareWave(eps0).perturb(null_stream(family, n, rng), rng)
                        handle.write(record(x, kind=family, eps0=eps0) + "\n")
        for si, source in enumerate(grid.SOURCES):
            for period, n in SHAPES:
                for eps0 in grid.EPS0:
                    for trial in range(max(1, trials // 10)):
                        rng = np.random.default_rng(
                            [seed + 1, si, period, n, int(eps0 * 10), trial]
                        )
                        x = SquareWave(eps0).perturb(grid.clean_stream(source, period, n, rng), rng)
                        row = record(x, source=source, period=period, eps0=eps0)
                        handle.write(row + "\n")
        for index, (kind, period, cycles, eps0, jumps) in enumerate(pj.cells()):
            if period * cycles >= 200:
                continue
            for trial in range(max(1, trials // 10)):
                rng = np.random.default_rng([seed + 2, index, trial])
                clean = pj.jump_stream(
                    grid_template(kind, period, rng), period * cycles, jumps, rng
                )
                x = SquareWave(eps0).perturb(clean, rng)
                handle.write(record(x, jump=kind, period=period, eps0=eps0) + "\n")
            handle.flush()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
