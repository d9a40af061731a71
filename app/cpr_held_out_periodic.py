"""Held-out PERIODIC check of ``detect_period``: shapes, periods and cycle counts that the
grid (``app/bench_cpr.py``, ``bench_period_grid``) never used, against the same two plain
detectors, exact match, paired sign test per cell.

Shapes (none is a grid template): a triangle, a half-rectified sine, two spikes a third of
a cycle apart, a random smooth cycle (five Fourier terms of random amplitude ~ 1/k and
phase), and a three-level step. (period, cycles): (17, 40), (37, 6), (37, 20), (97, 4),
(97, 12), (250, 4), (11, 100), (64, 8) — primes and non-grid periods, 4 to 100 cycles.
Per-report ε0 0.5, 2, 5; amplitude jitter N(0, 0.03²). Trial seeds ``[SEED, cell, trial]``
(``SEED`` = 777, never used elsewhere).

A wrong answer is split into *near* (within the fundamental's Fourier resolution ``T²/n``
of the truth: the integer is beyond what the stream resolves at that harmonic) and *far*.

Run: ``python -m ldpfleet.app.cpr_held_out_periodic TRIALS [--markdown]``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

import numpy as np
from ldpfleet.app.bench_cpr import (
    autocorrelation_period,
    folded_variance_period,
    grid_stream,
    sign_test_p,
)
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave

SEED = 777
SHAPES = ("triangle", "halfsine", "twospikes", "fourier", "steps3")
PERIOD_CYCLES = ((17, 40), (37, 6), (37, 20), (97, 4), (97, 12), (250, 4), (11, 100), (64, 8))
EPS0 = (0.5, 2.0, 5.0)
JITTER = 0.03


def held_out_shape(kind: str, period: int, rng: np.random.Generator) -> np.ndarray:
    """One cycle of ``period`` samples in [0, 1] of a shape the grid never used."""
    u = (np.arange(period) / period + rng.random()) % 1.0
    if kind == "triangle":
        cycle = 1.0 - np.abs(2.0 * u - 1.0)
    elif kind == "halfsine":
        cycle = np.maximum(np.sin(2.0 * np.pi * u), 0.0)
    elif kind == "twospikes":
        cycle = np.zeros(period)
        width, start = max(1, period // 15), int(rng.integers(period))
        cycle[(np.arange(width) + start) % period] = 1.0
        cycle[(np.arange(width) + start + period // 3) % period] = 0.6
    elif kind == "fourier":
        k = np.arange(1, 6)[:, None]
        terms = rng.standard_normal((5, 1)) / k * np.sin(2 * np.pi * k * u + 6 * rng.random((5, 1)))
        cycle = terms.sum(axis=0)
    elif kind == "steps3":
        cycle = np.select([u < 0.2, u < 0.55], [1.0, 0.3], 0.7)
    else:
        raise ValueError(f"unknown held-out shape {kind!r}")
    cycle = cycle - cycle.min()
    return cycle / cycle.max()


def cells() -> list[tuple[str, int, int, float]]:
    """Every (shape, period, cycles, ε0) of the check, in a fixed order (the seed index)."""
    return [(k, t, c, e) for k in SHAPES for t, c in PERIOD_CYCLES for e in EPS0]


def run_cell(index: int, kind: str, period: int, cycles: int, eps0: float, trials: int) -> dict:
    """Exact matches of the three detectors and the paired sign test on one cell."""

    def reports(trial: int) -> np.ndarray:
        rng = np.random.default_rng([SEED, index, trial])
        clean = grid_stream(held_out_shape(kind, period, rng), period * cycles, rng, JITTER, 0.0)
        return SquareWave(eps0).perturb(clean, rng)

    return {"shape": kind, **score_detectors(reports, period, cycles, eps0, trials)}


def score_detectors(
    reports: Callable[[int], np.ndarray], period: int, cycles: int, eps0: float, trials: int
) -> dict:
    """One cell's row: ``reports(trial)`` is the trial's stream; exact matches of
    ``detect_period`` and the two baselines, its wrong answers near (within ``T²/n``) and
    far, and the paired one-sided sign test against each baseline."""
    n = period * cycles
    hits = {"detect_period": 0, "folded_variance": 0, "autocorrelation": 0}
    ours_only = {"folded_variance": 0, "autocorrelation": 0}
    base_only = {"folded_variance": 0, "autocorrelation": 0}
    near = far = 0
    for trial in range(trials):
        stream = reports(trial)
        found = {
            "detect_period": detect_period(stream).period,
            "folded_variance": folded_variance_period(stream),
            "autocorrelation": autocorrelation_period(stream),
        }
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
    """Every cell of the check (single process: about 10 min at 40 trials here)."""
    return [run_cell(i, *cell, trials) for i, cell in enumerate(cells())]


def markdown(rows: list[dict], command: str) -> str:
    """One line per cell below a baseline (sign test p < 0.05), then the totals."""
    trials = sum(r["trials"] for r in rows)
    below = [r for r in rows if min(r["below_p"].values()) < 0.05]
    clearly = [r for r in below if min(r["below_p"].values()) < 0.05 / len(rows)]
    total = {k: sum(r["hits"][k] for r in rows) for k in rows[0]["hits"]}
    lines = [
        f"Generated by `{command}`.",
        "",
        f"- cells: {len(rows)}; below a baseline (p < 0.05): {len(below)}, of which "
        f"clearly (p < 0.05/{len(rows)}): {len(clearly)}",
        "- exact answers of " + f"{trials}: " + ", ".join(f"{k} {v}" for k, v in total.items()),
        f"- detect_period's wrong answers: {sum(r['wrong_near'] for r in rows)} near "
        f"(within T²/n), {sum(r['wrong_far'] for r in rows)} far",
        "",
        "| shape | T | cycles | ε0 | detect_period | folded variance | autocorrelation "
        "| p (fv) | p (ac) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in below:
        h, p = r["hits"], r["below_p"]
        lines.append(
            f"| {r['shape']} | {r['period']} | {r['cycles']} | {r['eps0']:g} "
            f"| {h['detect_period']} | {h['folded_variance']} | {h['autocorrelation']} "
            f"| {p['folded_variance']:.2g} | {p['autocorrelation']:.2g} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    result = run(int(sys.argv[1]))
    command = "python -m ldpfleet.app.cpr_held_out_periodic " + " ".join(sys.argv[1:])
    print(markdown(result, command) if "--markdown" in sys.argv else json.dumps(result))
