"""Which step of ``detect_period`` makes the false claims on quiet levels (docs/heldout-cpr.md,
helper H, 2026-12-07). Read-only: wraps ``_Search.local_claim`` (step 8), ``short_claim``
(step 9, n < SHORT_STREAM) and ``cycles_claim`` (step 9b) to see which one returned the
claim; a claim none of them returned came from the main gates (steps 1-7).

    python scripts/H_route_diag.py FAMILY N EPS0 TRIALS OFFSET
    e.g. python scripts/H_route_diag.py level_0.1 90 5 1000 30000   (the doc's block)
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from ldpfleet.collector import period_search

import ldpfleet

sys.path.insert(0, str(Path(__file__).resolve().parent))
import H_heldout_cpr as h

ROUTES = {"local_claim": "step 8", "short_claim": "step 9", "cycles_claim": "step 9b"}
_seen: list[str] = []


def _wrap(name: str) -> None:
    original = getattr(period_search._Search, name)

    def wrapped(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        if out is not None:
            _seen.append(ROUTES[name])
        return out

    setattr(period_search._Search, name, wrapped)


def main(argv: list[str]) -> int:
    family, n, eps0, trials, offset = (
        argv[0],
        int(argv[1]),
        float(argv[2]),
        int(argv[3]),
        int(argv[4]),
    )
    for name in ROUTES:
        _wrap(name)
    routes = Counter()
    tag = f"{family}/{n}/{eps0}"
    for trial in range(offset, offset + trials):
        rng = h.rng_for("aperiodic", tag, trial)  # the streams of H_heldout_cpr's cell
        reports = ldpfleet.SquareWave(eps0).perturb(h.family(family)(n, rng), rng)
        _seen.clear()
        est = ldpfleet.detect_period(reports)
        if est.period is not None:
            routes[_seen[-1] if _seen else "main gates"] += 1
    print(
        f"{family} n={n} eps0={eps0:g} trials {offset}..{offset + trials - 1}: "
        f"{sum(routes.values())} claims, by route {dict(routes)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
