"""Old against new ``detect_period`` on the streams step 9b can change (issue 19, helper M,
2026-12-06; docs/preregistration/M-short-anova-cycles.md): streams of ``SHORT_STREAM`` to
``SHORT_CYCLES_STREAM`` samples.

Aperiodic: the eight families of ``cpr_short_limit.py`` at n in ``LENGTHS`` x eps0 0.2, 1, 5
x TRIALS (seeds ``[SEED, family, n, eps0 x 10, trial]``): claims old / new per family, per
(family, n) and the worst (family, n, eps0) cell. Periodic: the 11 held-out sources at
``M_collect.SHAPES`` x eps0 x TRIALS // 10 (``[SEED + 1, ...]``) and the phase-jump cells of
``app/cpr_phase_jumps.py`` shorter than 200 samples x TRIALS // 10 (``[SEED + 2, ...]``):
exact and wrong answers old / new.

Run: ``nice -n 5 python scripts/M_ab.py OLD SEED TRIALS`` (OLD: ``git show
main:collector/period.py > OLD``).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
from ldpfleet.app import cpr_phase_jumps as pj
from ldpfleet.app.bench_cpr import grid_template
from ldpfleet.collector import period as new_module
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as grid
from cpr_period_ab import load_old
from cpr_short_limit import FAMILIES, null_stream
from M_collect import SHAPES

LENGTHS = (96, 100, 105, 110, 115, 120, 127)


def _aperiodic(both, seed: int, trials: int) -> None:
    claims = {}
    for fi, family in enumerate(FAMILIES):
        for n in LENGTHS:
            for eps0 in grid.EPS0:
                row = claims.setdefault((family, n, eps0), [0, 0, 0])
                for t in range(trials):
                    rng = np.random.default_rng([seed, fi, n, int(eps0 * 10), t])
                    a, b = both(SquareWave(eps0).perturb(null_stream(family, n, rng), rng))
                    row[0] += a is not None
                    row[1] += b is not None
                    row[2] += 1
    total = [sum(r[i] for r in claims.values()) for i in range(3)]
    print(f"aperiodic: claims old {total[0]} new {total[1]} of {total[2]}")
    for family in FAMILIES:
        sub = {k: r for k, r in claims.items() if k[0] == family}
        per_n = Counter()
        for (_, n, _), r in sub.items():
            per_n[n] += r[1]
        print(
            f"  {family}: old {sum(r[0] for r in sub.values())} new "
            f"{sum(r[1] for r in sub.values())} of {sum(r[2] for r in sub.values())}; "
            f"new per n {dict(per_n)}"
        )
    worst = max(claims.items(), key=lambda kv: kv[1][1])
    print(f"  worst cell new: {worst[0]} {worst[1][1]} of {worst[1][2]} (old {worst[1][0]})")


def _score(rows: dict, key, period: int, a, b) -> None:
    row = rows.setdefault(key, [0, 0, 0, 0, 0])
    row[0] += a == period
    row[1] += b == period
    row[2] += a is not None and a != period
    row[3] += b is not None and b != period
    row[4] += 1


def _print_rows(title: str, rows: dict) -> None:
    for key, (e_old, e_new, w_old, w_new, count) in sorted(rows.items()):
        if (e_old, w_old) != (e_new, w_new):
            print(f"  {key}: of {count} exact {e_old} -> {e_new}, wrong {w_old} -> {w_new}")
    sums = [sum(r[i] for r in rows.values()) for i in range(5)]
    print(
        f"{title} totals: exact {sums[0]} -> {sums[1]}, wrong {sums[2]} -> {sums[3]} of {sums[4]}"
    )


def main(old_path: str, seed: int, trials: int) -> None:
    old_module = load_old(old_path)

    def both(y):
        return old_module.detect_period(y).period, new_module.detect_period(y).period

    _aperiodic(both, seed, trials)
    rows: dict = {}
    for si, source in enumerate(grid.SOURCES):
        for period, n in SHAPES:
            for eps0 in grid.EPS0:
                for t in range(max(1, trials // 10)):
                    rng = np.random.default_rng([seed + 1, si, period, n, int(eps0 * 10), t])
                    x = SquareWave(eps0).perturb(grid.clean_stream(source, period, n, rng), rng)
                    _score(rows, (period, n, eps0), period, *both(x))
    _print_rows("periodic", rows)
    jumps: dict = {}
    for index, (kind, period, cycles, eps0, count) in enumerate(pj.cells()):
        if period * cycles >= 200:
            continue
        for t in range(max(1, trials // 10)):
            rng = np.random.default_rng([seed + 2, index, t])
            clean = pj.jump_stream(grid_template(kind, period, rng), period * cycles, count, rng)
            x = SquareWave(eps0).perturb(clean, rng)
            _score(jumps, (kind, period, cycles, eps0, count), period, *both(x))
    _print_rows("phase jumps", jumps)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
