"""Held-out check of ``detect_period`` on streams with PHASE JUMPS: a cycle that restarts
1-2 times at a random sample with a random phase shift (a clock reset, a replayed file
that wraps, a sensor restart). Locally the stream has period ``T``; no global ``T``
repeats it exactly. The grid (``app/bench_cpr.py``) has amplitude jitter and a slow
random-walk phase drift, never a jump; this check was run after the detector was fixed
(2026-12-03), to measure, not to tune.

Cells: the grid's templates square, sawtooth, two_harmonics and the Darwin and Occupancy
records; T = 12, 24, 50, 144; 8, 20, 40 cycles; ε0 = 1, 5; 1 or 2 jumps at uniform
positions in the middle 3/4 of the stream, each shifting the phase by U(0.2, 0.8)·T;
amplitude jitter N(0, 0.02²). Trial seeds ``[SEED, cell, trial]`` (``SEED`` = 779). The
rows and the table are those of ``app/cpr_held_out_periodic`` (exact match against the
folded-variance and autocorrelation baselines, paired sign test; wrong answers near
(within T²/n) or far).

Run: ``python -m ldpfleet.app.cpr_phase_jumps TRIALS [--markdown]``.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from ldpfleet.app.bench_cpr import (
    autocorrelation_period,
    folded_variance_period,
    grid_template,
    sign_test_p,
)
from ldpfleet.app.cpr_held_out_periodic import markdown
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave

SEED = 779
SHAPES = ("square", "sawtooth", "two_harmonics", "darwin", "occupancy")
PERIODS = (12, 24, 50, 144)
CYCLES = (8, 20, 40)
EPS0 = (1.0, 5.0)
JUMPS = (1, 2)
JITTER = 0.02

__all__ = ["cells", "jump_stream", "markdown", "run", "run_cell"]


def jump_stream(cycle: np.ndarray, n: int, jumps: int, rng: np.random.Generator) -> np.ndarray:
    """``cycle`` repeated to ``n`` samples, restarted ``jumps`` times: from a uniform sample
    in ``[n/8, n - n/8)`` on, the phase is shifted by ``U(0.2, 0.8)`` of a period; amplitude
    jitter N(0, ``JITTER``²), clipped to [0, 1]."""
    period = cycle.size
    t = np.arange(n, dtype=float)
    for start in rng.integers(n // 8, n - n // 8, jumps):
        t[start:] += rng.uniform(0.2, 0.8) * period
    base = np.interp(t % period, np.arange(period + 1), np.append(cycle, cycle[0]))
    return np.clip(base + JITTER * rng.standard_normal(n), 0.0, 1.0)


def cells() -> list[tuple[str, int, int, float, int]]:
    """Every (shape, period, cycles, ε0, jumps), in a fixed order (the seed index)."""
    return [
        (k, t, c, e, j)
        for k in SHAPES
        for t in PERIODS
        for c in CYCLES
        for e in EPS0
        for j in JUMPS
    ]


def run_cell(
    index: int, kind: str, period: int, cycles: int, eps0: float, jumps: int, trials: int
) -> dict:
    """Exact matches of the three detectors on one cell (the held-out check's row)."""
    n = period * cycles
    names = ("detect_period", "folded_variance", "autocorrelation")
    hits = dict.fromkeys(names, 0)
    ours_only = {"folded_variance": 0, "autocorrelation": 0}
    base_only = dict(ours_only)
    near = far = 0
    for trial in range(trials):
        rng = np.random.default_rng([SEED, index, trial])
        clean = jump_stream(grid_template(kind, period, rng), n, jumps, rng)
        reports = SquareWave(eps0).perturb(clean, rng)
        found = dict(
            zip(
                names,
                (
                    detect_period(reports).period,
                    folded_variance_period(reports),
                    autocorrelation_period(reports),
                ),
                strict=True,
            )
        )
        for name, value in found.items():
            hits[name] += value == period
        ours = found["detect_period"]
        if ours is not None and ours != period:
            near += abs(ours - period) <= period * period / n
            far += abs(ours - period) > period * period / n
        for name in ours_only:
            ours_only[name] += ours == period and found[name] != period
            base_only[name] += found[name] == period and ours != period
    return {
        "shape": f"{kind}, {jumps} jump{'s' if jumps > 1 else ''}",
        "period": period,
        "cycles": cycles,
        "eps0": eps0,
        "trials": trials,
        "hits": hits,
        "wrong_near": near,
        "wrong_far": far,
        "below_p": {b: sign_test_p(base_only[b], ours_only[b]) for b in ours_only},
    }


def run(trials: int) -> list[dict]:
    """Every cell (single process: about 8 min at 20 trials here)."""
    return [run_cell(i, *cell, trials) for i, cell in enumerate(cells())]


if __name__ == "__main__":
    result = run(int(sys.argv[1]))
    command = "python -m ldpfleet.app.cpr_phase_jumps " + " ".join(sys.argv[1:])
    print(markdown(result, command) if "--markdown" in sys.argv else json.dumps(result))
