"""``ldpfleet bench cpr``'s limits and argument checks: each refusal a ``ParameterError``
naming the option's field, the limit and the value (the CLI shows it as the option)."""

from __future__ import annotations

import numpy as np
from ldpfleet.app.suggest import near_miss
from ldpfleet.devices.periodic import (
    DATASETS,
)
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanism_contract import EPS_MIN
from ldpfleet.protocol.sw import EPS_MAX

MIN_LENGTH = 3 * 48  # 3 cycles of the longest period a data set draws (synthetic: 12 .. 48)
# bench cpr's upper limits (docs/cpr.md "Options"; helper Q's held-out QA: --trials and
# --fleet-streams 1e11 ran without end, --n 1e12 was numpy's MemoryError traceback)
MAX_LENGTH = 1_000_000  # samples per stream (8 MB a stream), as cpr_grid_streams.GRID_MAX_LENGTH
MAX_TRIALS = 10_000  # trials per cell (and --grid-trials, --aperiodic-trials)
MAX_FLEET_STREAMS = 10_000  # streams of 10,000 reports: 10,000 x 80 kB = 0.8 GB in memory
SEED_MAX = 2**63 - 1  # as --seed of ldpfleet run ([scenario] seed)


def _check_count(value: object, field: str, minimum: int, maximum: int | None = None) -> None:
    """An integer in [minimum, maximum] (no upper limit when ``maximum`` is None). A
    ``field`` of two words (``"grid_shape cycles"``) names the part in the sentence too:
    the command line names only the option, so ``--grid-shape 24,2`` said "must be an
    integer >= 3, got 2" without saying that the 2 is the cycles (helper P, 2026-12-06)."""
    part = f" (the {field.split(' ', 1)[1]})" if " " in field else ""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ParameterError(
            f"must be an integer >= {minimum}, got {value!r}{part}",
            field=field,
            limit=f"an integer >= {minimum}",
            value=value,
        )
    if maximum is not None and value > maximum:
        raise ParameterError(
            f"must be an integer <= {maximum:,}, got {value!r}{part}",
            field=field,
            limit=f"an integer <= {maximum:,}",
            value=value,
        )


def _check_budgets(values: tuple, field: str) -> None:
    if not values:
        raise ParameterError(
            "must name at least one budget", field=field, limit="at least one budget", value=values
        )
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            raise ParameterError(
                f"must be a number, got {value!r}", field=field, limit="a number", value=value
            )
        if not (np.isfinite(value) and value > 0):
            raise ParameterError(
                f"must be finite and > 0, got {value!r}",
                field=field,
                limit="finite and > 0",
                value=value,
            )
    _check_distinct(values, field, label=lambda value: f"{value:g}")


def _check_distinct(values, field: str, label=repr) -> None:
    """Refuse a value given twice (``label``: how the results name it; budgets by ``:g``,
    6 significant digits, the key of ``cpr_lowest_cosine`` and the tables' column heads):
    ``--eps 1 --eps 1`` ran every cell twice and printed two identical columns."""
    seen: dict[str, object] = {}
    for value in values:
        key = label(value)
        if key in seen:
            raise ParameterError(
                f"each value once (distinct to 6 significant digits for a budget), got "
                f"{seen[key]!r} and {value!r}",
                field=field,
                limit="each value once (distinct to 6 significant digits for a budget)",
                value=value,
            )
        seen[key] = value


def _check_names(names, allowed, field: str, noun: str) -> None:
    """At least one name, each one of ``allowed``, each once."""
    if not names:
        raise ParameterError(
            f"must name at least one {noun}", field=field, limit=f"at least one {noun}", value=names
        )
    for name in names:
        if name not in allowed:
            raise ParameterError(
                f"{name!r} is not one of {', '.join(allowed)}{near_miss(name, allowed)}",
                field=field,
                limit=f"one of {', '.join(allowed)}",
                value=name,
            )
    _check_distinct(names, field)


def check_datasets(datasets) -> None:
    """Data sets of ``devices.periodic.DATASETS``, each once."""
    _check_names(datasets, DATASETS, "datasets", "data set")


def _check_windows(detection_w, cosine_w, n) -> None:
    """Windows of 1 .. n reports each, listed once: a window longer than the stream spends
    eps / w per report on reports that do not exist (``--w 100000 --n 200`` printed
    accuracy 0.0 for every cell, silently)."""
    if not detection_w:
        raise ParameterError(
            "must name at least one window",
            field="w",
            limit="at least one window",
            value=detection_w,
        )
    for field, w in [("cosine_w", cosine_w)] + [("w", w) for w in detection_w]:
        _check_count(w, field, 1)
        if w > n:
            raise ParameterError(
                f"must be <= --n ({n}), the samples per stream: a window longer than the "
                f"stream is not a window of it, got {w!r}",
                field=field,
                limit=f"<= --n ({n})",
                value=w,
            )
    _check_distinct(detection_w, "w")


def check_bench_args(*, detection_eps=(1.0,), detection_w=(1,), cosine_eps=(1.0,), cosine_w=1,
                     trials=1, n=MIN_LENGTH, seed=0, fleet_streams=0) -> None:  # fmt: skip
    """Refuse what ``bench_cpr`` cannot evaluate, naming the field, the limit and the value
    (held-out, u5: ``--trials 0``, ``--w 0``, ``--n 0`` and ``--seed -1`` ended in
    tracebacks; ``--trials -3`` printed NaN means, ``--cosine-w -2`` was reported as a bad
    ``eps``)."""
    _check_count(trials, "trials", 1, MAX_TRIALS)
    _check_count(n, "n", MIN_LENGTH, MAX_LENGTH)
    _check_count(seed, "seed", 0, SEED_MAX)
    _check_count(fleet_streams, "fleet_streams", 0, MAX_FLEET_STREAMS)
    _check_windows(detection_w, cosine_w, n)
    _check_budgets(detection_eps, "eps")
    _check_budgets(cosine_eps, "cosine_eps")
    # each report spends eps / w (w-event LDP); the mechanisms take [EPS_MIN, EPS_MAX]
    for field, budgets, windows in (("eps", detection_eps, detection_w),
                                    ("cosine_eps", cosine_eps, (cosine_w,))):  # fmt: skip
        eps, w = max(budgets), min(windows)
        if eps / w > EPS_MAX:
            raise ParameterError(
                f"must be <= {EPS_MAX:g} x the window ({w}): each report spends eps / w, "
                f"got {eps!r}",
                field=field,
                limit=f"<= {EPS_MAX:g} x the window ({w})",
                value=eps,
            )
        eps, w = min(budgets), max(windows)
        if eps / w < EPS_MIN:
            raise ParameterError(
                f"must be >= {EPS_MIN:g} x the window ({w}) = {EPS_MIN * w:g}: each report "
                f"spends eps / w, and below {EPS_MIN:g} per report Square Wave degenerates "
                f"(p == q), got {eps!r}",
                field=field,
                limit=f">= {EPS_MIN:g} x the window ({w}) = {EPS_MIN * w:g}",
                value=eps,
            )
