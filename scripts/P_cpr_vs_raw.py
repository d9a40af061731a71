"""CPR against the per-report baselines on periodic streams with day-to-day variation
(helper P, 2026-12-06; docs/cpr.md "What to expect"): mean cosine distance to the truth,
10 streams per budget (period 12-59, 8-19 cycles, cycle noise 0.1, daily noise 0.03).
CPR is best up to eps0 = 10; at 20 the raw estimates are nearly exact and beat it.

    python scripts/P_cpr_vs_raw.py
"""

import numpy as np
from ldpfleet.collector.reconstruct import reconstruct

import ldpfleet


def cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    return float(1 - np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))


def main() -> None:
    rng = np.random.default_rng(24680)
    for eps0 in (1.0, 2.0, 5.0, 10.0, 20.0):
        sw = ldpfleet.SquareWave(eps0)
        scores = {m: [] for m in ("cpr", "sw", "sw_moving", "sw_filter")}
        for _ in range(10):
            period = int(rng.integers(12, 60))
            n = period * int(rng.integers(8, 20))
            phase = np.arange(period) / period
            cycle = 0.5 + 0.3 * np.sin(2 * np.pi * phase) + 0.1 * rng.standard_normal(period)
            x = np.clip(np.resize(np.clip(cycle, 0, 1), n) + 0.03 * rng.standard_normal(n), 0, 1)
            y = sw.perturb(x, rng)
            for method, values in scores.items():
                values.append(cosine_distance(reconstruct(method, y, sw).values, x))
        print(f"eps0={eps0:g}: " + "  ".join(f"{m} {np.mean(v):.4f}" for m, v in scores.items()))


if __name__ == "__main__":
    main()
