"""CPR: period-conscious reconstruction of SW-privatised streams at the collector.

Theory of operation (seed 003, §III; working spec shared/reference/sw-and-cpr.md). The
collector sees only y_0 .. y_{n-1}, each an SW report of a value in [0, 1] at ε0 = ε/w.
Everything here is post-processing: no privacy cost.

1. Cycle recovery (``collector.period.detect_period``, issue 19): the reports are
   detrended and whitened against a fitted white + AR(1) background, every period with at
   least ``min_cycles`` (3) whole cycles is scored by harmonic sums of the fold, the best
   candidates are refined to the exact integer, and a period T̂ is claimed only if it is
   significant at a false-claim rate of 1 % on aperiodic streams (stricter for periods
   with fewer than 12 cycles); confidence = 1 - its adjusted p-value.
2. Phase recovery: fold the reports by phase t mod T̂. Per phase, bucket the reports
   (``d_out`` output buckets) and run EM — EMS by default — with the closed-form SW
   transition matrix (``collector.sw_em``) for all phases at once; convert the
   responsibilities into posterior-mean pseudo-samples (one value per output bucket,
   weighted by its count); fit a Gaussian KDE with mirror padding at 0 and 1 and the pinned
   Silverman bandwidth (``collector.kde``); the KDE mode is the template value r̂[phase].
3. Reconstruction: X̂_t = r̂[t mod T̂] in [0, 1], mapped back to physical units by the
   caller with the public bounds.

Bucket count per phase: ``default_buckets(samples per phase)`` clipped to [16, 64] (few
samples, few buckets). Fallback: where the detector abstains (no significant period), CPR
returns the EMS estimate of the whole stream's mode as a constant reconstruction (period
None, confidence 0). Its cost against CPR given the true period is measured per cell in
docs/cpr-grid.md (``cos fallback``); at low ε0, where detection abstains most, the
constant is often the better of the two, since a per-phase template from few noisy
reports is itself noisy.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from ldpfleet.collector.kde import kde_mode
from ldpfleet.collector.period import (
    DEFAULT_MIN_CYCLES,
    detect_period,
    is_time_column,
    stream_kind,
)
from ldpfleet.collector.period_input import (
    _check_a_sequence,
    _check_not_a_table,
    _check_not_numbers_in_disguise,
    _float_array,
)
from ldpfleet.collector.sw_em import (
    _check_mechanism,
    _first_bad,
    bucket_counts,
    default_buckets,
    em,
    em_owners,
    posterior_means,
    transition_matrix,
)
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.sw import SquareWave
from numpy.typing import ArrayLike

MIN_PHASE_BUCKETS = 16
MAX_PHASE_BUCKETS = 64
# CprConfig.kde_grid's ceiling: one phase's KDE at 64 buckets, mirrored, is 64 x 3 x 65,538
# floats (100 MB); finer than SW's 2**-20 output grid matters nowhere
MAX_KDE_GRID = 65_536


@dataclass(frozen=True)
class CprConfig:
    """Tunables of the pipeline (defaults are the ones every figure in docs/ used).

    ``min_period`` / ``max_period`` / ``min_cycles``: ``detect_period``'s search range
    (integers; ``max_period`` ``None``: ``n // min_cycles``, a larger one is lowered to it).
    ``smoothing``: EMS (True) or plain EM. ``tol`` / ``max_iter``: EM's stopping rule.
    ``kde_grid``: grid points of the KDE whose mode is each phase's value (2 ..
    ``MAX_KDE_GRID`` = 65,536). ``period``: a
    period you know (detection skipped), or ``None``. Numpy integers are accepted where an
    integer is asked.

    Raises ``ParameterError`` naming the option: an integer option that is no integer or
    below its minimum, ``kde_grid`` above ``MAX_KDE_GRID``, ``smoothing`` not a bool,
    ``tol`` negative or not finite."""

    min_period: int = 2
    max_period: int | None = None
    smoothing: bool = True  # EMS rather than plain EM
    tol: float = 1e-3
    max_iter: int = 300
    kde_grid: int = 256
    # detect_period's min_cycles: admissible periods up to n // min_cycles (a max_period
    # above that is clamped); 2 reaches periods seen 2-3 times (docs/cpr.md)
    min_cycles: int = DEFAULT_MIN_CYCLES
    # a known period (a day of 48 half-hours): detection skipped, the template is folded
    # at it; None: detect_period's answer (helper P, 2026-12-06; docs/cpr.md)
    period: int | None = None

    def __post_init__(self) -> None:
        """Refuse what the pipeline cannot use (``ParameterError`` naming the option, the
        limit and the value): ``max_iter = 0`` ran no EM at all, ``smoothing = "no"`` was
        truthy."""
        _config_int(self.min_period, "min_period", 2)
        if self.max_period is not None:
            _config_int(self.max_period, "max_period", self.min_period)
        if not isinstance(self.smoothing, bool | np.bool_):
            raise ParameterError(
                f"must be True or False, got {self.smoothing!r}",
                field="smoothing",
                limit="True or False",
                value=self.smoothing,
            )
        tol = self.tol
        if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not tol >= 0.0:
            raise ParameterError(
                f"must be a real number >= 0, got {tol!r}",
                field="tol",
                limit="a real number >= 0",
                value=tol,
            )
        if not math.isfinite(tol):
            raise ParameterError(
                f"must be finite, got {tol!r}", field="tol", limit="finite", value=tol
            )
        _config_int(self.max_iter, "max_iter", 1)
        _config_int(self.kde_grid, "kde_grid", 2)
        if self.kde_grid > MAX_KDE_GRID:
            # each phase's KDE holds (buckets x 3 x kde_grid) floats at once: 10**9 asked
            # for terabytes (a MemoryError or the machine's OOM killer; helper H)
            raise ParameterError(
                f"must be at most {MAX_KDE_GRID:,} (grid points on [0, 1]; the mode is "
                f"refined between them), got {self.kde_grid!r}",
                field="kde_grid",
                limit=f"an integer <= {MAX_KDE_GRID}",
                value=self.kde_grid,
            )
        _config_int(self.min_cycles, "min_cycles", 2)
        if self.period is not None:
            _config_int(self.period, "period", 2)


def _config_int(value: object, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(
            f"must be an integer, got {value!r}", field=name, limit="an integer", value=value
        )
    if value < minimum:
        raise ParameterError(
            f"must be an integer >= {minimum}, got {value!r}",
            field=name,
            limit=f"an integer >= {minimum}",
            value=value,
        )


def _check_config(config: object) -> CprConfig:
    """``config`` itself, or the defaults for ``None``; anything else is refused."""
    if config is None:
        return CprConfig()
    if not isinstance(config, CprConfig):
        raise ParameterError(
            f"must be a CprConfig (or None), got {type(config).__name__}",
            field="config",
            limit="a CprConfig or None",
            value=config,
        )
    return config


@dataclass(frozen=True)
class CprResult:
    """What CPR recovered from one stream (values in [0, 1]).

    ``period``: the period folded at, an ``int``, or ``None`` when ``detect_period``
    abstained (then ``template`` has one value, the mode of the whole stream's estimated
    values, and ``reconstruction`` is that constant). ``confidence``: a ``float``,
    ``detect_period``'s confidence (``1 -`` its adjusted p-value; ``0.0`` when it
    abstained), ``nan`` for a period given by ``CprConfig(period=T)`` (not tested).
    ``template``: one cycle, a float64 array of ``period`` values (1 when abstaining).
    ``reconstruction``: a float64 array of one value per report, ``template`` repeated from
    the first report's phase 0. ``period`` and ``confidence`` are Python numbers
    (``json.dumps`` takes them; ``nan`` is written as ``NaN``); the arrays need
    ``.tolist()``."""

    period: int | None
    confidence: float
    template: np.ndarray
    reconstruction: np.ndarray


def phase_buckets(samples_per_phase: float) -> int:
    """Buckets per phase for EM: few samples, few buckets (16..64)."""
    return int(
        np.clip(default_buckets(int(samples_per_phase)), MIN_PHASE_BUCKETS, MAX_PHASE_BUCKETS)
    )


def phase_templates(
    y: np.ndarray, mechanism: SquareWave, period: int, config: CprConfig | None = None
) -> np.ndarray:
    """Per-phase EM denoising + KDE mode: the template r̂ (length ``period``) in [0, 1]."""
    config = config or CprConfig()
    n = len(y)
    buckets = phase_buckets(n / period)
    phases = np.arange(n) % period
    counts = bucket_counts(y, mechanism, buckets, groups=phases, n_groups=period)
    matrix = transition_matrix(mechanism, buckets, buckets)
    fit = em(counts, matrix, smoothing=config.smoothing, tol=config.tol, max_iter=config.max_iter)
    pseudo = posterior_means(fit.theta, matrix)  # (period, buckets)
    return kde_mode(pseudo, counts, grid=config.kde_grid)


def cpr(y: ArrayLike, mechanism: SquareWave, config: CprConfig | None = None) -> CprResult:
    """Reconstruct one device's stream from its SW reports ``y`` (in report order): a
    non-empty 1-D array-like of reports in ``mechanism``'s output range. ``mechanism``:
    the ``SquareWave`` that privatised them (its ``eps`` and variant). ``config``: a
    ``CprConfig`` or ``None`` (the defaults).

    Returns a ``CprResult``: ``period`` (an int, or ``None`` when detection abstains; then
    the reconstruction is a constant), ``confidence``, ``template`` (one cycle, in [0,
    1]) and ``reconstruction`` (one value per report, in [0, 1]). With a known period
    (``CprConfig(period=T)``) detection is skipped: ``period`` is T, ``confidence`` NaN.

    Raises ``ParameterError`` (a ``ValueError``) naming ``y`` or its first bad report
    ``y[k]`` (not 1-D, empty, not finite, outside the output range), ``mechanism`` (not a
    ``SquareWave``), ``config`` (not a ``CprConfig``) or ``config.period`` (longer than
    ``y``)."""
    config = _check_config(config)
    y = _reports(y, mechanism)
    estimate = _detect(y, config, "y")
    template = phase_templates(y, mechanism, estimate.period or 1, config)
    return _result(len(y), estimate, template)


@dataclass(frozen=True)
class _GivenPeriod:
    """``config.period`` in place of ``detect_period``'s estimate: not tested, so its
    confidence is NaN."""

    period: int
    confidence: float = math.nan


def _detect(y: np.ndarray, config: CprConfig, name: str):
    """``detect_period`` with the config's search range, or the config's known period
    (refused naming ``config.period`` when longer than the stream ``name``: a phase with no
    report has no template value)."""
    if config.period is not None:
        if config.period > len(y):
            raise ParameterError(
                f"must be at most the length of {name} ({len(y)} reports: every phase of "
                f"the cycle needs one), got {config.period}",
                field="config.period",
                limit=f"<= {len(y)}",
                value=config.period,
            )
        return _GivenPeriod(int(config.period))
    return detect_period(
        y,
        min_period=config.min_period,
        max_period=config.max_period,
        min_cycles=config.min_cycles,
    )


def _reports(y: object, mechanism: SquareWave, name: str = "y") -> np.ndarray:
    """One stream's reports as a float array: a non-empty 1-D array of finite reports in the
    mechanism's output range, else a ``ParameterError`` (a ``ValueError``) naming ``name``
    (``y``; ``streams[i]`` in ``cpr_many``) or its first bad sample ``y[k]`` (checked here,
    before the period detector would name it ``x``)."""
    if is_time_column(y):
        raise ParameterError(
            "need a 1-D array of real numbers (reports), got a time column (datetime64 / "
            "timedelta64)",
            field=name,
            limit="a 1-D array of real numbers, not timestamps",
            value=stream_kind(y),
        )
    # refused as detect_period refuses them (helper P, 2026-12-06): a masked report was
    # read as a number, complex reports lost their imaginary part with numpy's warning,
    # None was "got shape ()", a generator or a text said nothing of what it got
    _check_not_numbers_in_disguise(y, name)
    _check_a_sequence(y, name)
    _check_not_a_table(y, name)  # a CSV read with names=True (helper E, 2026-12-06)
    arr = _float_array(y, name)  # the first non-number named as detect_period names it
    if arr.ndim == 0:  # a number (or a numeric string) is not a stream of reports
        raise ParameterError(
            f"need a non-empty 1-D array of reports (a stream), got one value {y!r}",
            field=name,
            limit="a non-empty 1-D array",
            value=arr.shape,
        )
    if arr.ndim != 1 or len(arr) == 0:
        raise ParameterError(
            f"need a non-empty 1-D array of reports, got shape {arr.shape}"
            f"{_one_stream_hint(arr.shape)}",
            field=name,
            limit="a non-empty 1-D array",
            value=arr.shape,
        )
    mech = _check_mechanism(mechanism)
    _first_bad(
        ~mech.in_domain(arr),
        name,
        arr,
        f"report must be finite and in [{mech.output_low!r}, {mech.output_high!r}]",
    )
    return arr


def _one_stream_hint(shape: tuple[int, ...]) -> str:
    """What to pass instead of a 2-D array (as ``check_stream`` says for
    ``detect_period``): one column or row of one stream, or ``cpr_many`` for several;
    "got shape (555, 1)" alone did not say (helper P, 2026-12-06)."""
    if len(shape) == 2 and shape[1] == 1:
        return ": a column of one stream? pass x[:, 0] or x.ravel()"
    if len(shape) == 2 and shape[0] == 1:
        return ": a row of one stream? pass x[0] or x.ravel()"
    if len(shape) >= 2:
        return (
            ": one stream per call, e.g. one column x[:, k]; cpr_many(streams, mechanism) "
            "takes one stream per row"
        )
    return ""


def _result(n: int, estimate, template: np.ndarray) -> CprResult:
    """The template repeated over ``n`` steps at the detected period, or, where detection
    abstained, the one-phase template (the stream's level) as a constant."""
    if estimate.period is None:
        return CprResult(None, 0.0, template, np.full(n, template[0]))
    reconstruction = template[np.arange(n) % estimate.period]
    return CprResult(estimate.period, estimate.confidence, template, reconstruction)


def _streams(streams: object) -> object:
    """``streams`` unless it is one stream of numbers (a 1-D array or a list of numbers),
    which would be read as many streams of one number each."""
    if isinstance(streams, np.ndarray):
        one = streams.ndim < 2
    elif not isinstance(streams, Iterable) or isinstance(streams, str | bytes):
        # None, a number: Python's "'NoneType' object is not iterable" named nothing, and a
        # text was read as streams of one character each (helper H, 2026-12-06)
        raise ParameterError(
            f"need a list of streams (one 1-D array of reports each), got {type(streams).__name__}",
            field="streams",
            limit="a list of streams (1-D arrays)",
            value=stream_kind(streams),
        )
    else:
        one = (
            isinstance(streams, list | tuple)
            and len(streams) > 0
            and isinstance(streams[0], numbers.Real | str)
        )
    if one:
        raise ParameterError(
            "need a list of streams (one 1-D array of reports each), got one stream of "
            "numbers: use cpr(y, mechanism) for one stream, or cpr_many([y], mechanism)",
            field="streams",
            limit="a list of streams (1-D arrays)",
            value=stream_kind(streams),
        )
    return streams


def cpr_many(
    streams: Iterable[ArrayLike], mechanism: SquareWave, config: CprConfig | None = None
) -> list[CprResult]:
    """``[cpr(y, mechanism, config) for y in streams]``, the same results bit for bit, with
    the per-phase EM and the KDE modes of all streams that share a bucket count run together
    (``sw_em.em_owners``, one ``kde_mode`` call): their per-call overhead, which dominates
    short streams, is paid once per group instead of once per stream. Period detection
    stays per stream. ``streams``: an iterable of streams (a 2-D array: one per row; they
    may differ in length); ``mechanism`` and ``config`` as ``cpr``'s. Returns one
    ``CprResult`` per stream, in order. Raises ``ParameterError`` as ``cpr`` does, a bad
    stream named ``streams[i]`` (its sample ``streams[i][k]``), one stream given as
    numbers named as such."""
    config = _check_config(config)
    _check_mechanism(mechanism)  # also with no stream: the call is wrong either way
    ys = [_reports(y, mechanism, f"streams[{i}]") for i, y in enumerate(_streams(streams))]
    estimates = [_detect(y, config, f"streams[{i}]") for i, y in enumerate(ys)]
    folds = [e.period if e.period is not None else 1 for e in estimates]
    groups: dict[int, list[int]] = {}
    for i, (y, period) in enumerate(zip(ys, folds, strict=True)):
        groups.setdefault(phase_buckets(len(y) / period), []).append(i)
    templates: list[np.ndarray | None] = [None] * len(ys)
    for buckets, members in groups.items():
        matrix = transition_matrix(mechanism, buckets, buckets)
        counts = np.concatenate(
            [
                bucket_counts(
                    ys[i],
                    mechanism,
                    buckets,
                    groups=np.arange(len(ys[i])) % folds[i],
                    n_groups=folds[i],
                )
                for i in members
            ]
        )
        owners = np.repeat(np.arange(len(members)), [folds[i] for i in members])
        fit = em_owners(
            counts,
            matrix,
            owners,
            smoothing=config.smoothing,
            tol=config.tol,
            max_iter=config.max_iter,
        )
        starts = np.concatenate(([0], np.cumsum([folds[i] for i in members])))
        # posterior means per stream: their products use M.T (a transposed view), whose
        # rows depend on the row count
        pseudo = np.concatenate(
            [
                posterior_means(fit.theta[starts[j] : starts[j + 1]], matrix)
                for j in range(len(members))
            ]
        )
        modes = kde_mode(pseudo, counts, grid=config.kde_grid)
        for j, i in enumerate(members):
            templates[i] = modes[starts[j] : starts[j + 1]].copy()
    return [
        _result(len(y), estimate, template)
        for y, estimate, template in zip(ys, estimates, templates, strict=True)
    ]
