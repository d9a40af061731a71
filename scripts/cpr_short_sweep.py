"""Short streams: which few-cycles penalty slope could a short stream afford? (issue 19,
helper A, 2026-12-05). For every stream, ``detect_period``'s answer with ``PENALTY_SLOPE``
set to each of ``SLOPES`` (the module constant, patched for the call; everything else as
installed). Aperiodic: the eight families of ``cpr_short_limit.py`` at n in ``LENGTHS``,
SW at eps0 0.2, 1, 5, TRIALS each (seeds ``[SEED, family, n, eps0 x 10, trial]``); periodic:
the 11 held-out sources at (T, n) in ``SHAPES``, eps0 0.2, 1, 5, TRIALS // 10 each (seeds
``[SEED + 1, source, T, n, eps0 x 10, trial]``). Calibration seed 88001, evaluation seed
88011 (neither used elsewhere).

Run: ``nice -n 5 python scripts/cpr_short_sweep.py SEED TRIALS OUT.jsonl``; then
``python scripts/cpr_short_sweep.py summary OUT.jsonl`` (claims per cell and slope; exact
answers per periodic cell and slope).
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
from cpr_short_limit import FAMILIES, null_stream

SLOPES = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
LENGTHS = (24, 30, 36, 50, 75, 100, 150, 200)
SHAPES = (
    (8, 24),
    (10, 30),
    (12, 36),
    (8, 40),
    (16, 50),
    (23, 100),
    (30, 100),
    (50, 150),
    (40, 200),
)


def answers(x: np.ndarray) -> list:
    """``detect_period(x).period`` at every slope of ``SLOPES``."""
    saved = P.PENALTY_SLOPE
    try:
        out = []
        for slope in SLOPES:
            P.PENALTY_SLOPE = slope
            out.append(P.detect_period(x).period)
        return out
    finally:
        P.PENALTY_SLOPE = saved


def main(seed: int, trials: int, out: str) -> None:
    with open(out, "w") as handle:
        for fi, family in enumerate(FAMILIES):
            for n in LENGTHS:
                for eps0 in grid.EPS0:
                    got = []
                    for trial in range(trials):
                        rng = np.random.default_rng([seed, fi, n, int(eps0 * 10), trial])
                        x = SquareWave(eps0).perturb(null_stream(family, n, rng), rng)
                        got.append(answers(x))
                    row = {"kind": family, "n": n, "eps0": eps0, "answers": got}
                    handle.write(json.dumps(row) + "\n")
                    handle.flush()
        for si, source in enumerate(grid.SOURCES):
            for period, n in SHAPES:
                for eps0 in grid.EPS0:
                    got = []
                    for trial in range(max(1, trials // 10)):
                        rng = np.random.default_rng(
                            [seed + 1, si, period, n, int(eps0 * 10), trial]
                        )
                        clean = grid.clean_stream(source, period, n, rng)
                        got.append(answers(SquareWave(eps0).perturb(clean, rng)))
                    row = {"source": source, "period": period, "n": n, "eps0": eps0}
                    handle.write(json.dumps({**row, "answers": got}) + "\n")
                    handle.flush()


def summary(path: str) -> str:
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line]
    lines = ["aperiodic: claims per n (all families and eps0) at slopes " + str(SLOPES)]
    null = [r for r in rows if "kind" in r]
    for n in LENGTHS:
        sub = [r for r in null if r["n"] == n]
        total = sum(len(r["answers"]) for r in sub)
        claims = [
            sum(a[i] is not None for r in sub for a in r["answers"]) for i in range(len(SLOPES))
        ]
        worst = [
            max(sum(a[i] is not None for a in r["answers"]) for r in sub)
            for i in range(len(SLOPES))
        ]
        lines.append(f"n={n}: of {total}: claims {claims}; worst cell {worst}")
    lines.append("periodic: exact / wrong per (T, n, eps0) summed over the sources")
    per = [r for r in rows if "source" in r]
    for period, n in SHAPES:
        for eps0 in grid.EPS0:
            sub = [r for r in per if (r["period"], r["n"], r["eps0"]) == (period, n, eps0)]
            if not sub:
                continue
            exact = [
                sum(a[i] == period for r in sub for a in r["answers"]) for i in range(len(SLOPES))
            ]
            wrong = [
                sum(a[i] is not None and a[i] != period for r in sub for a in r["answers"])
                for i in range(len(SLOPES))
            ]
            total = sum(len(r["answers"]) for r in sub)
            lines.append(f"({period},{n}) eps0={eps0:g} of {total}: exact {exact} wrong {wrong}")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "summary":
        print(summary(sys.argv[2]))
    else:
        main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
