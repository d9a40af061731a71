"""Why ``detect_period`` is below a baseline on the short-stream cells (issue 19, claim C2,
helper B, 2026-12-06).

Re-runs the cells where C2 fails and classifies every trial in which a baseline (folded
variance ``fv`` or autocorrelation ``ac``) names the true period and ``detect_period`` does
not:

- ``abstain@T``: the detector abstained, its refused candidate WAS the true period (a gate
  refused it); ``gap`` = log10 of the adjusted p-value over the gate's threshold at the
  candidate (how far it missed);
- ``abstain@other``: abstained, candidate another period (neighbour / multiple / divisor /
  other);
- ``wrong:KIND``: claimed a wrong period, KIND neighbour (within ``max(1, T^2 / n)``),
  multiple, divisor or other.

Cells: ``grid`` = the grid's (50, 3) cells (11 sources x 5 eps0, jitter 0.02, seed 0, 40
trials: ``bench_cpr --grid``'s own streams); ``held`` = the held-out user cells at (8, 24)
and (23, 100) (``scripts/cpr_user_heldout.py``, seed 94117, 20 trials, its own streams).
A cell is below a baseline when the paired one-sided sign test gives p < 0.05.

Run: ``nice -n 5 python scripts/B2_causes.py grid|held [TRIALS] [SEED] > OUT.txt``.
"""

from __future__ import annotations

import collections
import math
import sys
from pathlib import Path

import numpy as np
from ldpfleet.app.bench_cpr_grid import GRID_EPS0, GRID_SOURCES, sign_test_p
from ldpfleet.app.cpr_grid_streams import grid_stream, grid_template, source_name, trial_rng
from ldpfleet.app.cpr_period_baselines import autocorrelation_period, folded_variance_period
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as held


def kind_of(answer: int, period: int, n: int) -> str:
    if abs(answer - period) <= max(1, period * period // n):
        return "neighbour"
    for m in range(2, 9):
        if abs(answer - m * period) <= m:
            return f"multiple{m}"
        if abs(answer - period / m) <= 1:
            return f"divisor{m}"
    return "other"


def gate_gap(est, n: int) -> float | None:
    """log10(adjusted p / penalised threshold) at the refused candidate (> 0: missed)."""
    if est.candidate is None or est.p_value <= 0:
        return None
    k = n / est.candidate
    log_threshold = math.log(P.DEFAULT_ALPHA) + P.few_cycles_penalty(k, n)
    return (math.log(est.p_value) - log_threshold) / math.log(10)


def streams_grid(trials: int, seed: int):
    period, cycles = 50, 3
    for source in GRID_SOURCES:
        for eps0 in GRID_EPS0:
            tag = f"{source_name(source)}/{period}/{cycles}/{eps0}/0.02/0.0"

            def gen(source=source, eps0=eps0, tag=tag):
                for trial in range(trials):
                    rng = trial_rng(seed, "grid", trial, tag)
                    clean = grid_stream(grid_template(source, period, rng), 150, rng, 0.02, 0.0)
                    yield SquareWave(eps0).perturb(clean, rng)

            yield (source, period, 150, eps0), gen()


def streams_held(trials: int, seed: int):
    for index, cell in enumerate(held.periodic_cells()):
        _, period, n, _ = cell
        if (period, n) not in ((8, 24), (23, 100)):
            continue

        def gen(index=index, cell=cell):
            for trial in range(trials):
                rng = np.random.default_rng([seed, index, trial])
                yield SquareWave(cell[3]).perturb(held.clean_stream(*cell[:3], rng), rng)

        yield cell, gen()


def main(which: str, trials: int, seed: int) -> None:
    cells = streams_grid(trials, seed) if which == "grid" else streams_held(trials, seed)
    causes_all: collections.Counter = collections.Counter()
    below_cells = 0
    total = collections.Counter()
    for cell, gen in cells:
        _, period, n, _ = cell
        hits = collections.Counter()
        ours_only = collections.Counter()
        base_only = collections.Counter()
        causes: collections.Counter = collections.Counter()
        gaps = []
        for x in gen:
            est = P.detect_period(x)
            found = {
                "ours": est.period,
                "fv": folded_variance_period(x),
                "ac": autocorrelation_period(x),
            }
            for name, value in found.items():
                hits[name] += value == period
            for name in ("fv", "ac"):
                ours_only[name] += est.period == period and found[name] != period
                base_only[name] += found[name] == period and est.period != period
            if est.period != period and (found["fv"] == period or found["ac"] == period):
                if est.period is None:
                    if est.candidate == period:
                        causes["abstain@T"] += 1
                        gap = gate_gap(est, n)
                        if gap is not None:
                            gaps.append(gap)
                    elif est.candidate is None:
                        causes["abstain@none"] += 1
                    else:
                        causes["abstain@" + kind_of(est.candidate, period, n)] += 1
                else:
                    causes["wrong:" + kind_of(est.period, period, n)] += 1
        p = {k: sign_test_p(base_only[k], ours_only[k]) for k in ("fv", "ac")}
        below = min(p.values()) < 0.05
        total.update(hits)
        if below:
            below_cells += 1
            causes_all.update(causes)
        gap_text = f" gaps(log10) median {np.median(gaps):.2f}" if gaps else ""
        print(
            f"{'BELOW' if below else 'ok   '} {cell}: ours {hits['ours']} fv {hits['fv']} "
            f"ac {hits['ac']} p_fv {p['fv']:.3g} p_ac {p['ac']:.3g} causes {dict(causes)}"
            f"{gap_text}",
            flush=True,
        )
    print(f"cells below: {below_cells}; exact totals {dict(total)}")
    print(f"causes over the cells below: {dict(causes_all)}")


if __name__ == "__main__":
    which = sys.argv[1]
    trials = int(sys.argv[2]) if len(sys.argv) > 2 else (40 if which == "grid" else 20)
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else (0 if which == "grid" else held.SEED)
    main(which, trials, seed)
