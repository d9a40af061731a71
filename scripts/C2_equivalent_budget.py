"""Helper C2 (issue 19): for each cell of seed 000's Table 8 (Occupancy), the budget at
which OUR bench reaches the seed's F1 for that method ("equivalent budget", by log-linear
interpolation of our F1 over a fine budget grid, 10 draws each, kept readings).  A
reading that only rescales the noise (window length, clipping width, the sensitivity,
how the budget is counted) multiplies every equivalent budget of a method by one
constant; so if the ratio equivalent/seed budget varies along a row, no such reading
fits the row.

    python scripts/C2_equivalent_budget.py [--test-file F] [--readings R]
"""

from __future__ import annotations

import argparse

import numpy as np
from ldpfleet.app import bench_gcdp as b
from ldpfleet.app.gcdp_datasets import parse_readings, prepare

METHODS = ("Lap-DP", "Gau-DP", "Ada-DP", "Risk-DP", "GC-DP")
EPS = (0.2, 0.5, 1.0, 2.0, 4.0)
GRID = tuple(float(v) for v in np.round(np.geomspace(0.05, 16.0, 34), 4))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--test-file")
    ap.add_argument("--readings", default="")
    ap.add_argument("--draws", type=int, default=10)
    args = ap.parse_args()
    prep = prepare("occupancy", readings=parse_readings(args.readings), test_file=args.test_file)
    tau, _ = b.select_tau(prep, args.draws, 0)
    cal = b._calibrate_prepared(prep, tau)
    seed = b.SEED_TABLES["occupancy"]["f1"]
    ceiling = b._mean_f1("NonPrivate", prep, prep.test_f, prep.test_l, cal, 1.0, 1, 0)[0]
    print(f"tau {tau}; our NonPrivate {ceiling:.1f}")
    print("method | per seed budget 0.2 / 0.5 / 1 / 2 / 4: equivalent budget (ratio)")
    for m in METHODS:
        f1 = np.array(
            [b._mean_f1(m, prep, prep.test_f, prep.test_l, cal, e, args.draws, 0)[0] for e in GRID]
        )
        run = np.maximum.accumulate(f1)  # monotone envelope for the inversion
        cells = []
        for e in EPS:
            target = seed[m][e]
            if target > run[-1]:
                cells.append(f"> {GRID[-1]} (never: our max {run[-1]:.1f})")
                continue
            i = int(np.argmax(run >= target))
            if i == 0:
                eq = GRID[0]
            else:
                lo, hi = run[i - 1], run[i]
                w = 0.0 if hi == lo else (target - lo) / (hi - lo)
                eq = float(
                    np.exp(np.log(GRID[i - 1]) + w * (np.log(GRID[i]) - np.log(GRID[i - 1])))
                )
            cells.append(f"{eq:.2f} (x{eq / e:.2f})")
        print(f"{m}: " + " / ".join(cells), flush=True)


if __name__ == "__main__":
    main()
