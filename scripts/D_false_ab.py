"""Paired false claims, old against new ``detect_period``, on ``bench_cpr``'s aperiodic
streams (``trial_rng(SEED, "aperiodic", trial, "KIND/N/EPS0")``), with no assumption on the
direction of a change (issue 19, helper D; ``cpr_false_claims_ab.py`` asserts that new
claims are old claims).

Run: ``python scripts/D_false_ab.py OLD SEED TRIALS KIND/N/EPS0 ...``; prints per cell the
old and new claims and every trial whose answer changed.
"""

from __future__ import annotations

import sys

from ldpfleet.app.bench_cpr import aperiodic_stream, trial_rng
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from cpr_period_ab import load_old


def main(argv: list[str]) -> None:
    old = load_old(argv[0])
    seed, trials = int(argv[1]), int(argv[2])
    total_old = total_new = 0
    for cell in argv[3:]:
        kind, n, eps0 = cell.split("/")
        claims_old = claims_new = 0
        changed = []
        for trial in range(trials):
            rng = trial_rng(seed, "aperiodic", trial, f"{kind}/{int(n)}/{float(eps0)}")
            y = SquareWave(float(eps0)).perturb(aperiodic_stream(kind, int(n), rng), rng)
            new, before = detect_period(y).period, old.detect_period(y).period
            claims_old += before is not None
            claims_new += new is not None
            if new != before:
                changed.append((trial, before, new))
        total_old += claims_old
        total_new += claims_new
        print(
            f"{cell}: old {claims_old} new {claims_new} of {trials}; changed {changed}", flush=True
        )
    print(f"total old {total_old} new {total_new}")


if __name__ == "__main__":
    main(sys.argv[1:])
