"""The period-detection grid (issue 19): ``detect_period`` against the two plain baselines
on every (source, period, cycles, eps0, jitter, drift) cell, paired trials judged by an exact
sign test, and the false-claim rates on aperiodic streams (docs/cpr-grid.md)."""

from __future__ import annotations

import os
import time

import numpy as np
from ldpfleet.app.bench_cpr_args import (
    MAX_TRIALS,
    SEED_MAX,
    _check_budgets,
    _check_count,
    _check_distinct,
    _check_names,
)
from ldpfleet.app.bench_cpr_speed import _detector_speed
from ldpfleet.app.cpr_grid_streams import (
    GRID_MAX_LENGTH,
    _grid_templates,
    aperiodic_stream,
    grid_stream,
    grid_template,
    source_name,
    trial_rng,
)
from ldpfleet.app.cpr_period_baselines import autocorrelation_period, folded_variance_period
from ldpfleet.collector.cpr import phase_templates
from ldpfleet.collector.metrics import cosine_distance
from ldpfleet.collector.period import detect_period
from ldpfleet.collector.pools import interruptible_pool
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanism_contract import EPS_MIN, below_eps_min
from ldpfleet.protocol.sw import EPS_MAX, SquareWave
from scipy import stats

# -- the period-detection grid (issue 19): the detector against two plain baselines ----------

GRID_SOURCES = (
    "darwin",
    "darwin_column",
    "music",
    "raisin",
    "occupancy",
    "intel",
    "wisdm",
    "square",
    "spikes",
    "sawtooth",
    "two_harmonics",
)
GRID_SHAPES = (  # (period, cycles): n = period x cycles; periods 8 .. n / 3, cycles 3 .. 60
    (8, 60),
    (12, 30),
    (25, 12),
    (50, 3),
    (144, 12),
    (144, 30),
    (174, 12),
    (400, 5),
)
GRID_EPS0 = (0.2, 0.5, 1.0, 2.0, 5.0)
GRID_DRIFT = ((0.02, 0.0), (0.05, 0.0), (0.02, 0.02))  # (amplitude jitter, phase drift)
APERIODIC_KINDS = ("white", "random_walk", "ar1", "ar1_slow", "trend")
APERIODIC_LENGTHS = (150, 300, 1000, 3000)
APERIODIC_EPS0 = (0.2, 1.0, 5.0)
DETECTORS = ("detect_period", "folded_variance", "autocorrelation")
COSINE_TRIALS = 10  # grid cells: cosine distances on the first 10 trials (EM is the cost)


def _detect_all(reports: np.ndarray) -> dict[str, int | None]:
    return {
        "detect_period": detect_period(reports).period,
        "folded_variance": folded_variance_period(reports),
        "autocorrelation": autocorrelation_period(reports),
    }


def _grid_cell(args: tuple) -> dict:
    source, period, cycles, eps0, jitter, drift, trials, seed = args
    n = period * cycles
    hits = dict.fromkeys(DETECTORS, 0)
    ours_only = dict.fromkeys(DETECTORS[1:], 0)  # paired: detect_period right, baseline wrong
    base_only = dict.fromkeys(DETECTORS[1:], 0)  # ... and the other way round
    abstain = 0
    cos_true, cos_hat, cos_fallback, cos_true_abstain = [], [], [], []
    tag = f"{source_name(source)}/{period}/{cycles}/{eps0}/{jitter}/{drift}"
    for trial in range(trials):
        rng = trial_rng(seed, "grid", trial, tag)
        clean = grid_stream(grid_template(source, period, rng), n, rng, jitter, drift)
        mechanism = SquareWave(eps0)
        reports = mechanism.perturb(clean, rng)
        found = _detect_all(reports)
        for name, value in found.items():
            hits[name] += value == period
        for name in ours_only:
            ours_only[name] += found["detect_period"] == period and found[name] != period
            base_only[name] += found[name] == period and found["detect_period"] != period
        hat = found["detect_period"]
        abstain += hat is None
        if trial >= COSINE_TRIALS:
            continue  # the cosine columns: the first COSINE_TRIALS trials (EM is the cost)
        true_template = phase_templates(reports, mechanism, period)
        cos = cosine_distance(true_template[np.arange(n) % period], clean)
        cos_true.append(cos)
        if hat == period:
            cos_hat.append(cos)  # the same template: the period is the true one
        if hat is None:
            level = phase_templates(reports, mechanism, 1)[0]
            cos_fallback.append(cosine_distance(np.full(n, level), clean))
            cos_true_abstain.append(cos)
    return {
        "source": source_name(source),
        "period": period,
        "cycles": cycles,
        "eps0": eps0,
        "jitter": jitter,
        "drift": drift,
        "trials": trials,
        "accuracy": {name: hits[name] / trials for name in DETECTORS},
        "ours_only": ours_only,
        "baseline_only": base_only,
        "below_p": {name: sign_test_p(base_only[name], ours_only[name]) for name in ours_only},
        "abstain": abstain / trials,
        "cosine_true_period": float(np.mean(cos_true)),
        "cosine_when_detected": float(np.mean(cos_hat)) if cos_hat else None,
        "cosine_fallback": float(np.mean(cos_fallback)) if cos_fallback else None,
        "cosine_true_period_when_abstaining": (
            float(np.mean(cos_true_abstain)) if cos_true_abstain else None
        ),
    }


def sign_test_p(baseline_wins: int, ours_wins: int) -> float:
    """One-sided exact sign test on paired trials: the probability, if both detectors were
    equally accurate, that the baseline wins at least ``baseline_wins`` of the
    ``baseline_wins + ours_wins`` discordant trials (each discordant trial is then a fair
    coin). Small values mean detect_period is really below the baseline in that cell."""
    discordant = baseline_wins + ours_wins
    if baseline_wins == 0:
        return 1.0
    return float(stats.binom.sf(baseline_wins - 1, discordant, 0.5))


def _aperiodic_cell(args: tuple) -> dict:
    kind, n, eps0, trials, seed = args
    claims = dict.fromkeys(DETECTORS, 0)
    for trial in range(trials):
        rng = trial_rng(seed, "aperiodic", trial, f"{kind}/{n}/{eps0}")
        reports = SquareWave(eps0).perturb(aperiodic_stream(kind, n, rng), rng)
        for name, value in _detect_all(reports).items():
            claims[name] += value is not None
    return {
        "kind": kind,
        "n": n,
        "eps0": eps0,
        "trials": trials,
        "false_claims": {name: claims[name] / trials for name in DETECTORS},
    }


def grid_cells(shapes=None, sources=None, eps0=None, templates=None) -> list[tuple]:
    """Every (source, period, cycles, eps0, jitter, drift) of the grid: all sources x shapes
    x eps0 at jitter 0.02, plus the stronger jitter and the phase drift on every source at
    (25, 12) and (144, 12) (the drift cells only where their shape is asked for).

    ``shapes`` (period, cycles) pairs, ``sources`` (of ``GRID_SOURCES``) and ``eps0``
    (per-report budgets) replace the grid's own lists when given: any period >= 2 with at
    least 3 cycles, any finite budget > 0; a smaller grid for a user's own cells.
    ``templates``: a user's own (``FILE[:COLUMN]`` specs or ``GridTemplate``s), sources
    after the built-in ones, in the same cells; with templates and no ``sources``, only the
    templates run (name built-in sources to compare with them)."""
    shapes = _grid_shapes(shapes)
    own = _grid_templates(templates)
    sources = (*(() if own and sources is None else _grid_sources(sources)), *own)
    budgets = GRID_EPS0 if eps0 is None else _grid_budgets(eps0)
    cells = [(s, p, k, e, 0.02, 0.0) for s in sources for (p, k) in shapes for e in budgets]
    cells += [
        (s, p, k, e, j, d)
        for s in sources
        for (p, k) in ((25, 12), (144, 12))
        if (p, k) in shapes
        for e in budgets
        for (j, d) in GRID_DRIFT[1:]
    ]
    return cells


def _grid_shapes(shapes) -> tuple:
    if shapes is None:
        return GRID_SHAPES
    chosen = tuple(tuple(shape) for shape in shapes)
    if not chosen:
        raise ParameterError(
            "must name at least one (period, cycles) pair",
            field="grid_shape",
            limit="at least one (period, cycles) pair",
            value=chosen,
        )
    for shape in chosen:
        if len(shape) != 2:
            raise ParameterError(
                f"must be (period, cycles), got {shape!r}",
                field="grid_shape",
                limit="(period, cycles)",
                value=shape,
            )
        _check_count(shape[0], "grid_shape period", 2)
        _check_count(shape[1], "grid_shape cycles", 3)
        if shape[0] * shape[1] > GRID_MAX_LENGTH:
            raise ParameterError(
                f"period x cycles must be at most {GRID_MAX_LENGTH:,} samples, got "
                f"{shape[0]} x {shape[1]}",
                field="grid_shape",
                limit=f"period x cycles at most {GRID_MAX_LENGTH:,} samples",
                value=shape,
            )
    _check_distinct(chosen, "grid_shape")
    return chosen


def _grid_sources(sources) -> tuple:
    if sources is None:
        return GRID_SOURCES
    chosen = tuple(sources)
    _check_names(chosen, GRID_SOURCES, "grid_source", "template")
    return chosen


def _grid_budgets(eps0) -> tuple:
    budgets = tuple(eps0)
    _check_budgets(budgets, "grid_eps0")
    for eps0 in budgets:
        if eps0 < EPS_MIN:
            raise ParameterError(
                below_eps_min(eps0), field="grid_eps0", limit=f">= {EPS_MIN:g}", value=eps0
            )
        if eps0 > EPS_MAX:
            raise ParameterError(
                f"must be <= {EPS_MAX:g}, the largest budget per report, got {eps0!r}",
                field="grid_eps0",
                limit=f"<= {EPS_MAX:g}",
                value=eps0,
            )
    return tuple(float(e) for e in budgets)


def claims_upper95(claims: int, trials: int) -> float:
    """One-sided 95 % Clopper-Pearson upper bound of a claim rate seen as ``claims`` of
    ``trials`` (1.0 when every trial claimed)."""
    return float(stats.beta.ppf(0.95, claims + 1, trials - claims)) if claims < trials else 1.0


def bench_period_grid(
    *,
    trials: int = 40,
    aperiodic_trials: int = 200,
    seed: int = 0,
    workers: int | None = None,
    shapes=None,
    sources=None,
    eps0=None,
    templates=None,
) -> dict:
    """The detection grid (exact match, ``trials`` per cell) and the false-claim rates on
    aperiodic streams, for ``detect_period`` and both baselines. ``shapes``, ``sources``,
    ``eps0``, ``templates`` (a user's own, ``load_grid_template``): only these cells
    (``grid_cells``); the aperiodic cells are always run, at ``eps0`` when it is given (else
    the grid's 0.2, 1, 5)."""
    _check_count(trials, "grid_trials", 1, MAX_TRIALS)
    _check_count(aperiodic_trials, "aperiodic_trials", 1, MAX_TRIALS)
    _check_count(seed, "seed", 0, SEED_MAX)
    workers = workers or os.cpu_count() or 1
    cells = [(*c, trials, seed) for c in grid_cells(shapes, sources, eps0, templates)]
    # longest streams first (an even load at the end), results back in grid order
    order = sorted(range(len(cells)), key=lambda i: -cells[i][1] * cells[i][2])
    aperiodic = [
        (kind, n, e, aperiodic_trials, seed)
        for kind in APERIODIC_KINDS
        for n in APERIODIC_LENGTHS
        for e in (APERIODIC_EPS0 if eps0 is None else _grid_budgets(eps0))
    ]
    started = time.perf_counter()
    with interruptible_pool(max_workers=workers) as pool:
        done = list(pool.map(_grid_cell, [cells[i] for i in order], chunksize=2))
        grid = [row for _, row in sorted(zip(order, done, strict=True))]
        null = list(pool.map(_aperiodic_cell, aperiodic))
    return {
        "trials": trials,
        "aperiodic_trials": aperiodic_trials,
        "seed": seed,
        "grid": grid,
        "aperiodic": null,
        "seconds": round(time.perf_counter() - started, 1),
        "speed": _detector_speed(seed),
    }
