"""Helper J: detect_period on Occupancy daily windows (helper H's streams) with step 3c's old
rule (``VETO_CHECKS_MULTIPLE = True``) and the new one (False), raw and with SW noise.

    python scripts/J_repro.py COLUMN MINUTES TRIALS SEED [EPS0 ...]   # EPS0 0 = raw readings

Windows: ``H_user_streams.daily_stream`` (10 whole days), rng ``[SEED, 2, ci, eps0*10, trial]``
with ci = helper H's cell index of (COLUMN, MINUTES); SEED 7310041 is helper H's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import H_user_streams as H
from ldpfleet.collector import period, period_search

import ldpfleet

if not hasattr(period_search, "VETO_CHECKS_MULTIPLE"):  # the rule FAILED and is not on main
    sys.exit(
        "J_repro.py needs the VETO_CHECKS_MULTIPLE switch: git apply "
        "docs/preregistration/J-vetoed-multiple.diff"
    )


def answers(x: np.ndarray) -> tuple[int | None, int | None]:
    """(old, new) answers of ``detect_period`` on ``x``."""
    out = []
    for flag in (True, False):
        period.VETO_CHECKS_MULTIPLE = flag
        out.append(ldpfleet.detect_period(x).period)
    period.VETO_CHECKS_MULTIPLE = False
    return out[0], out[1]


def main(argv: list[str]) -> None:
    """Print old/new answers per window and the exact-match totals."""
    name, minutes, trials, seed = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    eps = [float(e) for e in argv[4:]] or [0.0]
    cells = [(c, b) for c in ("Temperature", "Humidity", "Light", "CO2") for b in (30, 10, 5)]
    ci = cells.index((name, minutes))
    truth = 1440 // minutes
    for eps0 in eps:
        tally = {"old": 0, "new": 0, "changed": 0}
        for trial in range(trials):
            rng = np.random.default_rng([seed, 2, ci, int(eps0 * 10), trial])
            x = H.daily_stream(name, minutes, 10, rng)
            if eps0 > 0:
                x = ldpfleet.SquareWave(eps0).perturb(x, rng)
            old, new = answers(x)
            tally["old"] += old == truth
            tally["new"] += new == truth
            tally["changed"] += old != new
            print(f"{name} {minutes} eps0={eps0} trial {trial}: old {old} new {new}")
        print(f"== {name} {minutes} eps0={eps0} T={truth}: exact old/new", tally, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
