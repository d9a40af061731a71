"""Old against new ``detect_period`` on the streams of the earlier checks that step 9b can
change (issue 19, helper M, 2026-12-06): streams of ``SHORT_STREAM`` to
``SHORT_CYCLES_STREAM`` samples.

- ``cells OLD TRIALS SEED``: the 29 held-out cells below a baseline
  (``cpr_short_limit.BELOW``) on TRIALS FRESH streams each (seeds ``[SEED, cell index,
  trial]`` with the held-out grid's cell index): exact answers old / new / folded variance /
  autocorrelation, wrong old / new, and the paired sign test against each baseline.
- ``grid OLD TRIALS``: as ``cpr_short_changed.py``, but for the lengths step 9b reaches: the
  held-out grid's periodic cells there (seed 94117, 20 trials), its aperiodic cells there
  (150 trials) and the phase-jump cells there (``app/cpr_phase_jumps.py``, seed 779, TRIALS).

Run: ``nice -n 5 python scripts/M_changed.py cells OLD 200 99102`` and ``... grid OLD 20``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from ldpfleet.app import cpr_phase_jumps as pj
from ldpfleet.app.bench_cpr import grid_template
from ldpfleet.collector import period as new_module
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as grid
from cpr_period_ab import load_old
from cpr_short_changed import _score
from cpr_short_limit import BELOW


def _reached(n: int) -> bool:
    return new_module.SHORT_STREAM <= n < new_module.SHORT_CYCLES_STREAM


def _add(totals: dict, counts: dict, flag: dict) -> None:
    for key, value in counts.items():
        totals[key] = totals.get(key, 0) + value
    for key in ("old", "new"):
        totals[f"below_{key}"] = totals.get(f"below_{key}", 0) + (flag[key] != "-")
        totals[f"clearly_{key}"] = totals.get(f"clearly_{key}", 0) + (flag[key] == "clearly")


def main_cells(old_path: str, trials: int, seed: int) -> None:
    old_module = load_old(old_path)
    cells = grid.periodic_cells()
    totals: dict = {}
    for cell in BELOW:
        index = cells.index(cell)

        def fresh(index=index, cell=cell):
            for trial in range(trials):
                rng = np.random.default_rng([seed, index, trial])
                yield SquareWave(cell[3]).perturb(grid.clean_stream(*cell[:3], rng), rng)

        counts, flag = _score(f"fresh {cell}", fresh(), cell[1], old_module, 0.05 / 308)
        _add(totals, counts, flag)
    print(f"29 cells, fresh totals: {totals}")


def main_grid(old_path: str, trials: int) -> None:
    old_module = load_old(old_path)
    totals: dict = {}
    for index, cell in enumerate(grid.periodic_cells()):
        if not _reached(cell[2]):
            continue

        def held(index=index, cell=cell):
            for trial in range(20):
                rng = np.random.default_rng([grid.SEED, index, trial])
                yield SquareWave(cell[3]).perturb(grid.clean_stream(*cell[:3], rng), rng)

        counts, flag = _score(f"held-out {cell}", held(), cell[1], old_module, 0.05 / 308)
        _add(totals, counts, flag)
    print(f"held-out reached cells, totals: {totals}", flush=True)
    claims = [0, 0, 0]
    for index, (kind, n, eps0) in enumerate(
        (k, n, e) for k in grid.APERIODIC for n in grid.APERIODIC_N for e in grid.EPS0
    ):
        if not _reached(n):
            continue
        for trial in range(150):
            rng = np.random.default_rng([grid.SEED, 10_000 + index, trial])
            x = SquareWave(eps0).perturb(grid.aperiodic(kind, n, rng), rng)
            a, b = old_module.detect_period(x).period, new_module.detect_period(x).period
            claims = [claims[0] + (a is not None), claims[1] + (b is not None), claims[2] + 1]
            if a != b:
                print(f"  aperiodic changed: {kind} n={n} eps0={eps0} trial {trial}: {a} -> {b}")
    print(f"held-out aperiodic reached: claims old {claims[0]} new {claims[1]} of {claims[2]}")
    totals = {}
    for index, cell in enumerate(pj.cells()):
        _kind, period, cycles, _eps0, _jumps = cell
        if not _reached(period * cycles):
            continue

        def jumped(index=index, cell=cell):
            kind, period, cycles, eps0, jumps = cell
            for trial in range(trials):
                rng = np.random.default_rng([pj.SEED, index, trial])
                clean = pj.jump_stream(
                    grid_template(kind, period, rng), period * cycles, jumps, rng
                )
                yield SquareWave(eps0).perturb(clean, rng)

        counts, flag = _score(f"phase jumps {cell}", jumped(), period, old_module, 0.05 / 240)
        _add(totals, counts, flag)
    print(f"phase-jump reached cells, totals: {totals}")


if __name__ == "__main__":
    if sys.argv[1] == "cells":
        main_cells(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main_grid(sys.argv[2], int(sys.argv[3]))
