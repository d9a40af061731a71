"""Prototype (helper E, round 3; NOT the landed detector): step 2 also refines and tests
exactly the near-divisors ``round(P / m)``, m = 2 .. 6, of the best refined candidate P, and
keeps whichever has the smallest exact log p-value. Applied by patching
``_Search.refine`` in this process only; compares the answers with and without it.

Run: ``python scripts/E3_proto_divisors.py TRIALS SOURCE T CYCLES EPS0 [BLOCK]``."""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
from E3_long_periods import clean
from E3_user_streams import SEED
from ldpfleet.collector import period_search
from ldpfleet.collector.period_refine import _resolving_level

import ldpfleet

ORIGINAL = period_search._Search.refine


def refine_with_divisors(self, logp, exact, top_peaks):
    best = ORIGINAL(self, logp, exact, top_peaks)
    if best is None or not np.isfinite(best[0]):
        return best
    first = best[1]
    for m in range(2, 7):
        c = round(first / m)
        if c < max(self.min_period, 3):
            break
        q = self.settle(c, _resolving_level(self.power(c)))
        value, hq = self.exact_logp(q)
        if value < best[0]:
            best = (value, q, hq)
    return best


def answers(patched: bool, trials, source, period, cycles, eps0, block):
    period_search._Search.refine = refine_with_divisors if patched else ORIGINAL
    out = []
    for trial in range(trials):
        rng = np.random.default_rng([SEED, block, 0, trial])
        n = period * cycles
        x = ldpfleet.SquareWave(eps0).perturb(clean(source, period, n, rng), rng)
        hat = ldpfleet.detect_period(x).period
        out.append(None if hat is None else hat - period)
    period_search._Search.refine = ORIGINAL
    return out


def main(argv: list[str]) -> None:
    trials, source, period, cycles, eps0 = (
        int(argv[0]),
        argv[1],
        *map(int, argv[2:4]),
        float(argv[4]),
    )
    block = int(argv[5]) if len(argv) > 5 else 11
    old = answers(False, trials, source, period, cycles, eps0, block)
    new = answers(True, trials, source, period, cycles, eps0, block)
    print(source, period, cycles, eps0, "old", dict(Counter(old)), "new", dict(Counter(new)))


if __name__ == "__main__":
    main(sys.argv[1:])
