"""The period-detection grid's input streams: reproducible trial randomness, the built-in
templates (a data set's cycle resampled to any period), a user's own templates
(``--grid-template FILE[:COLUMN]``), the grid's periodic streams, the aperiodic streams of
the false-claim cells, and the held-out aperiodic families (``app/bench_cpr.py`` runs them).
"""

from __future__ import annotations

import functools
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ldpfleet.devices.periodic import (
    DATA_ROOT,
    dataset_records,
)
from ldpfleet.protocol.errors import ParameterError
from scipy import signal


def trial_rng(seed: int, dataset: str, trial: int, purpose: str) -> np.random.Generator:
    """Independent, reproducible randomness per (seed, data set, trial, purpose)."""
    return np.random.default_rng(
        [seed, zlib.crc32(dataset.encode()), trial, zlib.crc32(purpose.encode())]
    )


GRID_MAX_LENGTH = 1_000_000  # samples of one grid stream (a user's own --grid-shape)


# -- a user's own templates (--grid-template FILE[:COLUMN]): one cycle each, as a record -----

TEMPLATE_FIELD = "grid_template"  # the CLI shows it as --grid-template


@dataclass(frozen=True, eq=False)
class GridTemplate:
    """A user's own grid template: ``cycle`` (at least 2 finite numbers, not all equal) is
    ONE cycle of the pattern, its length the native period. It is used exactly as a record
    of a built-in data-set source (``grid_template``): scaled to [0, 1], resampled to each
    grid period by periodic linear interpolation, tiled by ``grid_stream``. ``name``
    (``stem:column``, e.g. ``datatest2:CO2``) is the ``source`` of its result rows; a colon
    never occurs in a built-in source's name."""

    name: str
    cycle: np.ndarray

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ParameterError(
                f"name must be a non-empty text, got {self.name!r}",
                field=TEMPLATE_FIELD,
                limit="a non-empty text",
                value=self.name,
            )
        object.__setattr__(self, "cycle", _checked_cycle(self.name, self.cycle))

    @property
    def table(self) -> np.ndarray:
        """The template as a one-record table, as ``_table`` gives a built-in data set."""
        return self.cycle[np.newaxis, :]


def _split_template_spec(spec: str) -> tuple[str, str | None]:
    """``FILE[:COLUMN]`` as (file, column or None): a spec naming an existing file is the
    file (a path may hold a colon); else the longest part before a colon that names an
    existing file is the file and everything after that colon the column, which may hold
    colons itself (``meter.csv:load:kW``; issue 19, helper A: the split at the last colon
    looked for a file ``meter.csv:load``); if no such part exists, the text after the last
    colon is the column (the reader then names the missing file)."""
    if os.path.exists(spec) or ":" not in spec:
        return spec, None
    cuts = [i for i, char in enumerate(spec) if char == ":" and i > 0]
    for cut in reversed(cuts):  # the longest file first: "C:" or "a:b" folders stay whole
        if os.path.isfile(spec[:cut]):
            return spec[:cut], spec[cut + 1 :]
    path, _, column = spec.rpartition(":")
    if not path:
        return spec, None
    return path, column


def _template_error(spec: str, reason: str, *, limit: str, value: object) -> ParameterError:
    """The refusal of template ``spec``: ``reason`` after the quoted spec, ``limit`` the rule
    broken and ``value`` the value refused (as ``ParameterError.limit`` / ``.value``)."""
    # quoted: "FILE:COLUMN: ..." unquoted read ":COLUMN:" as an emoji code in the CLI's
    # rich console (bad.csv:v: printed "bad.csv✌")
    return ParameterError(f"{spec!r}: {reason}", field=TEMPLATE_FIELD, limit=limit, value=value)


def load_grid_template(spec: str) -> GridTemplate:
    """Read ``FILE[:COLUMN]`` (CSV, TSV or one number a line; a header line or none; gzip,
    bzip2 and xz unpacked) with the scenarios' reader (``devices.sources.CsvSpec``): the
    column by header name or 0-based index among the numeric columns, the first numeric
    column without one. Its values are one cycle (``GridTemplate``). A missing file, an
    unknown column, a non-numeric or missing cell (NaN, text: named by line and value),
    fewer than 2 values, more than ``GRID_MAX_LENGTH`` or a constant column is a
    ``ParameterError`` on ``grid_template`` naming the spec and the value."""
    from ldpfleet.devices.sources import CsvSpec, SourceError, csv_stream, table_columns

    if not isinstance(spec, str) or not spec:
        raise ParameterError(
            f"must be FILE[:COLUMN], got {spec!r}",
            field=TEMPLATE_FIELD,
            limit="FILE[:COLUMN]",
            value=spec,
        )
    path, column = _split_template_spec(spec)
    if column == "":
        raise _template_error(
            spec,
            "the column after ':' is empty (a name or a 0-based index)",
            limit="a column name or a 0-based index after ':'",
            value=spec,
        )
    try:
        names, rows = table_columns(path)
        if column is None:
            column = 0
        elif column not in names and column.isdigit():
            column = int(column)  # a 0-based index among the numeric columns
        source = CsvSpec(path, column)
        values = csv_stream(source, 0, 1, rows)[0] if rows else np.empty(0)
    except SourceError as error:
        # the scenarios' advice on gaps (source.missing = ...) has no grid option
        reason = error.reason.split(": set source.missing", 1)[0]
        raise _template_error(  # a file compressed past the cap carries the cap as limit
            spec,
            reason,
            limit=getattr(error, "limit", None) or "a readable file with that numeric column",
            value=spec,
        ) from None
    column_name = names[source.column] if isinstance(source.column, int) else source.column
    return GridTemplate(f"{_file_stem(path)}:{column_name}", _checked_cycle(spec, values))


def _file_stem(path: str) -> str:
    """The file's name without its compression and table suffixes (``day.csv.gz``: day)."""
    name = Path(path).name
    for suffix in (".gz", ".bz2", ".xz"):
        name = name.removesuffix(suffix)
    return Path(name).stem or name


def _checked_cycle(spec: str, values: object) -> np.ndarray:
    """``values`` as a read-only float cycle: 1-D, 2 .. GRID_MAX_LENGTH finite numbers, not
    all equal."""
    try:
        values = np.array(values, dtype=float)
    except (TypeError, ValueError):
        raise _template_error(
            spec,
            f"a cycle must be numbers, got {values!r:.80}",
            limit="numbers",
            value=values,
        ) from None
    if values.ndim != 1:
        raise _template_error(
            spec,
            f"a cycle must be 1-D, got shape {values.shape}",
            limit="a 1-D cycle (value: its shape)",
            value=values.shape,
        )
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        k = int(bad[0])
        raise _template_error(
            spec,
            f"value {k} (0-based) is {float(values[k])!r}: need finite numbers",
            limit="finite numbers (value: the first bad one)",
            value=float(values[k]),
        )
    if values.size < 2:
        raise _template_error(
            spec,
            f"a cycle needs at least 2 numbers, got {values.size} ({values.tolist()!r})",
            limit="at least 2 numbers (value: the count)",
            value=values.size,
        )
    if values.size > GRID_MAX_LENGTH:
        raise _template_error(
            spec,
            f"a cycle holds at most {GRID_MAX_LENGTH:,} numbers, got {values.size:,}",
            limit=f"at most {GRID_MAX_LENGTH:,} numbers (value: the count)",
            value=values.size,
        )
    if np.ptp(values) == 0:
        raise _template_error(
            spec,
            f"every one of its {values.size} values is {values[0]:g}: a constant column has "
            "no cycle to detect",
            limit="values not all equal (value: the one value)",
            value=float(values[0]),
        )
    values.flags.writeable = False
    return values


def _grid_templates(templates) -> tuple[GridTemplate, ...]:
    """``templates`` (specs or ``GridTemplate``s) loaded, each name once."""
    if templates is None:
        return ()
    templates = (templates,) if isinstance(templates, str | GridTemplate) else tuple(templates)
    loaded = tuple(t if isinstance(t, GridTemplate) else load_grid_template(t) for t in templates)
    seen: dict[str, int] = {}
    for k, template in enumerate(loaded):
        if template.name in seen:
            raise ParameterError(
                f"each template once: {templates[seen[template.name]]!r} and "
                f"{templates[k]!r} are both named {template.name!r} (file stem and column)",
                field=TEMPLATE_FIELD,
                limit="each template once",
                value=templates[k],
            )
        seen[template.name] = k
    return loaded


def source_name(source: str | GridTemplate) -> str:
    """The ``source`` a grid row carries: a built-in's name or a user template's."""
    return source.name if isinstance(source, GridTemplate) else source


def _normalise01(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, float)
    low, high = float(values.min()), float(values.max())
    return (values - low) / (high - low) if high > low else np.zeros_like(values)


@functools.cache
def _occupancy_days() -> np.ndarray:
    """Daily cycles of UCI Occupancy light: 10-minute means, one row per full day (T = 144)."""
    import csv

    path = DATA_ROOT / "uci-occupancy" / "datatraining.txt"
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))[1:]
    stamps = np.array([np.datetime64(r[1].replace(" ", "T")) for r in rows])
    light = np.array([float(r[4]) for r in rows])
    minute = (stamps - stamps[0].astype("datetime64[D]")).astype("timedelta64[m]").astype(int)
    slot = minute // 10
    sums = np.bincount(slot, weights=light)
    counts = np.bincount(slot)
    full = sums.size // 144
    means = np.divide(sums, counts, out=np.full(sums.size, np.nan), where=counts > 0)
    days = means[: full * 144].reshape(full, 144)
    ok = np.isfinite(days).all(axis=1)
    return days[ok]


@functools.cache
def _table(source: str) -> np.ndarray:
    if source == "darwin":
        return dataset_records("darwin")
    if source == "darwin_column":  # one feature over the 174 participants (T = 174)
        return dataset_records("darwin").T
    if source in ("music", "raisin"):
        return dataset_records(source)
    if source == "occupancy":
        return _occupancy_days()
    if source == "intel":  # one sensor's first day of half-hour temperatures (T = 48)
        rows = np.loadtxt(DATA_ROOT / "intel-lab" / "intelTemperatureTrain.csv", delimiter=",")
        return rows[:, :48]
    if source == "wisdm":  # one example's binned X, Y, Z acceleration distributions (30)
        path = DATA_ROOT / "wisdm-v1.1-transformed" / "WISDM_ar_v1.1_transformed.arff"
        lines = path.read_text().split("@data", 1)[1].split()
        rows = [line.split(",")[2:32] for line in lines if line.count(",") > 32]
        table = np.array([[float(v) for v in row] for row in rows[:2000]])
        return table[np.ptp(table, axis=1) > 0]
    raise ValueError(source)


def grid_template(source: str | GridTemplate, period: int, rng: np.random.Generator) -> np.ndarray:
    """One cycle of ``period`` samples in [0, 1]: a data-set record (resampled to ``period``
    by periodic linear interpolation when its native length differs), a user's own
    ``GridTemplate`` (the same way: a table of one record) or a synthetic shape."""
    u = (np.arange(period) / period + rng.random()) % 1.0
    if source == "square":
        return (u < 0.5).astype(float)
    if source == "spikes":
        width = max(1, period // 12)
        out = np.zeros(period)
        out[(np.arange(width) + rng.integers(period)) % period] = 1.0
        return out
    if source == "sawtooth":
        return u
    if source == "two_harmonics":
        return _normalise01(np.sin(2 * np.pi * u) + 0.8 * np.sin(4 * np.pi * u + rng.random() * 6))
    table = source.table if isinstance(source, GridTemplate) else _table(source)
    cycle = _normalise01(table[int(rng.integers(len(table)))])
    while np.ptp(cycle) == 0:
        cycle = _normalise01(table[int(rng.integers(len(table)))])
    if cycle.size == period:
        return cycle
    grid = np.arange(period) * cycle.size / period
    return np.interp(grid, np.arange(cycle.size + 1), np.append(cycle, cycle[0]))


def grid_stream(cycle, n, rng, jitter=0.02, drift=0.0) -> np.ndarray:
    """Repeat ``cycle`` to ``n`` samples with amplitude jitter N(0, jitter^2) and, if
    ``drift > 0``, phase drift: sample ``t`` reads the cycle at ``t + D_t`` with ``D`` a
    random walk of step sd ``drift`` samples (a jittery clock), clipped to [0, 1]."""
    period = cycle.size
    t = np.arange(n, dtype=float)
    if drift > 0:
        t = t + np.cumsum(drift * rng.standard_normal(n))
    pos = t % period
    base = np.interp(pos, np.arange(period + 1), np.append(cycle, cycle[0]))
    return np.clip(base + jitter * rng.standard_normal(n), 0.0, 1.0)


def aperiodic_stream(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Aperiodic inputs in [0, 1]: iid uniform, a random walk, AR(1) (phi = 0.95; ``ar1_slow``:
    phi = 0.99; ``ar1_<phi>``, e.g. ``ar1_0.98``: that phi in (-1, 1), for calibration runs
    outside the grid), a linear trend with noise (sd 0.05)."""
    if kind == "white":
        return rng.random(n)
    if kind == "random_walk":
        return _normalise01(np.cumsum(rng.standard_normal(n)))
    if kind.startswith("ar1"):
        phi = {"ar1": 0.95, "ar1_slow": 0.99}.get(kind)
        if phi is None:
            try:
                phi = float(kind.removeprefix("ar1_"))
            except ValueError:
                raise ValueError(kind) from None
            if not -1.0 < phi < 1.0:
                raise ValueError(f"kind {kind!r}: phi must be in (-1, 1), got {phi}")
        return _normalise01(signal.lfilter([1.0], [1.0, -phi], rng.standard_normal(n)))
    if kind == "trend":
        return np.clip(np.linspace(0.1, 0.9, n) + 0.05 * rng.standard_normal(n), 0.0, 1.0)
    if kind in HELD_OUT_GENERATORS:
        return HELD_OUT_GENERATORS[kind](n, rng)
    raise ValueError(kind)


# -- held-out aperiodic families (issue 19): chosen before measuring, never calibrated on ------


def _arma(ar: tuple[float, ...], ma: tuple[float, ...], n: int, rng) -> np.ndarray:
    """``n`` samples of the ARMA process ``(1 - sum ar_i B^i) x = (1 + sum ma_i B^i) e`` after
    a burn-in of 500 samples (e iid N(0, 1)), scaled to [0, 1]."""
    burn = 500
    e = rng.standard_normal(n + burn)
    return _normalise01(signal.lfilter([1.0, *ma], [1.0, *(-a for a in ar)], e)[burn:])


def _level_shifts(n: int, rng) -> np.ndarray:
    """Piecewise constant: 1-3 change points at uniform positions, iid N(0, 1) levels."""
    cuts = np.sort(rng.choice(np.arange(1, n), size=int(rng.integers(1, 4)), replace=False))
    levels = rng.standard_normal(cuts.size + 1)
    return _normalise01(levels[np.searchsorted(cuts, np.arange(n), side="right")])


def _drift_walk(n: int, rng) -> np.ndarray:
    """A random walk with drift: steps N(0.1, 1)."""
    return _normalise01(np.cumsum(0.1 + rng.standard_normal(n)))


def _fractional(d: float, n: int, rng) -> np.ndarray:
    """Long memory: ARFIMA(0, d, 0), the MA(inf) weights ``psi_k = psi_{k-1} (k - 1 + d) / k``
    truncated at ``n + 2000`` lags, applied to iid N(0, 1) by FFT convolution; the last ``n``
    samples."""
    m = n + 2000
    k = np.arange(1, m)
    psi = np.concatenate(([1.0], np.cumprod((k - 1 + d) / k)))
    return _normalise01(signal.fftconvolve(rng.standard_normal(m), psi)[m - n : m])


def _logistic_step(n: int, rng) -> np.ndarray:
    """One smooth step ``1 / (1 + exp(-(t - t0) / w))``, ``t0`` uniform in the middle 60 %,
    ``w`` in [0.01 n, 0.1 n], plus N(0, 0.05^2), clipped to [0, 1]."""
    t = np.arange(n)
    t0 = rng.uniform(0.2, 0.8) * n
    width = rng.uniform(0.01, 0.1) * n
    step = 0.1 + 0.8 / (1.0 + np.exp(-(t - t0) / width))
    return np.clip(step + 0.05 * rng.standard_normal(n), 0.0, 1.0)


def _exp_decay(n: int, rng) -> np.ndarray:
    """``0.1 + 0.8 exp(-t / tau)``, ``tau`` in [0.05 n, 0.5 n], plus N(0, 0.05^2), clipped."""
    tau = rng.uniform(0.05, 0.5) * n
    decay = 0.1 + 0.8 * np.exp(-np.arange(n) / tau)
    return np.clip(decay + 0.05 * rng.standard_normal(n), 0.0, 1.0)


def _student_t(n: int, rng) -> np.ndarray:
    """iid Student t with 2 degrees of freedom (heavy tails), scaled to [0, 1] by min/max."""
    return _normalise01(rng.standard_t(2.0, n))


def _outlier_bursts(n: int, rng) -> np.ndarray:
    """A quiet level 0.2 + N(0, 0.05^2) with sparse bursts: Poisson(1 + n / 300) bursts at
    uniform positions, each 1-5 samples long at a level uniform in [0.6, 1]; clipped."""
    x = 0.2 + 0.05 * rng.standard_normal(n)
    for _ in range(int(rng.poisson(1.0 + n / 300.0))):
        start = int(rng.integers(n))
        x[start : start + int(rng.integers(1, 6))] = rng.uniform(0.6, 1.0)
    return np.clip(x, 0.0, 1.0)


def _markov_switch(n: int, rng) -> np.ndarray:
    """A sticky two-state regime: stay with probability 0.98 (mean stay 50 samples), levels
    0.3 and 0.7, plus N(0, 0.1^2), clipped."""
    switches = rng.random(n) < 0.02
    state = (int(rng.integers(2)) + np.cumsum(switches)) % 2
    return np.clip(0.3 + 0.4 * state + 0.1 * rng.standard_normal(n), 0.0, 1.0)


def _clipped(n: int, rng) -> np.ndarray:
    """AR(1) phi = 0.8 standardised, ``0.5 + 0.6 z`` clipped to [0, 1]: ~40 % of the
    samples sit on a bound."""
    burn = 500
    z = signal.lfilter([1.0], [1.0, -0.8], rng.standard_normal(n + burn))[burn:]
    return np.clip(0.5 + 0.6 * z / np.sqrt(1.0 / (1.0 - 0.64)), 0.0, 1.0)


HELD_OUT_GENERATORS: dict[str, Callable[[int, np.random.Generator], np.ndarray]] = {
    "level_shifts": _level_shifts,
    "drift_walk": _drift_walk,
    "ar2_real": lambda n, rng: _arma((1.4, -0.45), (), n, rng),  # roots 0.9 and 0.5
    "arma11": lambda n, rng: _arma((0.9,), (0.5,), n, rng),
    "fracdiff_0.3": functools.partial(_fractional, 0.3),
    "fracdiff_0.45": functools.partial(_fractional, 0.45),
    "logistic_step": _logistic_step,
    "exp_decay": _exp_decay,
    "student_t2": _student_t,
    "outlier_bursts": _outlier_bursts,
    "markov_switch": _markov_switch,
    "clipped": _clipped,
    # NOT aperiodic: complex roots 0.95 e^{+-2 pi i / 20}, a stochastic cycle of ~20 samples
    # (a spectral peak); reported apart from the false-claim promise
    "ar2_complex": lambda n, rng: _arma((1.9 * np.cos(2 * np.pi / 20), -(0.95**2)), (), n, rng),
}
HELD_OUT_KINDS = tuple(k for k in HELD_OUT_GENERATORS if k != "ar2_complex")
HELD_OUT_LENGTHS = (90, 150, 300, 1000, 3000)
HELD_OUT_SEED = 419  # never used by the grid (0) or a calibration (404, 405, 407, 408)
