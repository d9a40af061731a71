"""Old against new ``detect_period`` on every stream of the held-out and phase-jump checks
that the short-stream penalty can change (issue 19, helper A, 2026-12-05): only streams of
fewer than ``SHORT_STREAM`` samples take another path, i.e. the held-out cells (8, 24) and
(23, 100) (docs/cpr.md "Held-out streams (2026-12-05)", seed 94117, 20 trials), the held-out
aperiodic cells at n = 24 and 100 (150 trials), and the phase-jump cells at T = 12 with 8
cycles, n = 96 (``app/cpr_phase_jumps.py``, seed 779; TRIALS trials, 20 in docs/cpr.md).

Per periodic cell: exact answers old / new / folded variance / autocorrelation, wrong
answers old / new, and the paired sign test against each baseline (below at p < 0.05 and
clearly below at p < 0.05 / 308 for the held-out grid, 0.05 / 240 for the phase jumps).

Run: ``nice -n 5 python scripts/cpr_short_changed.py OLD TRIALS``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from ldpfleet.app import cpr_phase_jumps as pj
from ldpfleet.app.bench_cpr import (
    autocorrelation_period,
    folded_variance_period,
    grid_template,
    sign_test_p,
)
from ldpfleet.collector import period as new_module
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as grid
from cpr_period_ab import load_old


def _score(name: str, streams, period: int, old_module, level: float) -> tuple:
    counts = dict.fromkeys(("old", "new", "fv", "ac", "wrong_old", "wrong_new"), 0)
    pairs = {k: {"fv": [0, 0], "ac": [0, 0]} for k in ("old", "new")}
    for reports in streams:
        got = {
            "old": old_module.detect_period(reports).period,
            "new": new_module.detect_period(reports).period,
            "fv": folded_variance_period(reports),
            "ac": autocorrelation_period(reports),
        }
        for key in ("old", "new", "fv", "ac"):
            counts[key] += got[key] == period
        for key in ("old", "new"):
            counts[f"wrong_{key}"] += got[key] is not None and got[key] != period
            for base in ("fv", "ac"):
                pairs[key][base][0] += got[base] == period and got[key] != period
                pairs[key][base][1] += got[key] == period and got[base] != period
    below = {key: min(sign_test_p(*pairs[key][b]) for b in ("fv", "ac")) for key in ("old", "new")}
    flag = {k: ("clearly" if v < level else "below" if v < 0.05 else "-") for k, v in below.items()}
    print(
        f"{name}: exact old {counts['old']} new {counts['new']} fv {counts['fv']} "
        f"ac {counts['ac']}; wrong old {counts['wrong_old']} new {counts['wrong_new']}; "
        f"below a baseline old {flag['old']} new {flag['new']}",
        flush=True,
    )
    return counts, flag


def main(old_path: str, trials: int) -> None:
    old_module = load_old(old_path)
    totals = {}
    for index, cell in enumerate(grid.periodic_cells()):
        _source, period, n, _eps0 = cell
        if n >= new_module.SHORT_STREAM:
            continue

        def held(index=index, cell=cell):
            for trial in range(20):
                rng = np.random.default_rng([grid.SEED, index, trial])
                yield SquareWave(cell[3]).perturb(grid.clean_stream(*cell[:3], rng), rng)

        counts, flag = _score(f"held-out {cell}", held(), period, old_module, 0.05 / 308)
        for key, value in counts.items():
            totals[key] = totals.get(key, 0) + value
        for key in ("old", "new"):
            totals[f"below_{key}"] = totals.get(f"below_{key}", 0) + (flag[key] != "-")
            totals[f"clearly_{key}"] = totals.get(f"clearly_{key}", 0) + (flag[key] == "clearly")
    print(f"held-out short cells, totals: {totals}", flush=True)
    claims = [0, 0, 0]
    for index, (kind, n, eps0) in enumerate(
        (k, n, e) for k in grid.APERIODIC for n in grid.APERIODIC_N for e in grid.EPS0
    ):
        if n >= new_module.SHORT_STREAM:
            continue
        for trial in range(150):
            rng = np.random.default_rng([grid.SEED, 10_000 + index, trial])
            x = SquareWave(eps0).perturb(grid.aperiodic(kind, n, rng), rng)
            a = old_module.detect_period(x).period
            b = new_module.detect_period(x).period
            claims[0] += a is not None
            claims[1] += b is not None
            claims[2] += 1
            if a != b:
                print(f"  aperiodic changed: {kind} n={n} eps0={eps0} trial {trial}: {a} -> {b}")
    print(
        f"held-out aperiodic n < SHORT_STREAM: claims old {claims[0]} new {claims[1]} "
        f"of {claims[2]}",
        flush=True,
    )
    totals = {}
    for index, cell in enumerate(pj.cells()):
        _kind, period, cycles, _eps0, _jumps = cell
        if period * cycles >= new_module.SHORT_STREAM:
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
        for key, value in counts.items():
            totals[key] = totals.get(key, 0) + value
        for key in ("old", "new"):
            totals[f"below_{key}"] = totals.get(f"below_{key}", 0) + (flag[key] != "-")
            totals[f"clearly_{key}"] = totals.get(f"clearly_{key}", 0) + (flag[key] == "clearly")
    print(f"phase-jump short cells, totals: {totals}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
