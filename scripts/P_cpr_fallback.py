"""CPR's fallback constant (the stream's mode, where detection abstains) against the
clipped mean estimate, by mean absolute error from the truth (helper P, 2026-12-06;
docs/cpr.md "Using it"). Per cell: 15 streams of a random period 10-59 and length
150-899, SW reports at eps0; only the streams where ``cpr`` abstains are scored.

    python scripts/P_cpr_fallback.py
"""

import numpy as np

import ldpfleet


def cycle(shape: str, phase: np.ndarray) -> np.ndarray:
    if shape == "square":
        return np.where(phase < 0.5, 0.15, 0.85)
    if shape == "sine":
        return 0.5 + 0.4 * np.sin(2 * np.pi * phase)
    if shape == "short peaks":
        return np.where(phase < 0.1, 0.9, 0.1)
    return 0.1 + 0.8 * phase**3  # skewed


def main() -> None:
    rng = np.random.default_rng(60606)
    for shape in ("square", "sine", "short peaks", "skewed"):
        for eps0 in (0.3, 1.0, 2.0):
            sw = ldpfleet.SquareWave(eps0)
            scored = []
            for _ in range(15):
                period, n = int(rng.integers(10, 60)), int(rng.integers(150, 900))
                x = cycle(shape, np.arange(n) % period / period)
                y = sw.perturb(x, rng)
                result = ldpfleet.cpr(y, sw)
                if result.period is not None:
                    continue
                mean = float(np.clip(sw.estimate_mean(y), 0.0, 1.0))
                scored.append(
                    (np.mean(np.abs(result.reconstruction - x)), np.mean(np.abs(mean - x)))
                )
            if scored:
                fallback, clipped_mean = np.mean(scored, axis=0)
                print(
                    f"{shape:11s} eps0={eps0:g}: {len(scored):2d}/15 abstained, MAE "
                    f"fallback {fallback:.3f}, clipped mean estimate {clipped_mean:.3f}"
                )


if __name__ == "__main__":
    main()
