"""Paired false claims of an old and the new ``detect_period`` on aperiodic streams.

The streams of ``python -m ldpfleet.app.bench_cpr false-claims TRIALS 1 CELL ...`` (same
trial seeds: ``trial_rng(SEED, "aperiodic", trial, "KIND/N/EPS0")``). For a change that
only turns abstentions into claims (step 8), the old detector runs only where the new one
claims, and must then give the same answer or abstain (asserted).

Run: ``python scripts/cpr_false_claims_ab.py OLD SEED TRIALS KIND/N/EPS0 ...``, e.g.
``python scripts/cpr_false_claims_ab.py /tmp/period_old.py 405 2000 ar1_0.9/1000/5``.
"""

from __future__ import annotations

import sys

from ldpfleet.app.bench_cpr import aperiodic_stream, trial_rng
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from cpr_period_same import load_old
from ldpfleet.app.bench_cpr import claims_upper95


def cell_claims(old, seed: int, trials: int, cell: str) -> tuple[int, int, list]:
    """(old claims, new claims, [(trial, period) of each claim only the new one makes]) on
    one cell's ``trials`` streams."""
    kind, n, eps0 = cell.split("/")
    claims_old = claims_new = 0
    added = []
    for trial in range(trials):
        rng = trial_rng(seed, "aperiodic", trial, f"{kind}/{int(n)}/{float(eps0)}")
        y = SquareWave(float(eps0)).perturb(aperiodic_stream(kind, int(n), rng), rng)
        new = detect_period(y).period
        before = old.detect_period(y).period if new is not None else None
        assert before is None or before == new, (cell, trial, before, new)
        claims_old += before is not None
        claims_new += new is not None
        if before is None and new is not None:
            added.append((trial, new))
    return claims_old, claims_new, added


if __name__ == "__main__":
    old_module = load_old(sys.argv[1])
    seed, trials = int(sys.argv[2]), int(sys.argv[3])
    for cell in sys.argv[4:]:
        before, after, added = cell_claims(old_module, seed, trials, cell)
        upper = claims_upper95(after, trials)
        print(
            f"seed {seed} {cell}: old {before} ({100 * before / trials:.2f} %), new {after} "
            f"({100 * after / trials:.2f} %, 95 % upper {100 * upper:.2f} %) of {trials}; "
            f"added (trial, period): {added}",
            flush=True,
        )
