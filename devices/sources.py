"""Clean sensor streams for simulated devices: synthetic waveforms and real data sets.

Every simulated device produces a numeric stream ``x_0 .. x_{S-1}`` (one value per time
step) *before* privatisation; the device later clips it to fixed public bounds ``[lo, hi]``
and runs a local differential privacy mechanism on it. This module only builds the clean
stream and reports what the simulator knows about it (:class:`StreamTruth`).

Two kinds of source exist:

Synthetic (:class:`SyntheticSpec`, :func:`synthetic_stream`)
    A periodic waveform with a known period and phase, so that estimates computed by the
    collector can be compared with the truth. With cycle position
    ``u_k = t_k / period + phase`` (in cycles) and ``frac(u) = u mod 1``:

    - ``sine``:      ``sin(2π u)``
    - ``square``:    ``+1`` while ``frac(u) < 0.5``, else ``-1``
    - ``sawtooth``:  ``2 frac(u) - 1``: rises linearly from -1 to 1 over each period
    - ``composite``: ``sine(u) + 0.5 sine(2u) + 0.25 square(u)``: a fundamental, its
      second harmonic at half the amplitude and a square wave at the base period at a
      quarter of it. It is *not* renormalised: its peak magnitude is
      ``3√3/4 + 1/4 ≈ 1.549`` (reached at ``frac(u) = 1/6`` and ``5/6``).

    The value is ``x_k = offset + amplitude * shape(u_k) + noise * N(0, 1)``.
    ``t_k = k`` without timing jitter; with ``jitter > 0`` the sampling instant is
    ``t_k = k + jitter * N(0, 1)`` with an *independent* perturbation per step (not a
    random walk: the clock does not drift, each sample is merely taken slightly early or
    late). ``period`` is either fixed or an inclusive range ``(min, max)`` from which each
    device draws an integer; ``phase`` is a fraction of a period in ``[0, 1)`` or
    ``"random"`` (uniform per device). All randomness comes from the generator passed in,
    drawn in a fixed order (period, phase, jitter, noise), so a given generator state
    always yields the same stream. Use :func:`device_rng` to build per-device generators.

Data sets (:class:`CsvSpec`, :func:`load_table`, :func:`csv_stream`)
    Real sensor readings replayed from a numeric CSV file:

    - UCI Occupancy Detection (``data/uci-occupancy/datatraining.txt``, ``datatest.txt``):
      a quoted header ``"date","Temperature",...,"Occupancy"`` whose data rows carry one
      extra leading quoted row id. Rows are time steps (one minute apart), so use
      ``layout="column"``: every device replays the chosen column (``"Light"``, ``"CO2"``,
      ...) starting at its own offset, so the fleet does not report in lockstep.
    - Intel Berkeley Lab (``data/intel-lab/intelTemperatureTrain.csv`` etc.): no header,
      50 rows = sensors, columns = half-hour steps. Use ``layout="rows"``: device ``i``
      replays sensor row ``i % 50`` from its first step; ``column`` is not used.

    :func:`load_table` reads UTF-8 (a BOM is skipped) or UTF-16 with its BOM (``decode_text``;
    a DOS end-of-file mark, Ctrl-Z, at the very end is dropped: ``csv_text``), any line
    ends, quoted fields, and separates fields by comma, semicolon or tab
    (``protocol.delimiters.sniff_delimiter``: the one the first two lines hold equally often,
    else the first line's most frequent; numbers need a decimal point). It detects the header: a
    first line whose fields all parse as numbers, or that holds an ISO date-time and has a
    number or a date-time wherever the second line has one, is data (columns are then named
    ``"0" .. "k-1"``); otherwise it is a header (``header=True`` / ``False`` says so instead: a
    header of numbers, such as years or sensor ids, would be read as data). When data rows have
    exactly one more field than the header, the first field (a row id) is dropped, unless every
    row's last field is empty (a delimiter ending each row); a row id is distinct integers or a
    text label on every row, anything else is refused (under a header "temp", "20,038" is a
    decimal comma, not the row id 20 and the value 38).
    A column whose first value is a number with a decimal comma ("20,5") is refused, not
    skipped as text, unless ``CsvSpec.decimal`` is ``","`` (a European spreadsheet's
    export): then every cell that is a number with a decimal comma ("3,14", "-0,5",
    "1,5e3") is read with a point, a cell with a decimal point ("1.234", digit grouping
    there) is not a number (refused when a source reads its column), and a file whose
    fields are separated by commas is refused (``_decimal_commas``). A data line repeating
    the header (two exports joined) is refused, and so is a text column (or row id) of ISO
    date-times that goes back in time (rows are replayed as consecutive steps;
    ``_check_time_order``).
    Columns whose *first* present data value is not numeric (like ``date``) are dropped
    together with their names (a missing first value, ``MISSING_TOKENS``, does not decide;
    a column of only missing values is dropped and refused by name when a source reads it).
    A name two columns share is refused when a source reads it by name (two numeric ones,
    or a numeric one and a dropped one): give the numeric column's 0-based index.
    A missing value ("", NA, NaN, null, None, -, any case) in a column a source reads is
    refused, or filled / its time step dropped, as ``CsvSpec.missing`` says (the device's
    own local step, before clipping and privatisation; :func:`missing_summary` counts them);
    digits of any script are read as the numbers they are (full-width "１２", Arabic-Indic
    "١٢": ``float`` and numpy both read them, so both paths of ``_cell_matrix`` agree), and an
    integer written out beyond 2**53, which a float64 holds only rounded, is a bad value
    (``inexact_integer_reason``, the rule of a NumPy file's integers);
    any other non-numeric or non-finite value in a kept column is an error when
    that column is read (a source naming it, or the ``"rows"`` layout, or :func:`load_table`); a
    bad cell in a column no source reads does not refuse the file. Parsed tables are cached per
    path (and file size / mtime), since a fleet of 1,000 devices reads the same file; the
    returned matrix is read-only and shared. Streams longer than the data wrap around (the
    series is cycled; :func:`replay_cycles` says how many times, and a run records it in
    results.json ``source_cycles`` with a warning). The truth of a data set stream is
    unknown: ``StreamTruth(period=None, phase=None)``.

    Several columns (``columns``, ``"column"`` layout): the fleet is ``R`` simulated rooms
    of ``C = len(columns)`` sensor nodes each. Device ``i`` is channel ``i % C`` (column
    ``columns[i % C]``) of room ``i // C``; room ``r`` starts at row ``(r * stride) %
    length`` (``stride = 0`` spreads the rooms evenly), so the C channels of a room are
    aligned in time, exactly as one multi-sensor node would see them. Each channel has its
    own FIXED public bounds (``column_bounds[i % C]``, :func:`channel_bounds`).

NumPy files (recognised by their first bytes, whatever the name): an ``.npz``'s members
are the columns by key, an ``.npy`` one column (1-D) or rows x columns (2-D); loaded without
unpickling (``_numpy_table`` lists what is refused). They have no header line: ``header``
true or false with one is refused (``source.header``).

Errors are :class:`SourceError` (a ``ValueError``) naming the configuration field
(``"source.period"``, ``"source.column"``, ...), the offending value and the limit; a
refused decimal mark is a :class:`DecimalMarkError` (``check_decimal``, the one check of
every reader's decimal mark), a ``SourceError`` that is also a ``ParameterError`` and
carries ``limit`` and ``value``.
"""

from __future__ import annotations

import csv
import functools
import io
import itertools
import json
import math
import numbers
import operator
import os
import re
import stat
import time
import zlib
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from ldpfleet.devices.compressed import (
    BrokenCompressedData,
    UnpackedTooLarge,
    check_zip_size,
    compression,
    max_unpacked,
    not_unpacked,
    unpack,
)
from ldpfleet.devices.text_decode import DOS_END_OF_FILE, broken_utf16_reason, decode_text
from ldpfleet.protocol.delimiters import sniff_delimiter
from ldpfleet.protocol.errors import ParameterError

__all__ = [
    "DECIMALS",
    "LAYOUTS",
    "MISSING_MODES",
    "MISSING_TOKENS",
    "SHAPES",
    "CsvSpec",
    "DecimalMarkError",
    "SourceError",
    "SourceParameterError",
    "StreamTruth",
    "SyntheticSpec",
    "UnpackedTooLargeError",
    "binary_format",
    "broken_utf16_reason",
    "channel_bounds",
    "check_decimal",
    "clear_table_cache",
    "closest_name",
    "column_name",
    "csv_stream",
    "csv_text",
    "decode_text",
    "device_rng",
    "foreign_mark_hint",
    "inexact_integer_reason",
    "load_table",
    "missing_entry",
    "missing_summary",
    "read_data_file",
    "replay_cycles",
    "source_cycles_entry",
    "synthetic_stream",
    "table_columns",
]

SHAPES = ("sine", "square", "sawtooth", "composite")
LAYOUTS = ("column", "rows")


class SourceError(ValueError):
    """An invalid stream source: bad parameter, missing file, unknown column, bad data.

    ``field`` names the offending configuration field (``"source.period"``); the string
    form is ``"<field>: <message>"``.
    """

    def __init__(self, message: str, *, field: str) -> None:
        self.field = field
        if message.startswith(f"{field}:"):
            message = message[len(field) + 1 :].lstrip()
        self.reason = message
        super().__init__(f"{field}: {message}")

    def __reduce__(self):  # keyword-only ``field`` would break default pickling
        return (_rebuild_source_error, (self.reason, self.field))


def _rebuild_source_error(message: str, field: str) -> SourceError:
    return SourceError(message, field=field)


class SourceParameterError(SourceError, ParameterError):
    """A :class:`SourceError` that is also a ``ParameterError`` (a ``[source]`` setting,
    which a scenario reports as its own error, and a library argument or a bench option, so
    every caller's ``except`` keeps catching it), carrying the rule the value broke
    (``limit``) and the value. ``field`` is the caller's name of the setting
    (``"source.decimal"``, ``"decimal"``, ``"source.path"``); the string form is
    ``"<field>: <reason>"``."""

    def __init__(self, reason: str, *, field: str, limit: str, value: object) -> None:
        ValueError.__init__(self, f"{field}: {reason}")
        self.reason = reason
        self.field = field
        self.limit = limit
        self.value = value
        self.code = None

    def __reduce__(self):
        return (_rebuild_source_parameter_error, (type(self), self.reason, self.field,
                                                  self.limit, self.value))  # fmt: skip


def _rebuild_source_parameter_error(
    cls: type, reason: str, field: str, limit: str, value: object
) -> SourceParameterError:
    return cls(reason, field=field, limit=limit, value=value)


class DecimalMarkError(SourceParameterError):
    """A refused decimal mark (``check_decimal``): a :class:`SourceParameterError` whose
    ``field`` is the caller's name of the setting (``"source.decimal"``, ``"decimal"``),
    ``limit`` the rule the value broke and ``value`` the value."""


class UnpackedTooLargeError(SourceParameterError):
    """A compressed file that unpacks to more than the cap
    (``devices.compressed.max_unpacked``, ``$LDPFLEET_MAX_UNPACKED``): ``reason`` names the
    file, the cap, how far it got and how to raise the cap; ``limit`` the cap, ``value``
    the file's path."""


# --------------------------------------------------------------------------- validation


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _finite_float(value: object, field: str) -> float:
    if not _is_real(value):
        raise SourceError(f"{value!r} is not a number", field=field)
    result = float(value)  # type: ignore[arg-type]
    if not math.isfinite(result):
        raise SourceError(f"{value!r} must be finite", field=field)
    return result


def _offset(value: object) -> float | tuple[float, float]:
    """``source.offset``: a finite number, or a ``[min, max]`` pair of them with min <= max."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise SourceError(
                f"{value!r} must be a number or a [min, max] pair of numbers",
                field="source.offset",
            )
        lo, hi = (_finite_float(v, "source.offset") for v in value)
        if lo > hi:
            raise SourceError(
                f"range [{lo}, {hi}] has min > max (need min <= max)", field="source.offset"
            )
        return (lo, hi)
    return _finite_float(value, "source.offset")


def _check_steps(steps: object) -> int:
    if not _is_int(steps) or int(steps) < 1:  # type: ignore[call-overload]
        raise SourceError(f"{steps!r} must be an integer >= 1", field="steps")
    return int(steps)  # type: ignore[call-overload]


# --------------------------------------------------------------------------- synthetic


@dataclass(frozen=True)
class SyntheticSpec:
    """A periodic synthetic waveform (see the module docstring for the formulas).

    ``period`` is a fixed period in steps or an inclusive range ``(min, max)`` drawn per
    device (a list is accepted and stored as a tuple); ``offset`` the level the waveform
    swings around, a number or a range ``(min, max)`` drawn uniformly per device (so the
    devices' means differ: a per-device statistic then has something to find that a
    constant guess does not know); ``noise`` is the standard deviation
    of additive Gaussian noise; ``jitter`` the standard deviation, in steps, of an
    independent per-step perturbation of the sampling instant; ``phase`` a fraction of a
    period in ``[0, 1)`` or ``"random"``.
    """

    shape: str = "sine"
    period: int | tuple[int, int] = 24
    amplitude: float = 1.0
    offset: float | tuple[float, float] = 0.0
    noise: float = 0.0
    jitter: float = 0.0
    phase: float | str = "random"

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)

        if not isinstance(self.shape, str) or self.shape not in SHAPES:
            raise SourceError(
                f"{self.shape!r} is not one of {', '.join(SHAPES)}", field="source.shape"
            )

        period = self.period
        if isinstance(period, (tuple, list)):
            if len(period) != 2 or not all(_is_int(p) for p in period):
                raise SourceError(
                    f"{period!r} must be an integer or a [min, max] pair of integers",
                    field="source.period",
                )
            lo, hi = int(period[0]), int(period[1])
            if lo < 2:
                raise SourceError(f"range minimum {lo} must be >= 2 steps", field="source.period")
            if lo > hi:
                raise SourceError(
                    f"range [{lo}, {hi}] has min > max (need min <= max)",
                    field="source.period",
                )
            set_("period", (lo, hi))
        elif _is_int(period):
            if int(period) < 2:  # type: ignore[call-overload]
                raise SourceError(f"{period!r} must be >= 2 steps", field="source.period")
            set_("period", int(period))  # type: ignore[call-overload]
        else:
            raise SourceError(
                f"{period!r} must be an integer or a [min, max] pair of integers",
                field="source.period",
            )

        amplitude = _finite_float(self.amplitude, "source.amplitude")
        if amplitude <= 0:
            raise SourceError(f"{self.amplitude!r} must be > 0", field="source.amplitude")
        set_("amplitude", amplitude)
        set_("offset", _offset(self.offset))
        for name in ("noise", "jitter"):
            value = _finite_float(getattr(self, name), f"source.{name}")
            if value < 0:
                raise SourceError(f"{value!r} must be >= 0", field=f"source.{name}")
            set_(name, value)

        if isinstance(self.phase, str):
            if self.phase != "random":
                raise SourceError(
                    f"{self.phase!r} must be a fraction in [0, 1) or 'random'",
                    field="source.phase",
                )
        else:
            phase = _finite_float(self.phase, "source.phase")
            if not 0.0 <= phase < 1.0:
                raise SourceError(
                    f"{self.phase!r} must be a fraction in [0, 1) or 'random'",
                    field="source.phase",
                )
            set_("phase", phase)


@dataclass(frozen=True)
class StreamTruth:
    """What the simulator knows about one device's clean stream.

    ``period`` (steps) and ``phase`` (fraction of a period) are set for synthetic streams
    and ``None`` for data sets.
    """

    period: int | None
    phase: float | None


def _square(u: np.ndarray) -> np.ndarray:
    return np.where(np.mod(u, 1.0) < 0.5, 1.0, -1.0)


def _sine(u: np.ndarray) -> np.ndarray:
    return np.sin(2.0 * np.pi * u)


def _waveform(shape: str, u: np.ndarray) -> np.ndarray:
    if shape == "sine":
        return _sine(u)
    if shape == "square":
        return _square(u)
    if shape == "sawtooth":
        return 2.0 * np.mod(u, 1.0) - 1.0
    if shape == "composite":
        return _sine(u) + 0.5 * _sine(2.0 * u) + 0.25 * _square(u)
    raise SourceError(f"{shape!r} is not one of {', '.join(SHAPES)}", field="source.shape")


def synthetic_stream(
    spec: SyntheticSpec, steps: int, rng: np.random.Generator
) -> tuple[np.ndarray, StreamTruth]:
    """The clean synthetic stream of one device (float64, length ``steps``) and its truth.

    Only ``rng`` is used for randomness, drawn in the order period, phase, offset, jitter,
    noise (the offset is drawn only when it is a range, and draws for a zero jitter / noise
    are skipped, so a fixed offset gives the streams it gave before ranges existed).
    """
    steps = _check_steps(steps)
    if isinstance(spec.period, tuple):
        period = int(rng.integers(spec.period[0], spec.period[1], endpoint=True))
    else:
        period = spec.period
    phase = float(rng.random()) if spec.phase == "random" else float(spec.phase)
    if isinstance(spec.offset, tuple):
        offset = float(rng.uniform(spec.offset[0], spec.offset[1]))
    else:
        offset = spec.offset

    t = np.arange(steps, dtype=np.float64)
    if spec.jitter > 0:
        t = t + spec.jitter * rng.standard_normal(steps)
    u = t / period + phase
    x = offset + spec.amplitude * _waveform(spec.shape, u)
    if spec.noise > 0:
        x = x + spec.noise * rng.standard_normal(steps)
    return np.ascontiguousarray(x, dtype=np.float64), StreamTruth(period=period, phase=phase)


def device_rng(seed: int, device_index: int, purpose: str) -> np.random.Generator:
    """An independent, reproducible generator for one device and one purpose.

    Built from ``SeedSequence(entropy=(seed, device_index, crc32(purpose)))`` so that e.g.
    the ``"data"`` and ``"mechanism"`` streams of a device are independent, and equal
    arguments give equal streams across processes (``zlib.crc32`` is stable, unlike
    ``hash()``).
    """
    if not _is_int(seed) or int(seed) < 0:
        raise SourceError(f"{seed!r} must be an integer >= 0", field="seed")
    if not _is_int(device_index) or int(device_index) < 0:
        raise SourceError(f"{device_index!r} must be an integer >= 0", field="device_index")
    if not isinstance(purpose, str):
        raise SourceError(f"{purpose!r} must be a string", field="purpose")
    tag = zlib.crc32(purpose.encode("utf-8"))
    return np.random.default_rng(np.random.SeedSequence((int(seed), int(device_index), tag)))


# --------------------------------------------------------------------------- data sets


def _is_number(text: str) -> bool:
    """``text`` is a number as a CSV cell: what ``float`` reads, except digit grouping with
    underscores ("1_000" is 1000 to Python, text to every CSV reader)."""
    if "_" in text:
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


# a number with a decimal comma or digit grouping: "20,038", "-1,5", "1,200.5"
_DECIMAL_COMMA = re.compile(r"[+-]?\d+(,\d+)+(\.\d*)?")
_INTEGER = re.compile(r"[+-]?\d+")


def _row_id_problem(data: list, path: str, width: int, delimiter: str) -> str | None:
    """Why the extra leading field of every data row is not a row id, or ``None``. A row id
    is a text label on every row (a date, a name) or distinct integers (UCI Occupancy:
    "1", "2", ...; its test file starts at "140"; a file with rows dropped or out of order
    keeps distinct ids — the order of time is the date column's business). Under a
    one-name header with a comma between integers, a row id and a decimal comma
    ("20,038") look the same: refused; a repeated id (the integer part of a decimal comma
    repeating, "20,5" then "20,7") is refused too."""
    ids = [row[0].strip() for _, row in data]
    if not any(_is_number(i) for i in ids):
        return None
    hint = " (a decimal comma? numbers need a decimal point)" if delimiter == "," else ""
    seen: dict[int, int] = {}
    for k, value in enumerate(ids):
        first = seen.setdefault(int(value), k) if _INTEGER.fullmatch(value) else None
        if first is None or first != k:
            again = f" (also on line {data[first][0]})" if first is not None else ""
            return (
                f"line {data[k][0]} of {path} has one field more than its header of {width}, "
                f"read as a leading row id, but its first field {value!r}{again} is not one "
                f"(row ids are distinct integers or text labels){hint}"
            )
    values = [cell.strip() for _, row in data for cell in row[1:]]
    if width == 1 and delimiter == "," and all(_INTEGER.fullmatch(v) for v in values):
        return (
            f"line {data[0][0]} of {path} has one field more than its one-name header: a row "
            f"id and an integer, or a number with a decimal comma ({data[0][1][0].strip()},"
            f"{data[0][1][1].strip()})? Numbers need a decimal point; name a row-id column "
            "in the header"
        )
    return None


def _decimal_comma_column(
    header: list[str],
    first_row: list[str],
    keep: list[int],
    path: str,
    lineno: int,
    decimal: str = ".",
) -> SourceError | None:
    """A column skipped as text whose first value is a number with a decimal comma, or (among
    numeric columns) a number written with a mark of another script (``foreign_mark_hint``:
    "２０，５", "٢١٫٥"): it would be skipped silently and a numeric ``column`` index would
    then name the next one."""
    for j, cell in enumerate(first_row):
        hint = foreign_mark_hint(cell, decimal) if keep and j not in keep else ""
        if hint:
            return SourceError(
                f"column {header[j]!r} of {path}: its first value {cell.strip()!r} (line "
                f"{lineno}) is a number written with a mark of another script{hint}; "
                "convert the file rather than have the column skipped as text (a numeric "
                "column index would then name the next column)",
                field="source.path",
            )
        if j not in keep and decimal == "," and _DECIMAL_COMMA.fullmatch(cell.strip()):
            # "1,234.5" or "1,2,3" under decimal ",": not "set decimal ','" again
            grouped = "." in cell
            what, fix = (
                ("groups its digits with commas before a decimal point",
                 "remove the grouping (1234.5, or 1234,5 under decimal ',')")
                if grouped
                else ("has more than one comma", "write one number a field (1234,5)")
            )  # fmt: skip
            return SourceError(
                f"column {header[j]!r} of {path}: its first value {cell.strip()!r} (line "
                f"{lineno}) {what}, which neither decimal mark reads as one number "
                f"(source.decimal is ','): {fix}, rather than have the column skipped as text",
                field="source.path",
            )
        if j not in keep and _DECIMAL_COMMA.fullmatch(cell.strip()):
            return SourceError(
                f"column {header[j]!r} of {path}: its first value {cell.strip()!r} (line "
                f"{lineno}) is a number with a decimal comma (or digit grouping); numbers "
                'need a decimal point: set source.decimal = "," to read decimal commas '
                "(fields separated by semicolons or tabs), or convert the file, rather than "
                "have the column skipped as text",
                field="source.path",
            )
    return None


def _refuse_repeated_header(header: list[str], data: list, path: str) -> None:
    """A data line equal to the header (two exports concatenated, or the header written
    twice): a repeat on the first data line read as "no numeric columns", one further down
    as a non-numeric value in every column; refused naming both lines."""
    first_name = header[0]
    for lineno, row in data:
        if row[0].strip() == first_name and [cell.strip() for cell in row] == header:
            raise SourceError(
                f"line {lineno} of {path} repeats the header line: two files joined, or the "
                "header written twice? Remove the repeated header line",
                field="source.path",
            )


def _iso_time(text: str) -> datetime | None:
    """``text`` as an ISO 8601 date-time with a date part (``2015-02-04 17:51:00``), or
    None (a number, a label, another date format)."""
    if len(text) < 10 or text[4:5] != "-":
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _check_time_order(data: list, j: int, path: str, what: str) -> None:
    """A text column (or the row ids) whose first value is an ISO date-time must not go
    back in time: the rows are replayed as consecutive steps, and a shuffled or
    mis-sorted export gave streams of unrelated minutes with no word (the Occupancy loader
    and ``[gcdp]`` already refuse it; ``collector.gcdp.evaluation.check_date_order`` also
    reads other date formats). Equal times pass; the check stops at the first value that
    is not an ISO date-time, or whose time zone differs from the first's (not ordered)."""
    before = None
    for lineno, row in data:
        now = _iso_time(row[j].strip())
        if now is None or (before is not None and (now.tzinfo is None) != (before[0].tzinfo
                                                                            is None)):  # fmt: skip
            return
        if before is not None and now < before[0]:
            raise SourceError(
                f"{what} of {path} goes back in time: line {lineno} has {row[j].strip()!r}, "
                f"after {before[2]!r} on line {before[1]}; the rows are replayed in file order "
                "as consecutive steps: sort the file by time",
                field="source.path",
            )
        before = (now, lineno, row[j].strip())


def closest_name(column: str, names) -> str:
    """`` (did you mean 'Temp (°C)'?)`` for a column named in another case or nearly so."""
    import difflib

    folded = {name.casefold(): name for name in names}
    if column.casefold() in folded:
        return f" (did you mean {folded[column.casefold()]!r}?)"
    prefix = [name for name in names if name.casefold().startswith(column.casefold())]
    close = prefix[:1] or difflib.get_close_matches(column, list(names), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def column_name(column: str, names: list[str]) -> str:
    """The header's spelling of a column name a scenario gives (``source.column``,
    ``source.columns``, ``gcdp.utility_column``): ``column`` itself when one of ``names``,
    else the one name it differs from only in Unicode normal form or in the spaces around
    it (``_same_text``), else ``column`` unchanged (for the caller to refuse, with
    :func:`closest_name`'s hint). The one matching of every column name."""
    return column if column in names else _same_text(column, names)


def _same_text(column: str, names: list[str]) -> str:
    """The header's spelling of ``column`` when it differs only in its Unicode normal form
    (macOS and some loggers write 'é' as 'e' + U+0301, NFD; a scenario typed elsewhere holds
    U+00E9, NFC): the same text, which printed alike in a "not in header (did you mean
    ...?)" refusal; or in the spaces around it, which the header's names lose when read
    (`" Temp "` copied from the file's header line). Unchanged unless exactly one header
    name matches."""
    import unicodedata

    key = unicodedata.normalize("NFC", column.strip())  # the header's names are stripped
    same = {name for name in names if unicodedata.normalize("NFC", name) == key}
    return same.pop() if len(same) == 1 else column


def _excel_sep_line(text: str, path: str) -> tuple[str, str | None]:
    """Excel's ``sep=;`` first line names the delimiter (it was read as a one-field header:
    "line 2 has 4 fields, header has 2"): blanked (line numbers stay) and its delimiter
    returned; ``(text, None)`` without one."""
    end = text.find("\n")  # (not text.partition: a copy of a large file's text)
    first = text if end < 0 else text[:end]
    line = first.strip()
    if not line.lower().startswith("sep=") or (len(line) > 5 and line[5:].strip()):
        return text, None
    first, newline, rest = text.partition("\n")
    delimiter = first.lstrip()[4:5]  # a tab is whitespace: take it before stripping
    if delimiter not in (",", ";", "\t"):
        raise SourceError(
            f"line 1 of {path} is an Excel delimiter line {line!r}: fields are separated by "
            "comma, semicolon or tab here",
            field="source.path",
        )
    return newline + rest, delimiter


def _cell_kind(text: str) -> str:
    if _is_number(text):
        return "number"
    return "time" if _iso_time(text) is not None else "text"


def _dated_data_line(first: list[str], second: list[str] | None) -> bool:
    """A first line holding an ISO date-time and laid out like the second line (a date-time
    where it has one, a number where it has one) is a data line, not a header: a header-less
    export with a timestamp column lost its first reading to "auto" (no column name is an
    ISO date-time)."""
    if second is None or len(first) != len(second):
        return False
    kinds = [_cell_kind(cell) for cell in first]
    return "time" in kinds and kinds == [_cell_kind(cell.strip()) for cell in second]


# a file changed this recently may change again within one tick of its file system's clock
# (ext4 ~4 ms, HFS+ 1 s, FAT / exFAT 2 s) keeping its mtime, ctime and size: its key also
# holds a checksum of its bytes (git's "racily clean" entries; review R5, 2026-12-07)
_RACY_NS = 3 * 10**9


def _cache_key(path: str, st: os.stat_result) -> tuple:
    """What a cached parse of ``path`` depends on besides its settings: the real path,
    mtime and size (an edited file is read again), the inode and ctime (a file replaced by
    a rename, or whose mtime a tool restored: ``cp -p``, ``rsync -t``), the unpacked-size
    cap (a file read under a larger cap is refused again once it is lowered: helper R's
    review, 2026-12-07) and, for a file changed in the last ``_RACY_NS``, a CRC-32 of its
    bytes (an edit in the same clock tick as the one cached: review R5)."""
    key = (os.path.realpath(path), st.st_mtime_ns, st.st_size, max_unpacked(), st.st_ino,
           st.st_ctime_ns)  # fmt: skip
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < _RACY_NS:
        key += (_file_crc(path),)
    return key


def _file_crc(path: str) -> int | None:
    """CRC-32 of the bytes of ``path`` (None when unreadable: the parse says why)."""
    crc = 0
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                crc = zlib.crc32(chunk, crc)
    except OSError:
        return None
    return crc


@functools.lru_cache(maxsize=32)
def _parse_table(
    path: str, _key: tuple, has_header: bool | None = None, decimal: str = "."
) -> tuple:
    """Parse ``path``; ``_key`` (``_cache_key``) invalidates the cache on edits.
    Also returns the dropped columns (name -> first data value, its line number, whether
    every value is missing), the broken ones (``_table``), the columns with missing values
    (matrix column -> first missing cell, its line) and the mask of missing cells (None
    without any). ``has_header``: None to detect the header (module docstring),
    True / False to say whether the first line is one. ``decimal``: ``","`` reads numbers
    with a decimal comma (``_decimal_commas``)."""
    field = "source.path"
    try:
        raw = read_data_file(path)
        _refuse_binary_table(path, raw)
        if raw.startswith(_NUMPY_MAGIC):
            _no_header_in_numpy(path, has_header)
            _no_decimal_in_numpy(path, decimal)
            return _numpy_table(path, raw)
        text, delimiter = csv_text(raw, path)
        del raw  # (a large file: its bytes need not outlive its text)
        if decimal == "," and _one_column(text, delimiter):
            delimiter = ";"  # held nowhere in the text: every line is one field
        fast = _fast_table(text, delimiter, path, has_header, decimal)
        if fast is not None:
            return fast
        lines = _csv_rows(text, delimiter)
        del text
    except UnicodeDecodeError as exc:  # e.g. a Latin-1 export with "°C" in its header
        broken_utf16 = broken_utf16_reason(exc)
        if broken_utf16 is not None:
            raise SourceError(f"{path} {broken_utf16}", field=field) from exc
        line = exc.object[: exc.start].count(b"\n") + 1
        raise SourceError(
            f"{path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} on line {line}): "
            f"save it as UTF-8{_ansi_hint(exc.object, path)}",
            field=field,
        ) from exc
    except (OSError, csv.Error) as exc:
        raise SourceError(f"cannot read {path}: {exc}", field=field) from exc
    if not lines:
        raise SourceError(f"{path} is empty (no header, no data)", field=field)
    header_cells = [cell.strip() for cell in lines[0][1]]
    if decimal == ",":
        lines = _decimal_commas(lines, delimiter, path)
    header, data = _header_and_data(lines, path, has_header)
    if decimal == "," and data[0][0] != lines[0][0]:  # a header line: its names as written
        header = header_cells
    skip = _row_id_fields(header, data, path, delimiter)
    names, keep, dropped = _numeric_columns(header, data, skip, path, decimal)
    for j in range(-skip, len(header)):  # the row id (j = -1) and the text columns
        if j not in keep:
            what = "the row-id column" if j < 0 else f"column {header[j]!r}"
            _check_time_order(data, skip + j, path, what)
    matrix, broken, gaps, mask = _cell_matrix(
        [[row[skip + j] for j in keep] for _, row in data], data
    )
    return names, matrix, dropped, broken, gaps, mask


# ----------------------------------------------------------------- the fast path of a table
#
# A million-row file took 28 s and 869 MB (a user's 29 MB file): every cell became a Python
# string of a list of lists, kept until the matrix was built. ``_fast_table`` reads the
# same text in blocks of lines, splits each block's lines once (``csv.reader`` over the
# lines of a file with quotes) and converts each numeric column of a block with numpy
# (which reads a string as ``float`` does: ``_cell_value``'s values, bit for bit), keeping
# of its cells only the ones that are not finite numbers (a missing or bad value, named by
# ``_table``'s callers); decimal commas are read by blocks too (``_comma_cells``).
# Whatever it does not handle exactly as the careful path below does, it leaves to it
# (``_Fallback``): a quoted field holding a line end, a lone carriage return (any, in a
# file with quotes), a field longer than ``csv.field_size_limit()``, a line of another
# field count, a row id, a repeated header line, a date column going back in time, no
# numeric column, a decimal comma or foreign mark in a first value... so every refusal is
# the careful path's own sentence (helper P, 2026-12-07; tests/unit/test_P_csv_pin.py pins
# the results over thousands of awkward files, test_P_csv_fast_path.py compares the paths).

_FAST_BLOCK = 1 << 20  # characters of text per block (about 35,000 lines of 30 characters)
_FIRST = operator.itemgetter(0)
_FIFTH = operator.itemgetter(4)


class _Fallback(Exception):
    """The fast path leaves this file to the careful one."""


def _fast_head(text: str, delimiter: str, limit: int) -> list[tuple[int, list[str], int]]:
    """The first two non-blank lines of ``text``: ``(line number, fields, where the line
    starts)``."""
    found: list[tuple[int, list[str], int]] = []
    pos, lineno = 0, 1
    while len(found) < 2 and pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        if end - pos > limit:  # csv.Error: "field larger than field limit"
            raise _Fallback
        row = text[pos:end].split(delimiter)
        if "".join(row).strip():
            found.append((lineno, row, pos))
        pos, lineno = end + 1, lineno + 1
    return found


def _fast_blocks(text: str, delimiter: str, start: int, lineno: int, n_fields: int, size: int):
    """The non-blank lines of ``text`` from ``start`` (line ``lineno``) on, in blocks of
    about ``size`` characters, as ``(line numbers, columns)``: the fields of a block's
    lines by column (``n_fields`` columns: a line of another field count is left to the
    careful path). A field is as ``csv.reader`` gives it except for the spaces it skips at
    its start (``skipinitialspace``): the caller strips the cells it keeps
    (``_fast_cell``)."""
    limit = csv.field_size_limit()
    pos, end_of_text = start, len(text)
    while pos < end_of_text:
        end = text.find("\n", pos + size)
        if end < 0:  # the last block (a newline ending the text ends its last line)
            end = end_of_text - 1 if text.endswith("\n") else end_of_text
        block = text[pos:end]
        lines = block.split("\n")
        linenos = np.arange(lineno, lineno + len(lines), dtype=np.int64)
        lineno += len(lines)
        pos = end + 1
        if max(map(len, lines)) > limit:  # csv.Error: "field larger than field limit"
            raise _Fallback
        if set(map(str.count, lines, itertools.repeat(delimiter))) == {n_fields - 1}:
            flat = block.replace("\n", delimiter).split(delimiter)
            columns = [flat[j::n_fields] for j in range(n_fields)]
            del flat
        else:  # blank lines, or lines of other field counts
            columns = [[] for _ in range(n_fields)]
        # a blank line (only spaces and delimiters: "".join(row).strip() is empty) has a
        # blank first field; only those lines are looked at twice
        rows = [line.split(delimiter) for line in lines] if not columns[0] else None
        firsts = columns[0] or map(_FIRST, rows)
        blank = [
            i
            for i, first in enumerate(map(str.strip, firsts))
            if not first and not "".join(lines[i].split(delimiter)).strip()
        ]
        if rows is not None or blank:
            kept = np.ones(len(lines), dtype=bool)
            kept[blank] = False
            if rows is None:
                rows = [line.split(delimiter) for line in lines]
            rows = list(itertools.compress(rows, kept.tolist()))
            if any(len(row) != n_fields for row in rows):
                raise _Fallback
            columns = [list(column) for column in zip(*rows, strict=True)]
            linenos = linenos[kept]
        if len(linenos):
            yield linenos, columns


def _fast_cell(cell: str) -> str:
    """A field as ``csv.reader(skipinitialspace=True)`` gives it (no quotes: its leading
    spaces skipped)."""
    return cell.lstrip(" ")


class _FastColumn:
    """One column of the file being read by ``_fast_table``: ``kind`` is "number" (kept),
    "pending" (its first value is missing: its first present value decides), "time" (a text
    column of ISO date-times whose order is being checked) or "text"."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.blocks: list[np.ndarray] = []
        self.missing: list[np.ndarray] = []  # row numbers of missing cells
        self.first_gap: tuple[int, str] | None = None
        self.first_broken: tuple[int, str] | None = None
        self.present: tuple[str, int] | None = None  # a pending column's first present value
        self.before: datetime | None = None  # a time column's last time

    def numbers(
        self, cells: tuple, row0: int, linenos: np.ndarray, underscores: bool, clean=_fast_cell
    ) -> None:
        """Convert a block of a number (or pending) column as ``_cell_matrix`` does."""
        values = None
        if not underscores:  # numpy reads "1_000" as 1000
            try:
                values = np.array(cells, dtype=np.float64)
            except ValueError:  # a cell that is no number: each cell as _cell_value reads it
                values = None
        if values is None:
            values = np.array([_cell_value(cell) for cell in cells], dtype=np.float64)
        big = np.flatnonzero(np.abs(values) >= _EXACT_INT)
        for i in big.tolist():  # _mark_inexact_integers
            if inexact_integer_reason(cells[i]) is not None:
                values[i] = np.nan
        bad = np.flatnonzero(~np.isfinite(values)).tolist()
        if self.kind == "pending":
            first = np.flatnonzero(~np.isnan(values))
            stop = int(first[0]) if first.size else len(cells)
            for i in bad:  # a NaN before the first number may be a present text value
                if i >= stop:
                    break
                if not _is_missing(cells[i]):
                    stop = i
                    break
            if stop < len(cells):
                self.present = (cells[stop].strip(), int(linenos[stop]))
                if not _is_number(self.present[0]):  # a text column after its gaps
                    self.kind, self.blocks, self.missing = "text", [], []
                    self.first_gap = self.first_broken = None
                    return
                self.kind = "number"
        missing = []
        for i in bad:
            cell = clean(cells[i])
            if _is_missing(cell):
                missing.append(row0 + i)
                if self.first_gap is None:
                    self.first_gap = (row0 + i, cell)
            elif self.first_broken is None:
                self.first_broken = (row0 + i, cell)
        if missing:
            self.missing.append(np.array(missing, dtype=np.int64))
        self.blocks.append(values)

    def times(self, cells: tuple) -> None:
        """``_check_time_order`` on a block of a time column: ``_Fallback`` where it would
        refuse the file; the check ends where it would stop."""
        before = self.before
        stripped = list(map(str.strip, cells))
        if min(map(len, stripped)) >= 10 and set(map(_FIFTH, stripped)) == {"-"}:
            try:  # _iso_time of every cell, at once
                times = list(map(datetime.fromisoformat, stripped))
            except ValueError:
                times = None
            if times is not None and len(set(time.tzinfo is None for time in times)) == 1:
                if before is not None and (times[0].tzinfo is None) != (before.tzinfo is None):
                    self.kind = "text"
                    return
                if before is not None:
                    times.insert(0, before)
                if not all(map(operator.le, times, times[1:])):
                    raise _Fallback  # a time before the one above it
                self.before = times[-1]
                return
        for now in map(_iso_time, stripped):
            if now is None or (
                before is not None and (now.tzinfo is None) != (before.tzinfo is None)
            ):
                self.kind = "text"
                return
            if before is not None and now < before:
                raise _Fallback
            before = now
        self.before = before


def _fast_table(
    text: str, delimiter: str, path: str, has_header: bool | None, decimal: str
) -> tuple | None:
    """``_parse_table``'s result for a CSV ``text``, or None to leave it to the careful
    path (the section comment above)."""
    if decimal == "," and delimiter == ",":  # (check_decimal refuses it)
        return None
    quoted = '"' in text
    if "\r" in text:
        if quoted:  # a quoted field may hold a line end, which stays as written
            return None
        text = text.replace("\r\n", "\n")
        if "\r" in text:
            return None
    try:
        return _fast_read(text, delimiter, path, has_header, decimal, quoted)
    except (_Fallback, SourceError, csv.Error):
        return None


class _FastRecords:
    """The records of a ``text`` with quotes (no carriage return) exactly as ``_csv_rows``
    gives them: ``csv.reader`` over its lines without their newline reads each line as
    ``io.StringIO`` gives it, unless a quoted field holds a line end (a record then spans
    lines: fewer records than lines, left to the careful path at the end)."""

    def __init__(self, text: str, delimiter: str, size: int) -> None:
        self.text, self.size, self.lines, self.lineno = text, size, 0, 0
        self.reader = csv.reader(self._pieces(), delimiter=delimiter, skipinitialspace=True)

    def _pieces(self):
        text, pos = self.text, 0
        while True:
            end = text.find("\n", pos + self.size)
            piece = text[pos:] if end < 0 else text[pos:end]
            split = piece.split("\n")
            self.lines += len(split)
            yield from split
            if end < 0:
                return
            pos = end + 1

    def head(self) -> list[tuple[int, list[str], None]]:
        """The first two non-blank records, ``(line number, fields, None)``."""
        found = []
        for row in self.reader:
            self.lineno += 1
            if "".join(row).strip():
                found.append((self.lineno, row, None))
                if len(found) == 2:
                    break
        return found

    def blocks(self, first: list, n_fields: int):
        """``first`` (records of the head, ``(line number, fields)``), then the non-blank
        records after the head, as ``(line numbers, columns)`` by blocks."""
        if first:
            yield self._columns(np.array([n for n, _ in first]), [r for _, r in first], n_fields)
        rows_a_block = max(1, self.size // 32)
        while True:
            rows = list(itertools.islice(self.reader, rows_a_block))
            if not rows:
                break
            linenos = np.arange(self.lineno + 1, self.lineno + 1 + len(rows), dtype=np.int64)
            self.lineno += len(rows)
            if set(map(len, rows)) == {n_fields}:  # a blank record has a blank first field
                blank = [i for i, f in enumerate(map(str.strip, map(_FIRST, rows))) if not f]
                blank = [i for i in blank if not "".join(rows[i]).strip()]
            else:
                blank = [i for i, row in enumerate(rows) if not "".join(row).strip()]
            if blank:
                kept = np.ones(len(rows), dtype=bool)
                kept[blank] = False
                rows = list(itertools.compress(rows, kept.tolist()))
                linenos = linenos[kept]
            if rows:
                yield self._columns(linenos, rows, n_fields)
        if self.lineno != self.lines:  # a record of several lines
            raise _Fallback

    @staticmethod
    def _columns(linenos: np.ndarray, rows: list, n_fields: int):
        if set(map(len, rows)) != {n_fields}:
            raise _Fallback
        return linenos, [list(column) for column in zip(*rows, strict=True)]


def _fast_read(
    text: str, delimiter: str, path: str, has_header: bool | None, decimal: str, quoted: bool
):
    if quoted:  # csv.reader's records, their fields as they are
        records = _FastRecords(text, delimiter, _FAST_BLOCK)
        head = records.head()
        clean = str
    else:  # lines split at the delimiter, their fields' leading spaces left
        head = _fast_head(text, delimiter, csv.field_size_limit())
        clean = _fast_cell
    if not head:
        raise _Fallback
    read = _comma_cells if decimal == "," else list  # the cells as _decimal_commas reads them
    names = [cell.strip() for cell in head[0][1]]  # the header's names as written
    data_records = [(lineno, fields) for lineno, fields, _ in head]  # (as they are)
    head = [(lineno, read(fields), pos) for lineno, fields, pos in head]
    first = [cell.strip() for cell in head[0][1]]
    if has_header is None:
        has_header = not all(_is_number(cell) for cell in first) and not _dated_data_line(
            first, head[1][1] if len(head) > 1 else None
        )
    if has_header:
        header = first  # (_refuse_repeated_header compares the lines as read)
        head, data_records = head[1:], data_records[1:]
    else:
        header = [str(i) for i in range(len(first))]
    if not head:
        raise _Fallback
    first_line, first_fields, start = head[0]
    width, n_fields = len(header), len(first_fields)
    if n_fields not in (width, width + 1):
        raise _Fallback
    first_row = [clean(cell) for cell in first_fields[:width]]
    columns = [
        _FastColumn(
            "pending"
            if _is_missing(cell)
            else "number"
            if _is_number(cell.strip())
            else "time"
            if _iso_time(cell.strip()) is not None
            else "text"
        )
        for cell in first_row
    ]
    all_numbers = []
    row0 = 0
    if quoted:  # the head's data records again, then the rest
        blocks = records.blocks(data_records, n_fields)
    else:
        blocks = _fast_blocks(text, delimiter, start, first_line, n_fields, _FAST_BLOCK)
    for linenos, fields in blocks:
        cells = [read(column) for column in fields]
        if n_fields > width and any(map(str.strip, cells[width])):
            raise _Fallback  # a leading row id, not a delimiter ending every row
        if has_header and header[0] in map(str.strip, cells[0]):
            for i, cell in enumerate(cells[0]):  # _refuse_repeated_header's test
                if cell.strip() == header[0] and [c[i].strip() for c in cells] == header:
                    raise _Fallback
        for j, column in enumerate(columns):
            if column.kind in ("number", "pending"):
                column.numbers(cells[j], row0, linenos, "_" in "".join(cells[j]), clean)
            elif column.kind == "time":
                column.times(cells[j])
        all_numbers.append(linenos)
        row0 += len(linenos)
    if has_header:
        header = names
    return _fast_result(header, first_row, first_line, columns, all_numbers, row0, path, decimal)


# a block of a column of numbers with a decimal comma, integers or empty cells (no spaces):
# what decimal_comma_cell reads as the cell with its comma a point
_COMMA_CELL = r"(?:[+-]?(?:\d+,\d*|,\d+|\d+)(?:[eE][+-]?\d+)?)?"
_COMMA_CELLS = re.compile(rf"{_COMMA_CELL}(?:\n{_COMMA_CELL})*")


def _comma_cells(cells) -> list[str]:
    """``cells`` as ``_decimal_commas`` reads them (``decimal = ","``), at once when they
    are all plain numbers with a decimal comma, integers or empty."""
    joined = "\n".join(cells)
    if _COMMA_CELLS.fullmatch(joined):
        return joined.replace(",", ".").split("\n")
    if "," not in joined and "." not in joined:  # decimal_comma_cell reads them unchanged
        return list(cells)
    return [_comma_cell(cell) for cell in cells]


def _comma_cell(cell: str) -> str:
    """One cell as ``_decimal_commas`` reads it."""
    read = decimal_comma_cell(cell)
    return cell.strip() + _POINT_MARKED if read is None else read


def _fast_result(header, first_row, first_line, columns, all_numbers, n_rows, path, decimal):
    """The table of ``_fast_read``'s columns, as ``_numeric_columns`` and ``_cell_matrix``
    build it."""
    keep = [j for j, column in enumerate(columns) if column.kind == "number"]
    if not keep:
        raise _Fallback
    if _decimal_comma_column(header, first_row, keep, path, first_line, decimal) is not None:
        raise _Fallback
    names = tuple(header[j] for j in keep)
    dropped = {}
    for j, cell in enumerate(first_row):
        if j in keep:
            continue
        column = columns[j]
        if column.present is not None:  # a text column after leading gaps
            dropped[header[j]] = (*column.present, False)
        else:  # a text column, or one whose every value is missing
            dropped[header[j]] = (cell.strip(), first_line, column.kind == "pending")
    lines = np.concatenate(all_numbers)
    matrix = np.empty((n_rows, len(keep)), dtype=np.float64)
    gaps_at, broken_at = [], []
    mask = None
    for k, j in enumerate(keep):
        column = columns[j]
        matrix[:, k] = np.concatenate(column.blocks) if column.blocks else []
        if column.first_gap is not None:
            gaps_at.append((column.first_gap[0], k, column.first_gap[1]))
        if column.first_broken is not None:
            broken_at.append((column.first_broken[0], k, column.first_broken[1]))
    if gaps_at or broken_at:
        mask = np.zeros(matrix.shape, dtype=bool)
        for k, j in enumerate(keep):
            for rows in columns[j].missing:
                mask[rows, k] = True
        mask.flags.writeable = False
    gaps = {k: (cell, int(lines[r])) for r, k, cell in sorted(gaps_at)}
    broken = {k: (cell, int(lines[r])) for r, k, cell in sorted(broken_at)}
    matrix.flags.writeable = False
    return names, matrix, dropped, broken, gaps, mask


def _ansi_hint(raw: bytes, path: str) -> str:
    """A hint for a file that reads as Windows-1252 (Excel's "CSV" save on Windows in
    Western Europe writes its "ANSI" code page, with ``°`` as byte 0xb0): the command that
    converts it (helper E's user trial, round 4)."""
    try:
        raw.decode("cp1252")
    except UnicodeDecodeError:
        return ""
    name = os.path.basename(path)
    return (
        ' (a Windows "ANSI" export, such as Excel\'s "CSV" save? save it as "CSV UTF-8", '
        f"or convert it: iconv -f cp1252 -t utf-8 {name} > utf8-{name})"
    )


def _csv_lines(raw: bytes, path: str, decimal: str = ".") -> tuple[list, str]:
    """The non-blank lines of a CSV file's bytes as ``(line number, fields)`` and their
    delimiter (an Excel ``sep=`` line's, else sniffed; under ``decimal = ","`` a file of one
    column: ``_one_column``). Raises ``UnicodeDecodeError`` and ``csv.Error`` for
    ``_parse_table`` to word."""
    text, delimiter = csv_text(raw, path)
    if decimal == "," and _one_column(text, delimiter):
        delimiter = ";"  # held nowhere in the text: every line is one field
    return _csv_rows(text, delimiter), delimiter


def _csv_rows(text: str, delimiter: str) -> list:
    """The non-blank lines of a CSV text as ``(line number, fields)`` (``_csv_lines``)."""
    return [
        (lineno, row)
        for lineno, row in enumerate(
            csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, skipinitialspace=True),
            start=1,
        )
        if "".join(row).strip()  # a cell not blank: one call, not a generator per row
    ]


def _one_column(text: str, delimiter: str) -> bool:
    """Whether a file read with ``decimal = ","`` is one column of decimal commas: the commas
    were sniffed as its delimiter, yet its first non-blank line (a header of one name)
    holds no comma, semicolon or tab, nor does any line a semicolon or a tab. A spreadsheet
    saves one column with no separator at all ("t", "20,5", "21,5"): it was refused as "its
    fields are separated by commas" (helper B's user day, 2026-12-07). Without a header the
    file stays refused (``20,5`` may be two integer fields)."""
    if delimiter != "," or ";" in text or "\t" in text:
        return False
    first = next((line for line in text.splitlines() if line.strip()), "")
    return "," not in first


# under decimal = ",": a number with a decimal comma, read with a point ("3,14", "-0,5",
# ",5", "1,5e3"), and a number with a decimal point, which is not one there ("1.234" is
# 1234 in a German export: digit grouping, never read as 1.234)
_COMMA_NUMBER = re.compile(r"[+-]?(\d+,\d*|,\d+)([eE][+-]?\d+)?")
# ... and with points grouping its digits before a decimal comma ("1.234,5", Excel's
# "#.##0,0"): unambiguous, read as 1234.5; without the comma ("1.234") it stays refused
_GROUPED_COMMA_NUMBER = re.compile(r"[+-]?[1-9]\d{0,2}(\.\d{3})+,\d*([eE][+-]?\d+)?")
# ... or with spaces, as a French locale writes them ("1 234,5": a space, a no-break space
# U+00A0 or a narrow one U+202F, one kind in a number), read as 1234.5 (without the comma,
# "1 234", it stays text). They were text, so a first value "1 234,5" had its column
# skipped silently and a column index shifted (helper B's user day, 2026-12-07)
_SPACES = "[ \u00a0\u202f]"
_SPACE_GROUPED_COMMA_NUMBER = re.compile(
    rf"[+-]?[1-9]\d{{0,2}}({_SPACES})\d{{3}}(\1\d{{3}})*,\d*([eE][+-]?\d+)?"
)
# a comma that may group thousands as well as mark decimals: "1,234", "-12,345,678"
_THOUSANDS_GROUPED = re.compile(r"[+-]?\d{1,3}(,\d{3})+")
_POINT_NUMBER = re.compile(r"[+-]?(\d+\.\d*|\.\d+)([eE][+-]?\d+)?")
DECIMALS = (".", ",")


def check_decimal(
    value: object, *, field: str, delimiter: str | None = None, path: str | None = None
) -> str:
    """The one check of a decimal mark, for every reader of text tables (a ``[source]``'s
    ``decimal``, ``load_table``, ``collector.gcdp.evaluation.load_occupancy``, ``bench gcdp
    --decimal``): ``value`` must be one of ``DECIMALS``, ``"."`` or ``","``; with the file's
    ``delimiter`` (and its ``path``, for the sentence), ``","`` is refused for a file whose
    fields are separated by commas (a comma cannot be both). ``field`` is the caller's name
    of the setting, which the error carries (``"source.decimal"``, ``"decimal"``: the bench
    command prints it as ``--decimal``).

    Returns:
        ``value``, a valid decimal mark.

    Raises:
        DecimalMarkError: naming ``field``, the limit and ``value``."""
    if not isinstance(value, str) or value not in DECIMALS:
        raise DecimalMarkError(
            f"must be '.' or ',' (the decimal mark of the file's numbers), got {value!r}",
            field=field,
            limit="'.' or ','",
            value=value,
        )
    if value == "," and delimiter == ",":
        raise DecimalMarkError(
            f"must be '.' for {path}, got ',': its fields are separated by commas, so a comma "
            "cannot also be its decimal mark (a file of decimal commas separates its fields "
            "by semicolons or tabs; one column of decimal commas needs a header line)",
            field=field,
            limit="',' only for a file whose fields are separated by semicolons or tabs",
            value=value,
        )
    return value


def _decimal_commas(lines: list, delimiter: str, path: str) -> list:
    """``lines`` (``_csv_lines``) with every number written with a decimal comma rewritten
    with a point, and every number written with a decimal point marked as not a number
    (its column is then text, or its cell a bad value named when a source reads it): the
    reading of ``decimal = ","``; points or spaces grouping the digits before a decimal
    comma (``1.234,5``, ``1 234,5``) are dropped. Its fields must be separated by
    semicolons or tabs: in a comma-separated file a decimal comma cannot be told from a
    field separator (``check_decimal``)."""
    check_decimal(",", field="source.decimal", delimiter=delimiter, path=path)
    return [(lineno, [_comma_cell(cell) for cell in row]) for lineno, row in lines]


# a cell with a decimal point under decimal = ",": marked as no number (_decimal_commas)
_POINT_MARKED = (
    " (a decimal point, but source.decimal is ',': digit grouping? it is read only "
    "before a decimal comma, 1.234,0)"
)


def decimal_comma_cell(cell: str) -> str | None:
    """A cell of a file of decimal commas as ``float`` reads it, the reading of
    ``decimal = ","`` (a scenario's source and ``bench gcdp --decimal ,`` alike): "3,14" ->
    "3.14", "1.050,0" and "1 050,0" -> "1050.0"; None for a number with a decimal point and
    no comma ("1.234": 1.234, or 1234 grouped? refused, never guessed); any other cell
    unchanged (an integer, a word, an empty cell: the caller decides)."""
    text = cell.strip()
    if _COMMA_NUMBER.fullmatch(text):
        return text.replace(",", ".")
    if _GROUPED_COMMA_NUMBER.fullmatch(text):
        return text.replace(".", "").replace(",", ".")
    if _SPACE_GROUPED_COMMA_NUMBER.fullmatch(text):
        return re.sub(_SPACES, "", text).replace(",", ".")
    if _POINT_NUMBER.fullmatch(text):
        return None
    return cell


def _no_decimal_in_numpy(path: str, decimal: str) -> None:
    """A NumPy file holds binary numbers: ``decimal = ","`` would be silently ignored."""
    if decimal != ".":
        raise DecimalMarkError(
            f"{path} is a NumPy file, which holds binary numbers, not text: leave decimal "
            f'out ("."), got {decimal!r}',
            field="source.decimal",
            limit="'.' for a NumPy file",
            value=decimal,
        )


def csv_text(raw: bytes, path: str) -> tuple[str, str]:
    """A CSV file's text and delimiter as the CSV sources read them, for any reader of CSV
    tables (the Occupancy-format reader of ``bench gcdp`` too): the bytes decoded
    (``decode_text``), a JSON document refused, an Excel ``sep=`` first line blanked (line
    numbers stay) naming the delimiter, else the delimiter sniffed
    (``protocol.delimiters.sniff_delimiter``); a DOS end-of-file mark (Ctrl-Z, ``\x1a``,
    one or a run of them) at the very end of the text is dropped (anywhere else it stays,
    and is refused as the cell that holds it). Raises ``SourceError`` (field
    ``source.path``) and ``UnicodeDecodeError`` (for the caller to word)."""
    text = decode_text(raw).rstrip(DOS_END_OF_FILE)
    _refuse_json(text, path)
    text, delimiter = _excel_sep_line(text, path)
    return text, delimiter or sniff_delimiter(_head_lines(text))


def _head_lines(text: str, size: int = 1 << 16) -> str:
    """The whole lines of ``text`` in its first ``size`` characters when they hold two
    non-blank lines (all ``sniff_delimiter`` reads: it split every line of a large file),
    else ``text``."""
    end = text.rfind("\n", 0, size)
    head = text[: end + 1] if end >= 0 else ""
    if len(text) <= size or sum(1 for line in head.splitlines() if line.strip()) < 2:
        return text
    return head


def _refuse_json(text: str, path: str) -> None:
    """A JSON document or JSON Lines file (its first line, or the whole text, parses as a
    JSON object or array) is refused naming it: read as CSV, its one line became a header
    ("has a header but no data rows") or its objects text fields ("no numeric columns"). A
    CSV header that merely starts with a bracket (``[temp],[hum]``) is not JSON."""
    head = text.lstrip()
    if not head.startswith(("{", "[")):
        return
    first = head.split("\n", 1)[0]
    for candidate in (first, head):  # JSON Lines, or one document
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        lines = candidate is first and first != head.rstrip() and isinstance(value, dict)
        raise SourceError(
            f"{path} is JSON, not CSV text: a source reads a CSV file (comma, semicolon or "
            "tab separated, one column per channel) or a NumPy .npy / .npz file; convert "
            f"the JSON to one of them{_json_lines_hint(path) if lines else ''}",
            field="source.path",
        )


def _json_lines_hint(path: str) -> str:
    """The command that turns JSON Lines of flat objects (a logger's ``{"t": 1, "temp":
    20.5}`` a line) into a CSV with their keys as the header (helper E's user trial, round
    4: the refusal said only "convert the JSON")."""
    name = os.path.basename(path)
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return (
        " (JSON Lines of flat objects, one reading a line, convert with: python -c "
        '"import csv, json, sys; rows = [json.loads(l) for l in open(sys.argv[1]) if '
        "l.strip()]; keys = list(dict.fromkeys(k for r in rows for k in r)); "
        'w = csv.DictWriter(sys.stdout, keys); w.writeheader(); w.writerows(rows)" '
        f"{name} > {stem}.csv; a key missing from a line is an empty cell, see source.missing)"
    )


def _header_and_data(lines: list, path: str, has_header: bool | None) -> tuple[list[str], list]:
    """The header (the first line's stripped fields, or ``"0" .. "k-1"`` without one) and
    the data lines; ``has_header`` None detects it (module docstring). A file without data
    rows, or repeating its header line, is refused."""
    first = [cell.strip() for cell in lines[0][1]]
    if has_header is None:
        has_header = not all(_is_number(cell) for cell in first) and not _dated_data_line(
            first, lines[1][1] if len(lines) > 1 else None
        )
    if has_header:
        header = first
        data = lines[1:]
    else:
        header = [str(i) for i in range(len(first))]
        data = lines
    if not data:
        raise SourceError(f"{path} has a header but no data rows", field="source.path")
    if has_header:
        _refuse_repeated_header(header, data, path)
    return header, data


def _row_id_fields(header: list[str], data: list, path: str, delimiter: str) -> int:
    """How many leading fields of every data row are not under the header: 1 for a row id
    (one field more than the header, its last field not empty on every row), else 0 (a
    delimiter ending every row leaves an empty last field, ignored). Rows of another field
    count, or a row id that is not one (``_row_id_problem``), are refused."""
    field = "source.path"
    width = len(header)
    n_fields = len(data[0][1])
    if n_fields == width + 1:
        # one field more than the header: a delimiter ending every row (its last field is
        # empty on every line; read as a row id, it moved every column one name to the
        # left, silently) or a leading row id (UCI Occupancy)
        trailing = all(not row[-1].strip() for _, row in data if len(row) == n_fields)
        skip = 0 if trailing else 1
        problem = None if trailing else _row_id_problem(data, path, width, delimiter)
        if problem:
            raise SourceError(problem, field=field)
    elif n_fields == width:
        skip = 0
    else:
        raise SourceError(
            f"line {data[0][0]} of {path} has {n_fields} fields, header has {width}"
            f"{_comment_hint(header, data)}",
            field=field,
        )
    for lineno, row in data:
        if len(row) != n_fields:
            raise SourceError(
                f"line {lineno} of {path} has {len(row)} fields, expected {n_fields}"
                f"{_comment_hint(header, data)}",
                field=field,
            )
    return skip


def _comment_hint(header: list[str], data: list) -> str:
    """A hint for a file of the wrong shape whose header or first data line starts with
    ``#``: a logger's comment lines above the header (``# exported by ...``) were read as
    the header and a data row, and the real header was then "a line of another width"."""
    firsts = [header[0] if header else "", *(row[0] for _, row in data[:1] if row)]
    if not any(cell.strip().startswith("#") for cell in firsts):
        return ""
    return " (lines starting with '#' are not skipped as comments: remove them from the file)"


def _whitespace_hint(first_row: list[str]) -> str:
    """A hint for a file whose fields are separated by spaces (``mote_locs.txt`` of the
    Intel Lab data: ``1 21.5 23``): the delimiters read are ``,``, ``;`` and a tab, so a
    whole line was one text field (helper E's user trial, 2026-12-06)."""
    if not any(len(c.split()) > 1 and all(_is_number(t) for t in c.split()) for c in first_row):
        return ""
    return (
        " (its fields look separated by spaces, which are not read as a delimiter: use commas,"
        " semicolons or tabs, e.g. `tr -s ' ' ',' < FILE > FILE.csv`)"
    )


def _numeric_columns(
    header: list[str], data: list, skip: int, path: str, decimal: str = "."
) -> tuple[tuple[str, ...], list[int], dict]:
    """The kept (numeric) columns' names, their header indices and the dropped columns
    (``_parse_table``). A column's first present value decides; a decimal comma, a number
    written with a mark of another script (``decimal``: the file's decimal mark, for the
    hint), or no numeric column at all, is refused."""
    field = "source.path"
    first_row = data[0][1][skip : skip + len(header)]
    # a column's first value that is missing ("", "NA", ...: MISSING_TOKENS) does not make it
    # text: its first present value decides (an all-missing column is dropped, and refused
    # when a source names it)
    leading = {
        j: _first_present(data, skip + j) for j, cell in enumerate(first_row) if _is_missing(cell)
    }
    keep = [
        j
        for j, cell in enumerate(first_row)
        if (
            (leading[j] is not None and _is_number(leading[j][0]))
            if j in leading
            else _is_number(cell.strip())
        )
    ]
    comma = _decimal_comma_column(header, first_row, keep, path, data[0][0], decimal)
    if comma is not None:
        raise comma
    if not keep:
        shown = ", ".join(repr(cell.strip()) for cell in first_row[:6])
        comma = any(_is_number(cell.strip().replace(",", ".")) for cell in first_row)
        raise SourceError(
            f"{path} has no numeric columns: the fields of its first data row (line "
            f"{data[0][0]}) are {shown}{', ...' if len(first_row) > 6 else ''}"
            + (
                ' (numbers need a decimal point, not a decimal comma: source.decimal = "," '
                "reads decimal commas)"
                if comma
                else ""
            )
            + (
                " (the minus sign '\u2212' (U+2212) is not the hyphen-minus '-' numbers need)"
                if any(cell.strip().startswith("\u2212") for cell in first_row)
                else _first_foreign_mark_hint(first_row, decimal)
            )
            + _whitespace_hint(first_row),
            field=field,
        )
    names = tuple(header[j] for j in keep)
    dropped = {
        header[j]: (
            *(leading[j] if leading.get(j) is not None else (cell.strip(), data[0][0])),
            j in leading and leading[j] is None,  # every value missing
        )
        for j, cell in enumerate(first_row)
        if j not in keep  # a text column named like a numeric one too: _column_index refuses it
    }
    return names, keep, dropped


def _first_foreign_mark_hint(cells: list[str], decimal: str) -> str:
    """``foreign_mark_hint`` of the first of ``cells`` that has one, else ``""``: a file of
    one column of "２０，５" under ``decimal = ","`` was "no numeric columns" with no hint."""
    return next((hint for hint in (foreign_mark_hint(c, decimal) for c in cells) if hint), "")


def _cell_matrix(cells: list[list[str]], data: list) -> tuple:
    """The kept cells as a read-only float64 matrix, the broken and the gap columns
    (matrix column -> first such cell, its line) and the read-only mask of missing cells
    (None without any); ``data`` gives the line numbers."""
    broken: dict[int, tuple[str, int]] = {}
    gaps: dict[int, tuple[str, int]] = {}
    mask = None
    try:
        if any("_" in cell for row in cells for cell in row):  # numpy reads "1_000" as 1000
            raise ValueError("underscore")
        matrix = np.array(cells, dtype=np.float64)
    except ValueError:
        matrix = np.array([[_cell_value(cell) for cell in row] for row in cells])
    _mark_inexact_integers(matrix, cells)
    if not np.isfinite(matrix).all():
        mask = np.zeros(matrix.shape, dtype=bool)  # the missing cells (MISSING_TOKENS)
        for r, k in zip(*np.nonzero(~np.isfinite(matrix)), strict=True):
            cell = cells[r][k]
            if _is_missing(cell):
                mask[r, k] = True
                gaps.setdefault(int(k), (cell, data[r][0]))
            else:
                broken.setdefault(int(k), (cell, data[r][0]))
        mask.flags.writeable = False
    matrix.flags.writeable = False
    return matrix, broken, gaps, mask


# .npy files start with b"\x93NUMPY", .npz files (zip archives) with b"PK\x03\x04"
_NUMPY_MAGIC = (b"\x93NUMPY", b"PK\x03\x04")
_EXACT_INT = 2**53  # integers beyond it have no exact float64


def _mark_inexact_integers(matrix: np.ndarray, cells: list[list[str]]) -> None:
    """Make NaN, a bad cell (named when a source reads its column, ``_broken_error``), every
    cell of ``matrix`` written as an integer beyond 2**53 (``inexact_integer_reason``): a
    17-digit counter or a Unix time in nanoseconds was read as the nearest float64,
    silently (a NumPy file's integers beyond 2**53 are refused too). Both paths of
    ``_cell_matrix`` pass here."""
    rows, columns = np.nonzero(np.abs(matrix) >= _EXACT_INT)  # (2**53 + 1 reads as 2**53)
    for r, k in zip(rows.tolist(), columns.tolist(), strict=True):
        if inexact_integer_reason(cells[r][k]) is not None:
            matrix[r, k] = np.nan


def inexact_integer_reason(cell: str) -> str | None:
    """Why the text ``cell`` is not read as a number: it is an integer written out (digits
    of any script, a sign) beyond 2**53 in magnitude, which a float64 holds only rounded
    (``12345678901234567`` is read as 12345678901234568). A number written with a decimal
    point or an exponent is a float and read as one. The rule of a NumPy file's integers
    (``_numpy_columns``), for the CSV sources and ``bench gcdp``'s Occupancy files.

    Returns:
        The reason, for the caller to put after the cell it names (``"is an integer beyond
        2**53 ..."``), or None when ``cell`` is no such integer."""
    text = cell.strip()
    if len(text) < 16 or not _INTEGER.fullmatch(text):
        return None
    try:
        if abs(int(text)) <= _EXACT_INT:
            return None
    except ValueError:  # more digits than int() converts: far beyond 2**53
        pass
    rounded = float(text)
    read = f"as {rounded:.16e}" if math.isfinite(rounded) else "beyond the largest float64"
    return (
        "is an integer beyond 2**53 (9007199254740992), which a float64 holds only rounded "
        f"(it would be read {read}): subtract an origin or change the unit (a Unix time in "
        "nanoseconds: seconds), or write it with a decimal point or an exponent to accept "
        "the rounding"
    )


# marks of other scripts that are not read in a number (digits of any script are): their
# names and the ASCII mark a number needs instead
_FOREIGN_MARKS = {
    "\uff0e": ("the full-width full stop", "."),
    "\uff0c": ("the full-width comma", ","),
    "\u066b": ("the Arabic decimal separator", "."),
    "\uff0d": ("the full-width hyphen-minus", "-"),
    "\u2212": ("the minus sign", "-"),
    "\uff0b": ("the full-width plus sign", "+"),
}
_ASCII_MARKS = str.maketrans({mark: ascii for mark, (_, ascii) in _FOREIGN_MARKS.items()})
# the marks of other scripts that stand for a decimal mark: the hint names the file's own
# (source.decimal) as the one to write instead
_DECIMAL_LIKE_MARKS = ("\uff0e", "\uff0c", "\u066b")


def foreign_mark_hint(cell: str, decimal: str = ".") -> str:
    """A hint for a cell that is a number written with a mark of another script (a locale's
    export: full-width "２１．５" or "２１，５", Arabic "٢١٫٥", a minus sign "−3"): digits of any
    script are read, the decimal mark and the signs must be ASCII. ``decimal`` is the file's
    decimal mark (``source.decimal``): a decimal-like mark is named against it, and a number
    that reads only with a decimal comma says so under ``"."``.

    Returns:
        ``" (the full-width full stop '．' (U+FF0E) is not '.' ...)"``, for the caller to put
        after the sentence naming the cell, or ``""`` when the cell is no such number."""
    text = cell.strip()
    marks = [mark for mark in _FOREIGN_MARKS if mark in text]
    if not marks:
        return ""
    written = text.translate(_ASCII_MARKS)
    point = _is_number(written)
    comma = bool(_COMMA_NUMBER.fullmatch(written) or _GROUPED_COMMA_NUMBER.fullmatch(written))
    if not (point or comma):
        return ""
    mark = marks[0]
    name, ascii = _FOREIGN_MARKS[mark]
    if mark in _DECIMAL_LIKE_MARKS:  # the mark that reads: a comma, else the file's own
        ascii = "," if comma and not point else decimal if decimal in DECIMALS else ascii
    setting = ""
    if ascii == "," and decimal != ",":
        # "１，２３４" is as likely a Japanese export's 1,234 (grouping) as a decimal comma
        setting = (
            ' (if it is a decimal comma, set source.decimal = ","; if it groups digits, '
            "remove the grouping)"
            if _THOUSANDS_GROUPED.fullmatch(written)
            else ' (a decimal comma also needs source.decimal = ",")'
        )
    return (
        f" ({name} {mark!r} (U+{ord(mark):04X}) is not {ascii!r}{setting}: a number's "
        "decimal mark and sign are ASCII, while its digits may be of any script)"
    )


def _no_header_in_numpy(path: str, has_header: bool | None) -> None:
    """A NumPy file has no header line (its columns are named by key or index): a
    ``header`` set to true or false with one was silently ignored; refused."""
    if has_header is not None:
        raise SourceError(
            f"{path} is a NumPy file, which has no header line (its columns are named by "
            f'key or index): leave header out ("auto"), got {str(has_header).lower()}',
            field="source.header",
        )


def _numpy_table(path: str, raw: bytes) -> tuple:
    """A NumPy file as ``_parse_table``'s table: an ``.npz``'s members are the columns (by
    key, each a 1-D array of one common length), an ``.npy`` is one column (1-D, named
    "0") or rows x columns (2-D, named "0" .. "k-1"). Loaded without unpickling; a member
    that is not 1-D, not real numbers (bool, text, complex, object, dates), empty, not
    finite or an integer beyond 2**53 is refused naming the file, the key and the index."""
    if raw.startswith(b"PK"):  # an .npz: its members' declared sizes within the cap
        try:
            check_zip_size(raw)
        except UnpackedTooLarge as exc:
            raise too_large_error(path, exc) from None
    try:
        loaded = np.load(io.BytesIO(raw), allow_pickle=False)
        if isinstance(loaded, np.ndarray):
            members = {"": loaded}
        else:
            with loaded:
                members = {key: _npz_member(path, loaded, key) for key in loaded.files}
    except SourceError:
        raise
    except Exception as exc:  # a broken archive or header: numpy's own words
        raise SourceError(
            f"cannot read {path} as a NumPy file: {exc}", field="source.path"
        ) from None
    if "" in members:  # .npy
        arr = members[""]
        if arr.ndim not in (1, 2):
            raise SourceError(
                f"{path} holds an array of shape {arr.shape}: need 1-D (one column) or 2-D "
                "(rows are time steps, columns the series)",
                field="source.path",
            )
        table = arr.reshape(len(arr), -1)
        names = tuple(str(k) for k in range(table.shape[1]))
        columns = {name: table[:, k] for k, name in enumerate(names)}
    else:
        columns = members
    if not columns:
        raise SourceError(f"{path} holds no arrays", field="source.path")
    return _numpy_columns(path, columns)


def read_data_file(path: str | os.PathLike) -> bytes:
    """The bytes of ``path``, unpacked when they are gzip, bzip2 or xz data (by their first
    bytes, whatever the name): the one opener of the CSV source and of ``bench gcdp``'s
    Occupancy files (``collector.gcdp.evaluation``). An unreadable file raises its
    ``OSError``; broken compressed data a :class:`SourceError` (``source.path``); data that
    unpacks to more than the cap (``devices.compressed.max_unpacked``) an
    :class:`UnpackedTooLargeError` (``source.path``, the cap, the path)."""
    with open(path, "rb") as fh:
        return _decompressed(os.fspath(path), fh.read())


def _decompressed(path: str, raw: bytes) -> bytes:
    """``raw`` unpacked when it is gzip, bzip2 or xz data, up to two layers (by its first
    bytes, as a [graph] source's edge list: ``devices.compressed.unpack``): a ``.csv.gz``
    was "not UTF-8 text (byte 0x8b on line 1)"."""
    if compression(raw) is None:
        return raw
    try:
        return unpack(raw)
    except BrokenCompressedData as exc:
        raise SourceError(f"cannot read {path}: {exc}", field="source.path") from None
    except UnpackedTooLarge as exc:  # a zip bomb or a huge file: stopped past the cap
        raise too_large_error(path, exc) from None


def too_large_error(path: str, exc: UnpackedTooLarge, field: str = "source.path"):
    """The refusal of a file that unpacks past the cap (``exc``), as every reader of data
    files words it: an :class:`UnpackedTooLargeError` naming ``field``, the file, the cap
    (``limit``) and how far it got; ``value`` the path."""
    return UnpackedTooLargeError(exc.reason(path), field=field, limit=exc.rule, value=path)


# Binary table formats a user may hand a CSV source, by their first bytes (for Parquet,
# "PAR1" followed by binary data, a control byte within the next 64: a CSV whose header
# starts with the name PAR1 stays a CSV).
# Read as text they were refused as "not UTF-8 text (byte 0xd0 on line 1): save it as
# UTF-8" (.xls) or "has a header but no data rows" (a small Parquet file): helper G's
# user trial, round 4.
_BINARY_TABLES = (
    (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        "a Microsoft Office compound file (an Excel 97-2003 .xls workbook): save the sheet "
        "as CSV (UTF-8) and give that file",
    ),
    (
        b"\x89HDF\r\n\x1a\n",
        "an HDF5 file (pandas' to_hdf, h5py, MATLAB v7.3): write the series as CSV "
        "(DataFrame.to_csv) or as a NumPy .npy / .npz file and give that file",
    ),
    (
        b"SQLite format 3\x00",
        'an SQLite database: export the table, e.g. sqlite3 -header -csv FILE "select * '
        'from TABLE" > data.csv, and give that file',
    ),
    (
        b"ARROW1\x00\x00",
        "an Apache Arrow / Feather file: write it as CSV (pandas.read_feather(FILE)"
        ".to_csv('data.csv', index=False)) and give that file",
    ),
    (
        b"%PDF-",
        "a PDF document: a source reads the numbers themselves, as CSV text",
    ),
)
_PARQUET = (
    "an Apache Parquet file: write it as CSV (pandas.read_parquet(FILE)"
    ".to_csv('data.csv', index=False)) and give that file"
)


def binary_format(raw: bytes, name: str = "FILE") -> str | None:
    """What a file's first bytes (unpacked: ``read_data_file``) say it is when it is a binary
    format that no reader of text tables reads: a Parquet, Excel 97-2003, HDF5, SQLite,
    Arrow/Feather file, a PDF, a zip that is not a NumPy ``.npz`` (an Excel workbook, an
    OpenDocument spreadsheet, a zipped CSV), or an archive or compression no reader unpacks
    (``devices.compressed.not_unpacked``: tar, 7z, zstd, LZ4, Unix compress, lzip; ``name``
    is the file's name in its command). The one table of formats of the CSV sources and of
    ``bench gcdp``'s Occupancy files (``collector.gcdp.evaluation.load_occupancy``).

    Returns:
        The format and how to convert it (``"an Apache Parquet file: write it as CSV ..."``),
        for the caller to put after ``"<path> is not ... but "``; None for text, a NumPy
        ``.npy`` or ``.npz`` file, or a zip too broken to list (numpy says what is wrong)."""
    if raw.startswith(b"PAR1") and any(b < 0x20 and b not in b"\t\n\r" for b in raw[4:68]):
        return _PARQUET
    for magic, kind in _BINARY_TABLES:
        if raw.startswith(magic):
            return kind
    if raw.startswith(b"PK"):
        return _zip_format(raw)
    archive = not_unpacked(raw, name)
    if archive is not None:  # a .tar.gz, a 7z, zstd ...: devices.compressed's table
        what, command = archive
        return f"{what}: {command} and give the data file's path"
    return None


def _refuse_binary_table(path: str, raw: bytes) -> None:
    """A file in a ``binary_format`` given as a CSV source is refused naming its format and
    how to convert it (``SourceError``, ``source.path``), rather than read as text and
    refused for what its bytes happen to be (a zip that is not an ``.npz`` ended ``ldpfleet
    run`` in a traceback: numpy handed its members back as bytes)."""
    what = binary_format(raw, os.path.basename(path))
    if what is None:
        return
    npz = " (a NumPy .npz holds only .npy members)" if raw.startswith(b"PK") else ""
    raise SourceError(f"{path} is not a CSV or NumPy file but {what}{npz}", field="source.path")


def _zip_format(raw: bytes) -> str | None:
    """A zip that is not an ``.npz``, as ``binary_format`` words it; None for an ``.npz``
    (only ``.npy`` members) or a zip too broken to list."""
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError, EOFError):
        return None  # numpy says what is wrong with it
    others = [name for name in names if not name.endswith(".npy")]
    if not others:
        return None
    if any(name.startswith("xl/") for name in names):
        return "an Excel workbook: save the sheet as CSV (UTF-8) and give that file"
    if "mimetype" in names and "content.xml" in names:
        return "an OpenDocument spreadsheet: save the sheet as CSV (UTF-8) and give that file"
    shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
    return f"a zip archive holding {shown}: extract the data file and give its path"


def _npz_member(path: str, archive, key: str) -> np.ndarray:
    try:
        return archive[key]
    except ValueError as exc:  # object arrays need pickle: never unpickle a data file
        raise SourceError(
            f"member {key!r} of {path} is an object array ({exc}): save real numbers "
            "(float or int dtype)",
            field="source.path",
        ) from None


def _numpy_columns(path: str, columns: dict[str, np.ndarray]) -> tuple:
    """Check each column (module docstring of ``_numpy_table``) and stack them."""
    length = None
    for key, arr in columns.items():
        label = f"member {key!r} of {path}" if not key.isdigit() else f"column {key} of {path}"
        if arr.ndim != 1:
            raise SourceError(
                f"{label} has shape {arr.shape}: each member is one column, a 1-D array "
                "(save a table's columns under their own keys)",
                field="source.path",
            )
        if arr.dtype.kind not in "iuf":
            raise SourceError(
                f"{label} has dtype {arr.dtype} ({_KIND_NAMES.get(arr.dtype.kind, 'not real')}"
                "): need real numbers (a float or int dtype)",
                field="source.path",
            )
        if arr.size == 0:
            raise SourceError(f"{label} has no values", field="source.path")
        if length is None:
            length = arr.size
        elif arr.size != length:
            first = next(iter(columns))
            raise SourceError(
                f"{label} has {arr.size} values, member {first!r} {length}: every column "
                "needs one value per time step",
                field="source.path",
            )
        if arr.dtype.kind in "iu":
            big = (
                np.flatnonzero(np.abs(arr.astype(object)) > _EXACT_INT) if arr.itemsize > 6 else []
            )
            if len(big):
                k = int(big[0])
                raise SourceError(
                    f"{label} at index {k} holds {int(arr[k])}, beyond 2**53: not exact as a "
                    "float64",
                    field="source.path",
                )
        else:
            bad = np.flatnonzero(~np.isfinite(arr))
            if bad.size:
                k = int(bad[0])
                raise SourceError(
                    f"{label} at index {k} holds {arr[k].item()!r}: need finite numbers",
                    field="source.path",
                )
    matrix = np.column_stack([arr.astype(np.float64) for arr in columns.values()])
    matrix.flags.writeable = False
    return tuple(columns), matrix, {}, {}, {}, None


_KIND_NAMES = {"b": "bool", "c": "complex", "U": "text", "S": "bytes", "O": "object",
               "M": "dates", "m": "time spans", "V": "records"}  # fmt: skip


# the cells that are a missing value, not a bad one (compared stripped and case-folded):
# ``source.missing`` says what to do with them (docs/scenarios.md, "Gaps")
MISSING_TOKENS = frozenset({"", "na", "nan", "null", "none", "-"})
MISSING_MODES = ("refuse", "previous", "interpolate", "drop")


def _is_missing(cell: str) -> bool:
    return cell.strip().casefold() in MISSING_TOKENS


def _first_present(data: list, j: int) -> tuple[str, int] | None:
    """The first cell of field ``j`` that is not a missing value, and its line; None when
    every one is missing."""
    for lineno, row in data:
        if not _is_missing(row[j]):
            return row[j].strip(), lineno
    return None


def _cell_value(cell: str) -> float:
    """A cell as a float, NaN where it is not a number (``_parse_table`` records it)."""
    if "_" in cell:
        return math.nan
    try:
        return float(cell)
    except ValueError:
        return math.nan


def _gap_error(
    path: str, name: str, cell: str, lineno: int, field: str, *, rows: bool = False
) -> SourceError:
    """The refusal of a missing value under ``missing = "refuse"``; ``rows``: the "rows"
    layout, where a column is a time step (what "drop" removes is then that column of
    every row, not a row: helper G, round 4)."""
    drop = "remove that time step, the column, from every row" if rows else "remove the row"
    return SourceError(
        f"missing value {cell!r} in column {name!r} at line {lineno} of {path}: set "
        'source.missing = "previous" (carry the last reading forward), "interpolate" '
        f'(linear between neighbours) or "drop" ({drop}) to replay a file with gaps '
        '(default "refuse")',
        field=field,
    )


def _broken_error(
    path: str, name: str, cell: str, lineno: int, field: str, decimal: str = "."
) -> SourceError:
    inexact = inexact_integer_reason(cell)
    if inexact is not None:
        return SourceError(
            f"integer {cell.strip()!r} in column {name!r} at line {lineno} of {path} {inexact}",
            field=field,
        )
    return SourceError(
        f"non-numeric value {cell!r} in column {name!r} at line {lineno} of {path} "
        f"(need finite numbers in every column a source reads)"
        f"{foreign_mark_hint(cell, decimal)}",
        field=field,
    )


def _table(path: str, header: bool | None = None, decimal: str = "."):
    """``(names, matrix, dropped, broken)`` of ``path``, parsed once per version of the file
    (cached). ``broken`` maps a matrix column whose later cells are not all finite numbers
    to its first bad cell and line; that column's bad cells are NaN, and only a source that
    reads it is refused (``_column_index``), so a bad cell in a column nobody uses does not
    refuse the file."""
    return _parse_table(*_table_key(path, decimal), header, decimal)


def _table_key(path: str | os.PathLike, decimal: str) -> tuple[str, tuple]:
    """``path`` and the cache key of its table (``_cache_key``): one ``os.stat`` (a folder,
    or no regular file, refused)."""
    path = os.fspath(path)
    check_decimal(decimal, field="source.decimal")  # (an unknown mark read as ".")
    try:
        st = os.stat(path)
    except OSError as exc:
        raise SourceError(f"file not found: {path} ({exc.strerror})", field="source.path") from exc
    if stat.S_ISDIR(st.st_mode):
        raise SourceError(
            f"{path} is not a regular file but a folder: a csv source reads one file, which "
            'every device replays (layout "column": each device from its own start row; '
            'layout "rows": a row per device, all of one length); join the files into one',
            field="source.path",
        )
    if not stat.S_ISREG(st.st_mode):
        raise SourceError(f"{path} is not a regular file", field="source.path")
    return path, _cache_key(path, st)


def _spec_table(spec: CsvSpec) -> tuple:
    """The table of ``spec``'s file as it was when ``spec`` was made (``CsvSpec._key``):
    a fleet's devices each replay it (``csv_stream``), and an ``os.stat`` per device was
    measurable for thousands of them (helper A, 2026-12-07). A file edited after the spec
    was made is read again by the next spec (the next run), not by this one."""
    return _parse_table(spec.path, spec._key, spec.header, spec.decimal)


def load_table(
    path: str, header: bool | None = None, decimal: str = "."
) -> tuple[list[str], np.ndarray]:
    """Parse a numeric CSV into ``(column names, float64 matrix rows x columns)``.

    See the module docstring for header / row-id / non-numeric column handling. The
    matrix is cached and shared, hence read-only (copy it before modifying). Every value
    of every numeric column must be a finite number here (a :class:`SourceError` names
    the first that is not, a missing value too); a :class:`CsvSpec` needs that only of the
    columns it reads, and may fill their missing values (``missing``).
    ``header``: None detects the header line (module docstring); True says the first line
    is one (a header of numbers, such as years or sensor ids, is otherwise read as data);
    False says it is data. ``decimal``: ``","`` for numbers written with a decimal comma.
    """
    path = os.fspath(path)
    names, matrix, _, broken, gaps, _ = _table(path, header, decimal)
    if broken:
        k = min(broken, key=lambda j: (broken[j][1], j))
        raise _broken_error(path, names[k], *broken[k], field="source.path", decimal=decimal)
    if gaps:
        k = min(gaps, key=lambda j: (gaps[j][1], j))
        raise _gap_error(path, names[k], *gaps[k], field="source.path")
    return list(names), matrix


def table_columns(
    path: str, header: bool | None = None, decimal: str = "."
) -> tuple[list[str], int]:
    """The numeric column names of ``path`` and its number of data rows, without checking
    every value (the sources that read a column check it: :class:`CsvSpec`)."""
    names, matrix = _table(path, header, decimal)[:2]
    return list(names), matrix.shape[0]


def dropped_columns(
    path: str, header: bool | None = None, decimal: str = "."
) -> dict[str, tuple[str, int, bool]]:
    """The header names :func:`load_table` dropped as non-numeric (their first present data
    value was not a number), with that value, its line number and whether every value of
    the column is missing (``MISSING_TOKENS``)."""
    return _table(path, header, decimal)[2]


def clear_table_cache() -> None:
    """Forget every table parsed by :func:`load_table`."""
    _parse_table.cache_clear()
    _filled_table.cache_clear()


@dataclass(frozen=True)
class CsvSpec:
    """Replay a column (``layout="column"``) or rows (``layout="rows"``) of a CSV file.

    ``path`` is used as given (absolute or relative to the working directory).
    ``column`` is a header name or a 0-based index among the numeric data columns returned
    by :func:`load_table` (row id and non-numeric columns such as ``date`` excluded); it is
    not used by the ``"rows"`` layout. ``stride`` (``"column"`` layout only): device ``i``
    starts at ``(i * stride) % length``; ``0`` spreads the devices evenly over the data.
    ``header``: None detects the header line (a first line of numbers is data), True /
    False say whether the first line is a header (:func:`load_table`).
    ``missing``: what to do with the missing values (``MISSING_TOKENS``) of the columns it
    reads: ``"refuse"`` them (naming file, line, column, value), fill each from the
    ``"previous"`` reading of its own series (a leading gap takes the first reading), fill
    by linear ``"interpolate"``-ion between its neighbours (flat before the first and after
    the last reading), or ``"drop"`` the time step for every device (the row in the
    ``"column"`` layout, the column in ``"rows"``); :func:`missing_summary` counts them.
    ``decimal``: ``"."`` (numbers such as 3.14) or ``","`` (3,14: fields then separated by
    semicolons or tabs; module docstring).
    Construction validates the fields and loads the file (cached), so a missing file,
    unknown column or bad data raises :class:`SourceError` here.
    """

    path: str
    column: str | int
    layout: str = "column"
    stride: int = 0
    columns: tuple[str | int, ...] | None = None
    column_bounds: tuple[tuple[float, float], ...] | None = None
    header: bool | None = None
    missing: str = "refuse"
    decimal: str = "."

    @property
    def channels(self) -> int:
        """Sensor channels per simulated room (1 without ``columns``)."""
        return len(self.columns) if self.columns else 1

    def _check_columns(self, names: list[str]) -> None:
        if self.columns is None:
            if self.column_bounds is not None:
                raise SourceError("needs source.columns", field="source.column_bounds")
            return
        if self.layout != "column":
            raise SourceError('several columns need layout = "column"', field="source.columns")
        columns = tuple(self.columns)
        if not columns:
            raise SourceError("must name at least one column", field="source.columns")
        indices = [_column_index(self, names, column, "source.columns") for column in columns]
        if len(set(indices)) != len(indices):
            raise SourceError(f"{list(columns)!r} names a column twice", field="source.columns")
        object.__setattr__(self, "columns", columns)
        bounds = self.column_bounds
        if bounds is None:
            raise SourceError(
                f"required with source.columns: one [lo, hi] per column ({len(columns)}), "
                "the fixed public bounds of each channel",
                field="source.column_bounds",
            )
        if len(bounds) != len(columns):
            raise SourceError(
                f"need one [lo, hi] per column ({len(columns)}), got {len(bounds)}",
                field="source.column_bounds",
            )
        checked = []
        for k, pair in enumerate(bounds):
            lo, hi = (_finite_float(v, f"source.column_bounds[{k}]") for v in pair)
            if not lo < hi:
                raise SourceError(
                    f"need lo < hi, got [{lo}, {hi}]", field=f"source.column_bounds[{k}]"
                )
            if not math.isfinite(hi - lo):
                raise SourceError(
                    f"hi - lo overflows to infinity (the width must be finite), got [{lo}, {hi}]",
                    field=f"source.column_bounds[{k}]",
                )
            checked.append((lo, hi))
        object.__setattr__(self, "column_bounds", tuple(checked))

    def __post_init__(self) -> None:
        if isinstance(self.path, os.PathLike):
            object.__setattr__(self, "path", os.fspath(self.path))
        if not isinstance(self.path, str) or not self.path:
            raise SourceError(f"{self.path!r} must be a non-empty file path", field="source.path")
        if not isinstance(self.layout, str) or self.layout not in LAYOUTS:
            raise SourceError(
                f"{self.layout!r} is not one of {', '.join(LAYOUTS)}", field="source.layout"
            )
        if self.header is not None and not isinstance(self.header, bool):
            raise SourceError(
                f"{self.header!r} must be true, false or unset (detect)", field="source.header"
            )
        if not _is_int(self.stride) or int(self.stride) < 0:
            raise SourceError(f"{self.stride!r} must be an integer >= 0", field="source.stride")
        object.__setattr__(self, "stride", int(self.stride))
        if _is_int(self.column):
            if int(self.column) < 0:
                raise SourceError(f"index {self.column!r} must be >= 0", field="source.column")
            object.__setattr__(self, "column", int(self.column))
        elif not isinstance(self.column, str):
            raise SourceError(
                f"{self.column!r} must be a column name or a 0-based index",
                field="source.column",
            )
        if not isinstance(self.missing, str) or self.missing not in MISSING_MODES:
            raise SourceError(
                f"{self.missing!r} is not one of {', '.join(MISSING_MODES)}",
                field="source.missing",
            )
        check_decimal(self.decimal, field="source.decimal")
        # the file as it is now: the key of every later read of this spec (_spec_table)
        object.__setattr__(self, "_key", _table_key(self.path, self.decimal)[1])
        names = list(_spec_table(self)[0])
        if self.layout == "column" and self.columns is None:
            _column_index(self, names)
        if self.layout == "rows":  # every device replays whole rows: every column is read
            _check_rows(self, names)
        self._check_columns(names)
        _filled_series(self)  # a "drop" that leaves nothing, a row with no reading


def _column_index(
    spec: CsvSpec,
    names: list[str],
    column: str | int | None = None,
    field: str = "source.column",
) -> int:
    column = spec.column if column is None else column
    available = ", ".join(names)
    if isinstance(column, str):
        column = column_name(column, names)
    if isinstance(column, str):
        dropped = _spec_table(spec)[2] if column not in names else {}
        if column in dropped and dropped[column][2]:
            raise SourceError(
                f"{column!r} of {spec.path} is entirely missing: every value is a missing "
                f"value ({', '.join(repr(t) for t in sorted(MISSING_TOKENS))}, any case), "
                f"so there is nothing to fill it from (numeric columns: {available})",
                field=field,
            )
        if column in dropped:
            value, lineno, _ = dropped[column]
            raise SourceError(
                f"{column!r} of {spec.path} is not a numeric column: its first value "
                f"{value!r} (line {lineno}) is not a number, and a column is read only if its "
                f"first value is (numeric columns: {available})"
                f"{foreign_mark_hint(value, spec.decimal)}",
                field=field,
            )
        if column not in names and spec.header is not True and all(n.isdigit() for n in names):
            raise SourceError(
                f"{column!r} not in header: {spec.path} has no header line (its first line is "
                "data), so name "
                f"the column by its 0-based index among the numeric columns, 0..{len(names) - 1} "
                "(or add a header line; header = true if its names are numbers)",
                field=field,
            )
        if column not in names:
            raise SourceError(
                f"{column!r} not in header of {spec.path}{closest_name(column, names)} "
                f"(columns: {available})",
                field=field,
            )
        if names.count(column) > 1:  # the first was taken silently
            where = [k for k, name in enumerate(names) if name == column]
            raise SourceError(
                f"{column!r} names {len(where)} columns of {spec.path} (numeric columns "
                f"{', '.join(map(str, where))}): give its 0-based index instead",
                field=field,
            )
        shadow = _spec_table(spec)[2].get(column)
        if shadow is not None:  # the numeric one was taken silently, the text one unsaid
            raise SourceError(
                f"{column!r} names 2 columns of {spec.path}: numeric column "
                f"{names.index(column)} and a column that is not numeric (its first value "
                f"{shadow[0]!r}, line {shadow[1]}): give the numeric one's 0-based index "
                f"instead ({names.index(column)}), or rename a column",
                field=field,
            )
        return _readable(spec, names, names.index(column), field)
    if not _is_int(column) or int(column) < 0:
        raise SourceError(f"{column!r} must be a column name or a 0-based index", field=field)
    if column >= len(names):
        raise SourceError(
            f"index {column} out of range: {spec.path} has {len(names)} numeric "
            f"columns, indices 0..{len(names) - 1} (columns: {available})",
            field=field,
        )
    return _readable(spec, names, int(column), field)


def _readable(spec: CsvSpec, names: list[str], index: int, field: str) -> int:
    """``index``, after checking that every value of that column is a finite number."""
    broken, gaps = _spec_table(spec)[3:5]
    if index in broken:
        raise _broken_error(
            spec.path, names[index], *broken[index], field=field, decimal=spec.decimal
        )
    if index in gaps and spec.missing == "refuse":
        raise _gap_error(spec.path, names[index], *gaps[index], field=field)
    return index


def _check_rows(spec: CsvSpec, names: list[str]) -> None:
    """The ``"rows"`` layout reads every column: any bad cell is refused, and a missing one
    under ``missing = "refuse"`` (the first in the file)."""
    broken, gaps = _spec_table(spec)[3:5]
    if broken:
        k = min(broken, key=lambda j: (broken[j][1], j))
        raise _broken_error(
            spec.path, names[k], *broken[k], field="source.path", decimal=spec.decimal
        )
    if gaps and spec.missing == "refuse":
        k = min(gaps, key=lambda j: (gaps[j][1], j))
        raise _gap_error(spec.path, names[k], *gaps[k], field="source.path", rows=True)


def _read_columns(spec: CsvSpec, names: list[str]) -> tuple[int, ...]:
    """The matrix columns ``spec`` replays (every one in the ``"rows"`` layout)."""
    if spec.layout == "rows":
        return tuple(range(len(names)))
    if spec.columns is not None:
        return tuple(_column_index(spec, names, c, "source.columns") for c in spec.columns)
    return (_column_index(spec, names),)


def _filled_series(spec: CsvSpec) -> tuple[np.ndarray, dict]:
    """The series ``spec`` replays with its gaps handled (``spec.missing``): the matrix of
    its read columns (``_read_columns`` order; time along axis 0 in the ``"column"``
    layout, axis 1 in ``"rows"``), read-only and shared, and :func:`missing_summary`."""
    names = list(_spec_table(spec)[0])
    return _filled_table(
        spec.path,
        spec._key,
        spec.header,
        spec.decimal,
        spec.missing,
        spec.layout,
        _read_columns(spec, names),
    )


@functools.lru_cache(maxsize=32)
def _filled_table(
    path: str,
    key: tuple,
    header: bool | None,
    decimal: str,
    missing: str,
    layout: str,
    read: tuple[int, ...],
) -> tuple[np.ndarray, dict]:
    names, matrix, _, _, _, mask = _parse_table(path, key, header, decimal)
    rows_layout = layout == "rows"
    series = matrix[:, list(read)]
    gaps = mask[:, list(read)] if mask is not None else np.zeros(series.shape, dtype=bool)
    if rows_layout:  # time along axis 0 below; transposed back at the end
        series, gaps = series.T, gaps.T
    summary = {
        "missing": missing,
        "values_filled": 0,
        "steps_dropped": 0,
        "steps": int(series.shape[0]),
        "by_column": {},
    }
    if gaps.any():
        if missing == "drop":
            keep = ~gaps.any(axis=1)
            if not keep.any():
                raise SourceError(
                    f"every time step of {path} misses a value in a column this source reads "
                    '(missing = "drop" removes it): nothing is left to replay; use "previous" '
                    'or "interpolate"',
                    field="source.missing",
                )
            series = series[keep]
            summary["steps_dropped"] = int((~keep).sum())
        elif missing in ("previous", "interpolate"):
            series = np.array(series)
            t = np.arange(series.shape[0])
            for k in np.flatnonzero(gaps.any(axis=0)):
                hole, have = gaps[:, k], ~gaps[:, k]
                if not have.any():  # only in the "rows" layout: a kept column has a value
                    raise SourceError(
                        f"row {int(k)} (0-based) of {path} is entirely missing: every value is "
                        "a missing value, so there is nothing to fill it from",
                        field="source.missing",
                    )
                if missing == "interpolate":
                    series[hole, k] = np.interp(t[hole], t[have], series[have, k])
                else:
                    last = np.maximum.accumulate(np.where(have, t, -1))
                    last[last < 0] = int(np.argmax(have))  # a leading gap: the first reading
                    series[:, k] = series[last, k]
            summary["values_filled"] = int(gaps.sum())
        counts = gaps.sum(axis=0)
        if not rows_layout:
            summary["by_column"] = {names[read[k]]: int(n) for k, n in enumerate(counts) if n}
    if rows_layout:
        series = series.T
    series = np.ascontiguousarray(series, dtype=np.float64)
    series.flags.writeable = False
    return series, summary


def missing_entry(spec: object) -> tuple[dict | None, list[str]]:
    """results.json's ``missing_values`` entry for a run's source (None unless a CSV
    source) and its sentence for ``warnings`` when values were filled or steps dropped, as
    ``scenarios.clipping`` records what the bounds clipped (simulator-side bookkeeping of
    the devices' local step: nothing of it is reported by a device)."""
    if not isinstance(spec, CsvSpec):
        return None, []
    entry = missing_summary(spec)
    filled, dropped, steps = entry["values_filled"], entry["steps_dropped"], entry["steps"]
    if filled:
        where = ", ".join(f"{n} in {name!r}" for name, n in entry["by_column"].items())
        how = "carried forward" if entry["missing"] == "previous" else "interpolated"
        return entry, [
            f"source.missing = {entry['missing']!r}: {filled} missing values of {spec.path} "
            f"were {how} ({where or f'over {steps} steps'}) before privatisation"
        ]
    if dropped:
        return entry, [
            f'source.missing = "drop": {dropped} of {steps} time steps of {spec.path} had a '
            "missing value and were dropped for every device"
        ]
    return entry, []


def missing_summary(spec: CsvSpec) -> dict:
    """How ``spec``'s gaps were handled: ``missing`` (the mode), ``values_filled`` (by
    "previous" / "interpolate"), ``steps_dropped`` (by "drop": rows of the file in the
    ``"column"`` layout, columns in ``"rows"``), ``steps`` (the file's time steps before
    dropping) and ``by_column`` (missing values per read column, ``"column"`` layout)."""
    summary = _filled_series(spec)[1]
    return {**summary, "by_column": dict(summary["by_column"])}


def replay_cycles(spec: CsvSpec, steps: int) -> dict:
    """How often a device running ``steps`` steps replays the records of ``spec``'s file.

    ``records``: the time steps one device's series holds (rows of the file in the
    ``"column"`` layout, columns in ``"rows"``, after ``missing = "drop"``); ``steps``;
    ``cycles``: ``steps / records`` (1.0 or less: no record is replayed); ``max_replays``:
    how many times one record feeds one device's stream at most (``ceil(steps /
    records)``: a device starts at an offset, so its records are replayed ``floor`` or
    ``ceil`` times). A record replayed R times is privatised R times: the w-event
    guarantee holds per simulated reading, not per record of the file.
    """
    steps = _check_steps(steps)
    filled, _ = _filled_series(spec)
    records = int(filled.shape[1] if spec.layout == "rows" else filled.shape[0])
    return {
        "records": records,
        "steps": steps,
        "cycles": round(steps / records, 6),
        "max_replays": -(-steps // records),
    }


def source_cycles_entry(spec: object, steps: int) -> tuple[dict | None, list[str]]:
    """results.json's ``source_cycles`` entry for a run's source (None unless a CSV
    source) and, when the file is shorter than the stream (``max_replays`` > 1), the one
    sentence for ``warnings`` saying it is replayed and what that means for the claim."""
    if not isinstance(spec, CsvSpec):
        return None, []
    entry = replay_cycles(spec, steps)
    if entry["max_replays"] <= 1:
        return entry, []
    plural = "" if entry["records"] == 1 else "s"
    unit = f"{'column' if spec.layout == 'rows' else 'row'}{plural} (time step{plural})"
    # "33.3 times", not "33.3333 times"; a whole number as it is ("36 times")
    times = f"{entry['cycles']:.3g}" if entry["cycles"] < 100 else f"{entry['cycles']:,.0f}"
    return entry, [
        f"source: {spec.path} has {entry['records']} {unit} but each device runs "
        f"{entry['steps']} steps, so it is replayed {times} times (each record "
        f"feeds a device's stream up to {entry['max_replays']} times): the privacy claim "
        "(w-event LDP, or [gcdp]'s per value per window) holds per simulated reading, not "
        "per record of the file (results.json source_cycles)"
    ]


def _start_row(spec: CsvSpec, i: int, n: int, length: int) -> int:
    """The record device ``i`` of ``n`` starts its replay at (``csv_stream``): 0 in the
    ``"rows"`` layout; else ``(i * stride) % length``, or ``(i * length) // n`` when
    ``stride == 0`` (evenly spread), by room (``i // C``) with ``columns``."""
    if spec.layout == "rows":
        return 0
    if spec.columns is not None:
        i, n = i // spec.channels, -(-n // spec.channels)
    return (i * spec.stride) % length if spec.stride else (i * length) // n


def replay_jump_warnings(
    spec: object, steps: int, devices: int, true_period: int | None
) -> list[str]:
    """The sentence for results.json ``warnings`` when a CSV source's stated
    ``true_period`` does not hold for every device: the file holds no whole number of
    cycles and some device's replay wraps past its end (start record + ``steps`` beyond
    it), so its stream jumps in phase there. Such a device was scored against a period its
    stream does not have, and CPR claimed about twice or three times it at confidence 1
    (helper P's user trial, 2026-12-06: the default ``stride = 0`` on a 2,000-row file of
    period 36, 6 devices x 1,800 steps: 3 of 6 claimed 71; docs/scenarios.md had said so,
    the run did not). Empty otherwise, and for every source but a CSV file."""
    if not isinstance(spec, CsvSpec) or true_period is None:
        return []
    steps = _check_steps(steps)
    records = replay_cycles(spec, steps)["records"]
    if records % true_period == 0:
        return []
    wrapping = sum(_start_row(spec, i, devices, records) + steps > records for i in range(devices))
    if wrapping == 0:
        return []
    unit = "columns (time steps)" if spec.layout == "rows" else "rows (time steps)"
    return [
        f"source: {spec.path} holds {records} {unit}, not a whole number of "
        f"source.true_period = {true_period} cycles ({records / true_period:.4g}), and "
        f"the replays of {wrapping} of {devices} devices run past its end and wrap to its "
        f"start, a jump in phase: their streams are not {true_period}-periodic (CPR may "
        "claim another period, and period_correct scores against one they do not have). "
        "Choose source.stride so that every start plus stream.steps stays within the file "
        "(docs/scenarios.md, source.true_period)"
    ]


def channel_bounds(spec: CsvSpec, device_index: int) -> tuple[float, float] | None:
    """The fixed public bounds of device ``device_index``'s channel (``columns`` sources),
    or None for a one-column source (whose bounds are the scenario's ``source.bounds``)."""
    if spec.columns is None or spec.column_bounds is None:
        return None
    return spec.column_bounds[device_index % spec.channels]


def csv_stream(
    spec: CsvSpec, device_index: int, n_devices: int, steps: int
) -> tuple[np.ndarray, StreamTruth]:
    """The replayed data-set stream of device ``device_index`` of ``n_devices``.

    A new float64 array of length ``steps``; the series is cycled when ``steps`` exceeds
    its length. ``"column"`` layout: device ``i`` starts at ``(i * stride) % length``, or at
    ``(i * length) // n_devices`` when ``stride == 0`` (evenly spread). ``"rows"`` layout:
    device ``i`` replays row ``i % nrows`` from its first value. With ``columns``, device
    ``i`` replays column ``columns[i % C]`` of room ``i // C`` (module docstring).
    """
    steps = _check_steps(steps)
    if not _is_int(n_devices) or int(n_devices) < 1:
        raise SourceError(f"{n_devices!r} must be an integer >= 1", field="n_devices")
    if not _is_int(device_index) or not 0 <= int(device_index) < int(n_devices):
        raise SourceError(
            f"{device_index!r} must be an integer in [0, {int(n_devices) - 1}]",
            field="device_index",
        )
    i, n = int(device_index), int(n_devices)
    filled, _ = _filled_series(spec)  # the read columns, gaps handled (spec.missing)
    if spec.layout == "rows":
        _check_rows(spec, list(_spec_table(spec)[0]))
        series = filled[i % filled.shape[0]]
    elif spec.columns is not None:
        series = filled[:, i % spec.channels]
    else:
        series = filled[:, 0]
    start = _start_row(spec, i, n, series.shape[0])
    idx = (start + np.arange(steps)) % series.shape[0]
    return series.take(idx).astype(np.float64, copy=False), StreamTruth(period=None, phase=None)
