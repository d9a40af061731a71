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
from ldpfleet.app.bench_cpr import grid_template
from ldpfleet.app.cpr_held_out_periodic import markdown, score_detectors
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

    def reports(trial: int) -> np.ndarray:
        rng = np.random.default_rng([SEED, index, trial])
        clean = jump_stream(grid_template(kind, period, rng), period * cycles, jumps, rng)
        return SquareWave(eps0).perturb(clean, rng)

    shape = f"{kind}, {jumps} jump{'s' if jumps > 1 else ''}"
    return {"shape": shape, **score_detectors(reports, period, cycles, eps0, trials)}


def run(trials: int) -> list[dict]:
    """Every cell (single process: about 8 min at 20 trials here)."""
    return [run_cell(i, *cell, trials) for i, cell in enumerate(cells())]


if __name__ == "__main__":
    result = run(int(sys.argv[1]))
    command = "python -m ldpfleet.app.cpr_phase_jumps " + " ".join(sys.argv[1:])
    print(markdown(result, command) if "--markdown" in sys.argv else json.dumps(result))
