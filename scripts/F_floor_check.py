"""Helper F (issue 19, C8): is ``period_refine._span_floor`` a lower bound of the exact log
p-value (``_Search.exact_logp``) at every period it bounds? On every stream of
``scripts/cpr_speed_same.py`` and ``scripts/D3_fresh_speed.py`` (and, with ``grid``, the
3,540 streams of ``scripts/cpr_period_same.py``), every call ``detect_period`` makes of it is
checked period by period: the bound before ``FLOOR_SLACK`` (the computed tails of the
upper-bounded sums) and after it, against the exact value. Prints the smallest margin
(exact - bound, before the slack); exit status 1 if any bound after the slack exceeds
its exact value.

Run: ``nice -n 5 python scripts/F_floor_check.py [grid]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from ldpfleet.collector import period as P
from ldpfleet.collector import period_search

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpr_speed_same import streams as speed_streams
from D3_fresh_speed import fresh_streams


def main(argv: list[str]) -> int:
    floor = period_search._span_floor
    checked, bad, margins = 0, 0, []
    current: list = []
    worst: list = []

    def checking(xw: np.ndarray, periods: list[int]) -> np.ndarray:
        nonlocal checked, bad
        bounds = floor(xw, periods)
        search = current[0]
        for q, bound in zip(periods, bounds.tolist(), strict=True):
            exact = search.exact_logp(q)[0]
            checked += 1
            margins.append(exact - (bound + P.FLOOR_SLACK))
            worst[:] = (
                min(worst, [margins[-1], q, exact], key=lambda w: w[0])
                if worst
                else [
                    margins[-1],
                    q,
                    exact,
                ]
            )
            if bound > exact:
                bad += 1
                print("NOT A BOUND", q, bound, exact, flush=True)
        return bounds

    init = period_search._Search.__init__

    def remember(self, *args) -> None:
        init(self, *args)
        current[:] = [self]

    period_search._span_floor = checking
    period_search._Search.__init__ = remember
    sets = [(k, x) for _, k, x in speed_streams()] + [(k, x) for _, k, x in fresh_streams()]
    if argv[:1] == ["grid"]:
        from cpr_period_same import streams as grid_streams

        sets += list(grid_streams())
    for _, x in sets:
        P.detect_period(x)
    low = min(margins) if margins else float("nan")
    print(
        f"streams {len(sets)}, periods bounded {checked}, smallest margin before the slack"
        f" {low:.4g}, median {np.median(margins) if margins else float('nan'):.4g},"
        f" not a bound {bad}; smallest at period {worst[1] if worst else None}, exact log p"
        f" {worst[2] if worst else None}"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
