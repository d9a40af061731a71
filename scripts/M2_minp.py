"""The null distribution of step 9b's search statistic: the smallest phase-ANOVA log p-value
over the periods with >= 3 whole cycles (``_Search.anova_scan``: 3 .. n // 3), on the eight
aperiodic families of ``cpr_short_limit.py`` (SW reports, eps0 0.2 / 1 / 5) at n = 96 ..
127 (issue 19, helper M2, 2026-12-06).

Question: is Bonferroni over the ~31-40 correlated ANOVA p-values conservative enough that
a simulated max-statistic threshold ``q(n)`` (the lower quantile of the minimum p-value on
the worst family) buys a higher level at the same false-claim rate?

Printed per n (pooled over eps0) and family: the empirical P(min p * m < level) for the
Bonferroni levels in ``LEVELS`` (m = the number of periods), i.e. the ratio of the true
family-wise rate to the Bonferroni bound, and the lower quantiles of min p.

Run: ``nice -n 5 python scripts/M2_minp.py SEED TRIALS [n ...]`` (streams seeded
``[SEED, family index, n, eps0 x 10, trial]``; the table in the report used seed 99502).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpr_short_limit import FAMILIES, null_stream

EPS0 = (0.2, 1.0, 5.0)
LEVELS = (0.05, 0.02, 0.01, 0.005, 0.002)


def min_logp(x: np.ndarray) -> float:
    """The smallest ANOVA log p-value over periods 3 .. n // 3 (step 9b's search set)."""
    return min(P.anova_logp(x, q) for q in range(3, x.size // 3 + 1))


def main(seed: int, trials: int, lengths: list[int]) -> None:
    for n in lengths:
        m = n // 3 - 2
        cells = []
        for fi, family in enumerate(FAMILIES):
            values = []
            for eps0 in EPS0:
                for trial in range(trials):
                    rng = np.random.default_rng([seed, fi, n, int(eps0 * 10), trial])
                    x = SquareWave(eps0).perturb(null_stream(family, n, rng), rng)
                    values.append(min_logp(x))
            v = np.array(values)
            ratios = [float(np.mean(v + np.log(m) < np.log(lv))) / lv for lv in LEVELS]
            quant = [float(np.quantile(v, a)) for a in (0.01, 0.005)]
            cells.append((family, ratios, quant))
        for family, ratios, quant in cells:
            text = " ".join(f"{r:.2f}" for r in ratios)
            print(
                f"n={n} m={m} {family:12s} rate/bonferroni at {LEVELS}: {text}; "
                f"q01 {quant[0]:.2f} q005 {quant[1]:.2f} (bonf q01 {np.log(0.01 / m):.2f})",
                flush=True,
            )


if __name__ == "__main__":
    given = [int(a) for a in sys.argv[3:]] or [96, 100, 110, 120, 127]
    main(int(sys.argv[1]), int(sys.argv[2]), given)
