"""Evaluation helpers for ``ldpfleet bench gcdp`` (seed 000, Section 5.1, Occupancy).

Theory of operation. The seed does not pin its window length, classifier or attacker; the
choices below are fixed once, before any privatized run, and are reused unchanged for
every method and budget (see ``docs/gcdp.md``, "Evaluation (bench gcdp)"):

* nodes are the five environmental channels (Temperature, Humidity, Light, CO2,
  HumidityRatio); each channel is clipped to an interval fitted on TRAINING values only
  (``fit_iqr_clip``, Tukey's fences, kept; or ``fit_normalizer``, the range) and scaled to
  [0, 1];
* the released representation is one window mean per channel over fixed, non-overlapping
  windows of ``window`` consecutive records that never cross a file boundary
  (``window_means``), so ``d = M = 5`` and ``a(k) = {k}``; a window's label is its majority
  occupancy;
* the fixed classifier is an L2-regularised logistic regression fitted by Newton's method
  on the NON-private training windows (``LogisticModel``); it is applied to the privatized
  release after a fixed post-processing clip to [0, 1];
* the metric is positive-class F1 in percent (``f1_percent``);
* the attribute-inference diagnostic (``oriented_auc``): protected attribute = the test
  window's HumidityRatio mean above the TRAINING windows' median; fixed attacker = a
  logistic regression fitted once on non-private training windows from the OTHER four
  channels (HumidityRatio is a function of Temperature and Humidity, a cross-channel
  inference), applied to those four privatized coordinates; score = its decision value.
  The kept reading (``docs/gcdp.md``, "Attack readings") fits and applies it to
  ``temporal_smooth``-ed windows: each window averaged with its neighbours in time, which
  exploits the temporal correlation of the released sequence. Other readings:
  ``informed_attack_scores`` and ``informed_gaussian_scores`` (an attacker who knows the
  public release parameters theta, hence each coordinate's noise law, and scores the Bayes
  log-likelihood ratio against the clean training windows, with an empirical or a
  Gaussian class model).

The Intel Lab and WISDM protocols (``app/gcdp_datasets.py``, ``docs/gcdp-datasets.md``)
reuse these helpers and add a multiclass classifier (``fit_one_vs_rest``: one fixed
``fit_logistic`` per class, argmax of the decision values) and macro-F1 over a fixed class
list (``macro_f1_percent``).

Pure numpy, no global RNG.
"""

from __future__ import annotations

import csv
import io
import math
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from ldpfleet.devices.sources import (
    _EXACT_INT,
    _NUMPY_MAGIC,
    _POINT_NUMBER,
    SourceError,
    UnpackedTooLargeError,
    binary_format,
    broken_utf16_reason,
    check_decimal,
    csv_text,
    decimal_comma_cell,
    foreign_mark_hint,
    inexact_integer_reason,
    read_data_file,
)
from ldpfleet.protocol.delimiters import sniff_delimiter
from ldpfleet.protocol.errors import ParameterError

__all__ = [
    "CHANNELS",
    "INFORMED_BANDWIDTH",
    "LogisticModel",
    "NoiseLaw",
    "OneVsRestModel",
    "TemporalModel",
    "check_date_order",
    "f1_percent",
    "fit_iqr_clip",
    "fit_logistic",
    "fit_normalizer",
    "fit_one_vs_rest",
    "informed_attack_scores",
    "informed_gaussian_scores",
    "label_utility",
    "load_occupancy",
    "macro_f1_percent",
    "masking_utility",
    "noise_variance",
    "one_class_note",
    "oriented_auc",
    "prediction_collapse",
    "record_steps",
    "record_timing",
    "temporal_smooth",
    "window_means",
    "window_span",
]

CHANNELS = ("Temperature", "Humidity", "Light", "CO2", "HumidityRatio")


def load_occupancy(path: str | Path, decimal: str = ".") -> tuple[np.ndarray, np.ndarray]:
    """One UCI Occupancy file -> (records x 5 channels, occupancy 0/1). The shipped files have a
    quoted header without the row-id column, and every data row starts with a row id; written
    files may separate fields by comma, semicolon or tab (sniffed from the first two lines,
    ``protocol.delimiters``, as the scenarios' CSV sources do), omit the row id
    (``to_csv(index=False)``), order the columns freely, carry other columns and end every row
    with a delimiter (an empty last field after a first field that is not an integer row id).
    Raises ``ValueError`` in one sentence naming the line and column of a bad value: a missing
    channel, a row of another width, a value that is not a finite number, an Occupancy label
    other than 0 or 1 (a row with NaN was dropped silently and a label of 2 read as occupied; a
    file without the row id read the wrong columns), and a ``date`` column of ISO date-times
    that goes back in time or mixes dates with and without a UTC offset, or of dates in one
    of ``DATE_FORMATS`` that go back in time (the windows are consecutive records; a first
    date in any other format stops the check), and a column the reader
    needs that the header names twice, and a file that is not UTF-8 text (naming the line)
    or UTF-16 text with its byte-order mark (``_open_text``), a file in a binary format
    (named by its first bytes: an .xls, Parquet, ...; ``devices.sources.binary_format``) and
    a channel value written as an integer beyond 2**53, which a float64 holds only rounded
    (``inexact_integer_reason``). A DOS end-of-file mark (Ctrl-Z) at the very end is
    dropped; digits of any script are read (full-width, Arabic-Indic), a decimal point or
    sign of another script is refused naming it (``foreign_mark_hint``).

    ``decimal``: the decimal mark of the file's numbers, ``"."`` or ``","`` (a European
    spreadsheet's export), read as a scenario's ``[source] decimal`` reads a CSV
    (``devices.sources``): under ``","`` a number with a decimal comma ("3,14", "-0,5",
    "1,5e3") is read with a point, points grouping the digits before a decimal comma are
    dropped ("1.050,0" is 1050), and a number with a decimal point and no comma ("1.234":
    1.234, or 1234 grouped?) is refused naming its line, never guessed; the fields must
    then be separated by semicolons or tabs.

    Returns:
        ``(x, y)``: the records x 5 channels (``CHANNELS``, floats) and the 0/1 labels.

    Raises:
        DecimalMarkError: ``decimal`` is not ``"."`` or ``","``, or is ``","`` for a file
            whose fields are separated by commas (a ``ParameterError``, field ``decimal``:
            ``devices.sources.check_decimal``).
        ValueError: the file cannot be read as an Occupancy-format file (above)."""
    check_decimal(decimal, field="decimal")
    text, delimiter = _open_text(path)
    check_decimal(decimal, field="decimal", delimiter=delimiter, path=str(path))
    return _read_occupancy(text, delimiter, decimal)


def _open_text(path: str | Path) -> tuple[io.StringIO, str]:
    """``path`` as text and its delimiter, read as the CSV sources read a file
    (``devices.sources.read_data_file`` and ``csv_text``): unpacked when it is gzip, bzip2 or
    xz data, decoded (UTF-8, a BOM skipped, or UTF-16 with its byte-order mark, Excel's
    "Unicode Text"), a DOS end-of-file mark (Ctrl-Z) at its very end dropped, an Excel
    ``sep=`` first line blanked and naming the delimiter, else comma, semicolon or tab
    sniffed; so ``--train-file train.txt.gz``, a UTF-16 export or a ``sep=;`` export reads
    as a ``[source] path`` does. ``ValueError`` naming a binary format (by its first bytes,
    the CSV sources' table: ``_refuse_binary``), the first line that is not UTF-8, a
    UTF-16 file that is broken, a JSON file, or the broken compressed data."""
    try:
        raw = read_data_file(path)
        _refuse_binary(path, raw)
        text, delimiter = csv_text(raw, str(path))
    except UnpackedTooLargeError:  # compressed past the cap: typed, with the cap as limit
        raise
    except SourceError as error:
        raise ValueError(error.reason) from None
    except UnicodeDecodeError as error:
        broken_utf16 = broken_utf16_reason(error)
        if broken_utf16 is not None:
            raise ValueError(f"the file {broken_utf16}") from None
        raise ValueError(_not_utf8(raw, error)) from None
    return io.StringIO(text, newline=""), delimiter


def _refuse_binary(path: str | Path, raw: bytes) -> None:
    """A file in a binary format (``devices.sources.binary_format``, the CSV sources' one
    table: an Excel .xls or .xlsx workbook, Parquet, ...) or a NumPy file is refused naming
    it: an .xls was "line 1 is not UTF-8 text (byte 0xd0)", an .xlsx "(byte 0x50)"."""
    what = binary_format(raw, Path(path).name)
    if what is None and raw.startswith(_NUMPY_MAGIC):
        what = (
            "a zip archive (a NumPy .npz, or a broken zip): save the records as a text table"
            if raw.startswith(b"PK")
            else "a NumPy .npy file: save the records as a text table"
        )
    if what is not None:
        raise ValueError(f"the file is not an Occupancy-format text table but {what}")


def _not_utf8(raw: bytes, error: UnicodeDecodeError) -> str:
    """The first line of ``raw`` (the file's bytes, unpacked) that is not UTF-8 (the
    decoder's position counts from the start; the line is named)."""
    for lineno, line in enumerate(raw.splitlines(keepends=True), start=1):
        try:
            line.decode("utf-8-sig" if lineno == 1 else "utf-8")
        except UnicodeDecodeError as bad:
            byte = line[bad.start : bad.start + 1].hex()
            return f"line {lineno} is not UTF-8 text (byte 0x{byte}): save the file as UTF-8"
    return f"not UTF-8 text ({error.reason}): save the file as UTF-8"


def _missing_columns(missing: list[str], header: list[str]) -> str:
    """The sentence for a header without ``missing``: a first line of numbers is data (the
    header line is missing), a name in another case is named (names are case-sensitive)."""
    wanted = ", ".join(map(repr, missing))
    if header and all(_is_number(cell) for cell in header if cell):
        return (
            f"no header line: the first line is data ({', '.join(map(repr, header[:4]))}, ...); "
            f"an Occupancy-format file starts with a header line naming {wanted} (any order)"
        )
    folded = {cell.casefold(): cell for cell in header}
    cases = [f"{folded[m.casefold()]!r} for {m!r}" for m in missing if m.casefold() in folded]
    words = {word for cell in header for word in cell.split()}
    spaced = len(header) < len(missing) and set(missing) <= words
    return (
        f"no column {wanted} in the header (it has {', '.join(map(repr, header)) or 'nothing'})"
        + (f"; names are case-sensitive: {', '.join(cases)}" if cases else "")
        + (
            "; fields separated by spaces? separate them by commas, semicolons or tabs, e.g."
            " tr -s ' ' ',' < in.txt > out.csv"
            if spaced
            else ""
        )
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# a number written with a decimal comma ("23,18", "-0,5"): a European export
_DECIMAL_COMMA = re.compile(r"[+-]?\d*,\d+")


# a cell of a file of decimal commas as ``float`` reads it: one reading with a scenario's
# ``[source] decimal = ","`` ("3,14", "1.050,0", "1 050,0"; None for "1.234")
_with_point = decimal_comma_cell


def _bad_value(lineno: int, name: str, cell: str, decimal: str = ".") -> str:
    """The refusal of a cell that is not a finite number, with what to do about it: a label
    word ('yes') is told the labels' limit, an empty cell (a gap) and a decimal comma are
    named as such (the bench fills no gaps; ``decimal`` "," reads decimal commas), and so
    is a decimal point in a file read with ``decimal`` ","."""
    text = cell.strip()
    if name == "Occupancy" and text and not _is_number(text):
        return f"line {lineno}: Occupancy must be 0 or 1, got {cell!r} (write labels as 0 and 1)"
    reason = f"line {lineno}: {name} must be a finite number, got {cell!r}"
    if foreign_mark_hint(text):
        return reason + foreign_mark_hint(text)
    if not text:
        return reason + (
            " (an empty cell: the bench fills no gaps; fill the value or remove the row)"
        )
    if decimal == "," and _POINT_NUMBER.fullmatch(text):
        return reason + (
            " (a decimal point under --decimal ',': 1.234, or 1234 with its digits grouped? "
            "a point is read only as digit grouping before a decimal comma, as in 1.234,5)"
        )
    if _DECIMAL_COMMA.fullmatch(text):
        return reason + (
            " (a decimal comma? numbers need a decimal point, or --decimal ',' for a file of "
            "decimal commas separated by semicolons or tabs)"
        )
    if text.strip("\"'") == name:
        # files joined with cat repeat their header (helper G's user trial, 2026-12-06)
        return reason + (
            " (the header row again: files joined with cat repeat it; keep the first, "
            f"e.g. awk 'NR == 1 || !/{name}/' joined.csv > one.csv)"
        )
    return reason


def _read_occupancy(
    text: io.StringIO, delimiter: str | None = None, decimal: str = "."
) -> tuple[np.ndarray, np.ndarray]:
    """``load_occupancy``'s reading pass over the file's text and delimiter (``_open_text``;
    None: sniffed from the text), numbers with the decimal mark ``decimal``."""
    rows = array("d")  # flat, 8 bytes a value (a list of lists took ~27 per value)
    labels = array("b")
    with text as handle:
        reader, header = _occupancy_reader(handle, delimiter)
        layout = None
        # a "date" column, while every value is an ISO date-time, must not go back in time:
        # the windows are consecutive records (a shuffled file gave windows of unrelated
        # minutes, silently)
        date = header.index("date") if "date" in header else None
        order = DateOrder()
        for row in reader:
            if not row or not any(cell.strip() for cell in row):
                continue
            lineno = reader.line_num  # (the header need not be line 1: a sep= line)
            if layout is None:
                layout = _occupancy_layout(row, header, lineno)
            width, lead, cols = layout
            values = _occupancy_values(row, lineno, width, cols, decimal)
            if date is not None and not order.feed(row[date + lead].strip(), lineno):
                date = None  # dates in no format known here: the order is the file's
            rows.extend(values[:-1])
            labels.append(int(values[-1]))
    x = np.frombuffer(rows, dtype=float).reshape(-1, len(CHANNELS)).copy()
    y = np.frombuffer(labels, dtype=np.int8).astype(int)
    return x, y


def _occupancy_reader(handle: io.StringIO, delimiter: str | None = None) -> tuple[Any, list[str]]:
    """A CSV reader over ``handle`` past its header, and the header: each of ``CHANNELS``
    and ``Occupancy`` once (``ValueError`` naming a column twice, or the missing ones)."""
    reader, header = _csv_reader(handle, delimiter)
    twice = [c for c in (*CHANNELS, "Occupancy", "date") if header.count(c) > 1]
    if twice:  # the first was read silently
        raise ValueError(
            f"column {twice[0]!r} appears {header.count(twice[0])} times in the header: "
            "which one to read is ambiguous"
        )
    missing = [c for c in (*CHANNELS, "Occupancy") if c not in header]
    if missing:
        raise ValueError(_missing_columns(missing, header))
    return reader, header


def _csv_reader(handle: io.StringIO, delimiter: str | None) -> tuple[Any, list[str]]:
    """A CSV reader over ``handle`` past its header (the first line that is not blank: an
    Excel ``sep=`` line was blanked), and the header's stripped names. ``delimiter`` None:
    comma, semicolon or tab, sniffed from the first two lines as the scenarios' CSV
    sources do (protocol.delimiters; a ';' export read as one field a line)."""
    if delimiter is None:
        head = "".join(line for line, _ in zip(handle, range(64), strict=False))
        handle.seek(0)
        delimiter = sniff_delimiter(head)
    # skipinitialspace: a quoted field after a delimiter and a space (`"date", "Light"`,
    # as hand-written and some exporters' files have) is unquoted, not read as '"Light"'
    reader = csv.reader(handle, delimiter=delimiter, skipinitialspace=True)
    header: list[str] = []
    for row in reader:
        header = [cell.strip() for cell in row]
        if any(header):
            break
    return reader, header


def _occupancy_layout(
    row: list[str], header: list[str], lineno: int
) -> tuple[int, int, tuple[int, ...]]:
    """From the first data row: ``(width, lead, cols)``, the fields every data row has,
    the shift of the header's columns in a row, and the row indices of ``CHANNELS`` then
    ``Occupancy``."""
    offset = len(row) - len(header)  # a leading row id: one field wider than the header
    if offset not in (0, 1):
        raise ValueError(
            f"line {lineno} has {len(row)} fields, the header {len(header)} "
            "(a data row may carry one extra leading row id)"
        )
    # the extra field is a leading row id, or (an empty last field after a
    # non-numeric first one) a delimiter ending the row: read as a row id, it put
    # every column one to the right, silently
    lead = offset
    if offset == 1 and not row[-1].strip() and not row[0].strip().isdigit():
        lead = 0
    cols = tuple(header.index(c) + lead for c in (*CHANNELS, "Occupancy"))
    return len(header) + offset, lead, cols


def _occupancy_values(
    row: list[str], lineno: int, width: int, cols: tuple[int, ...], decimal: str = "."
) -> list:
    """One data row's channel values then its Occupancy label (0.0 or 1.0), each finite
    (``ValueError`` naming the line, and the column or the field count); ``decimal`` ","
    reads decimal commas (``_with_point``)."""
    if len(row) != width:
        raise ValueError(f"line {lineno} has {len(row)} fields, expected {width}")
    values = []
    for name, c in zip((*CHANNELS, "Occupancy"), cols, strict=True):
        cell = row[c] if decimal == "." else _with_point(row[c])
        try:
            value = float("nan") if cell is None else float(cell)
        except ValueError:
            value = float("nan")
        if not math.isfinite(value):
            raise ValueError(_bad_value(lineno, name, row[c], decimal))
        if abs(value) >= _EXACT_INT and name != "Occupancy":  # (2**53 + 1 reads as 2**53)
            inexact = inexact_integer_reason(row[c])  # (a label is 0 or 1: said below)
            if inexact is not None:
                raise ValueError(f"line {lineno}: {name} {row[c].strip()!r} {inexact}")
        values.append(value)
    if values[-1] not in (0.0, 1.0):
        raise ValueError(f"line {lineno}: Occupancy must be 0 or 1, got {row[cols[-1]]!r}")
    return values


def check_date_order(path: str | Path) -> None:
    """Refuse (``ValueError`` naming the file, both lines and dates) a CSV file whose
    ``date`` column of ISO date-times goes back in time, the order check of
    ``load_occupancy`` for files read by other readers (the fleet's ``[gcdp]`` source and
    calibration files, replayed as consecutive records; ``DateOrder``). No ``date``
    column, or a first date in no known format, stops the check; a leading integer row id
    (the shipped layout) is skipped."""
    order = DateOrder()
    for lineno, text in _date_cells(path):
        try:
            if not order.feed(text, lineno):
                return
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None


def _date_cells(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each record's ``date`` cell of a CSV file, in file order
    (nothing without a ``date`` column; blank lines skipped; a leading integer row id, the
    shipped layout, skipped; the cells end at a short row: the file's reader names it)."""
    text, delimiter = _open_text(path)
    with text as handle:
        reader, header = _csv_reader(handle, delimiter)
        if "date" not in header:
            return
        column = None
        for row in reader:
            if not row or not any(cell.strip() for cell in row):
                continue
            lineno = reader.line_num
            if column is None:  # a leading row id: one field more than the header
                lead = len(row) == len(header) + 1 and row[0].strip().isdigit()
                column = header.index("date") + int(lead)
            if column >= len(row):
                return
            yield lineno, row[column].strip()


def record_steps(path: str | Path) -> np.ndarray | None:
    """The seconds between consecutive records of a CSV file's ``date`` column (length
    records - 1), or None without a ``date`` column or when a date is in no known format
    (ISO, else the first of ``DATE_FORMATS`` that reads the first date). A file
    ``load_occupancy`` read: its order and formats are already checked."""
    return _steps([text for _, text in _date_cells(path)])


# two files' median steps (or median window spans) differing by more than this factor: a
# window of ``window`` records spans a different time in each (a note, not a refusal)
STEP_RATIO = 1.5
# a step longer than this many median steps is a gap in time (a window across it mixes
# records from both sides)
GAP_STEPS = 5


def record_timing(path: str | Path, window: int) -> tuple[float | None, float | None]:
    """``(median step, median window span)`` in seconds of a CSV file's records
    (``record_steps``, ``window_span``): None each without a ``date`` column in a known
    format (or without two records, or a whole window)."""
    steps = record_steps(path)
    median = None if steps is None or not steps.size else float(np.median(steps))
    return median, window_span(steps, window)


def window_span(steps: np.ndarray | None, window: int) -> float | None:
    """The median over a file's windows of the seconds from a window's first record to its
    last (``steps[j]`` = seconds from record j to j + 1); None without dates, with one
    record a window or without a whole window."""
    if steps is None or window < 2:
        return None
    n = (steps.size + 1) // window
    if n == 0:
        return None
    inside = np.append(steps[: n * window], 0.0)[: n * window].reshape(n, window)
    return float(np.median(inside[:, : window - 1].sum(axis=1)))


def _steps(texts: list[str]) -> np.ndarray | None:
    """``record_steps`` of the date strings ``texts``."""
    if len(texts) < 2:
        return None
    try:
        when = [_iso(t) for t in texts]
    except ValueError:
        fmt = next((f for f in DATE_FORMATS if _parse(texts[0], f, 0)), None)
        if fmt is None:
            return None
        read = [_parse(t, fmt, 0) for t in texts]
        if None in read:
            return None
        when = [entry[0] for entry in read]
    try:
        return np.array([(b - a).total_seconds() for a, b in pairwise(when)])
    except TypeError:  # offsets mixed (load_occupancy refuses such a file)
        return None


def _iso(text: str) -> datetime:
    """``datetime.fromisoformat``, except for a number of more than 8 digits: Unix time
    (``UNIX_RANGE``), not an ISO basic date (Python read the milliseconds 1423072260000 as
    1423-07-22 00:00)."""
    if len(text) > 8 and text.isdigit():
        raise ValueError(f"{text!r} is a number, not an ISO date-time")
    return datetime.fromisoformat(text)


def _in_time_order(text: str, lineno: int, last: tuple | None) -> tuple | None:
    """The order check of ``load_occupancy``'s date column: ``(datetime, line, text)`` of
    this record, or None if the FIRST date ``text`` is not an ISO date-time (the check
    stops; a later one that is not is refused: it stopped the check silently). Raises
    ``ValueError`` naming both lines for a date earlier than the previous one, or for a date
    with a UTC offset after one without (or the reverse): their order is undefined (it
    raised a bare TypeError)."""
    try:
        when = _iso(text)
    except ValueError:
        if last is None:
            return None
        raise ValueError(
            f"line {lineno}: date {text!r} is not an ISO date-time (line {last[1]}'s "
            f"{last[2]!r} is): a date column of ISO date-times is checked for time order "
            "throughout"
        ) from None
    if last is None:
        return (when, lineno, text)
    if (when.utcoffset() is None) != (last[0].utcoffset() is None):
        has, other = ("has no", "has one") if when.utcoffset() is None else ("has a", "has none")
        raise ValueError(
            f"line {lineno}: date {text!r} {has} UTC offset, the date on line {last[1]} "
            f"{last[2]!r} {other} (their order is undefined: give every date an offset or none)"
        )
    if when < last[0]:
        raise ValueError(
            f"line {lineno}: date {text!r} is earlier than {last[2]!r} on line {last[1]} (the "
            "records must be in time order: windows are consecutive records)"
        )
    return (when, lineno, text)


# common non-ISO date-time formats checked for time order (day/month ambiguity: a file
# passes if one reading is in order); strptime, so only files not in ISO pay for it
DATE_FORMATS = (
    "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %H:%M", "%d/%m/%Y %H:%M:%S", "%d/%m/%Y %H:%M",
    "%d.%m.%Y %H:%M:%S", "%d.%m.%Y %H:%M", "%Y/%m/%d %H:%M:%S", "%Y/%m/%d %H:%M",
    "%m/%d/%Y", "%d/%m/%Y", "%d.%m.%Y",
    # Excel's US display with AM/PM (2/12/2015 5:51:00 PM): before 2026-12-06 in no known
    # format, so a file of two days swapped passed unchecked (helper G's user trial)
    "%m/%d/%Y %I:%M:%S %p", "%m/%d/%Y %I:%M %p",
    # Unix time, seconds or milliseconds (a logger's export; not strptime formats: ``_parse``
    # reads them): before 2026-12-06 in no known format, so neither the order nor the
    # sampling of such a file was checked (helper B's user trial)
    "unix seconds", "unix milliseconds",
)  # fmt: skip

# the values read as Unix time: 1973-03-03 .. 5138-11-16 (seconds), the same in milliseconds
# (disjoint: a 13-digit number is not read as seconds); a small counter is no date
UNIX_RANGE = {"unix seconds": (1e8, 1e11, 1.0), "unix milliseconds": (1e11, 1e14, 1e-3)}


class DateOrder:
    """The time-order check of a ``date`` column, fed one record at a time (``feed``).
    ISO date-times (``_in_time_order``), else every format of ``DATE_FORMATS`` that reads
    the first date, dropped when a later date does not parse or goes back in time; the
    check raises when no reading is left. ``feed`` returns False when the first date is in
    no known format (the check stops and the file's order is used)."""

    def __init__(self) -> None:
        self.iso: tuple | None = None
        self.readings: dict[str, tuple] | None = None  # format -> (datetime, line, text)

    def feed(self, text: str, lineno: int) -> bool:
        """Check one record's date (``ValueError`` naming both lines when out of order)."""
        if self.iso is not None or self.readings is None:
            first = self.iso is None
            self.iso = _in_time_order(text, lineno, self.iso)
            if self.iso is not None or not first:
                return True
            self.readings = {f: e for f in DATE_FORMATS if (e := _parse(text, f, lineno))}
            return bool(self.readings)
        kept, refusal = {}, None
        for fmt, last in self.readings.items():
            entry = _parse(text, fmt, lineno)
            if entry is not None and entry[0] >= last[0]:
                kept[fmt] = entry
            elif entry is not None and refusal is None:
                refusal = (
                    f"line {lineno}: date {text!r} is earlier than {last[2]!r} on line "
                    f"{last[1]} (read as {fmt}; the records must be in time order: windows "
                    "are consecutive records)"
                )
        if not kept:
            last = next(iter(self.readings.values()))
            raise ValueError(
                refusal
                or f"line {lineno}: date {text!r} is not in the format of the dates "
                f"before it (line {last[1]}'s {last[2]!r})"
            )
        self.readings = kept
        return True


def _parse(text: str, fmt: str, lineno: int) -> tuple | None:
    """``(datetime, line, text)`` of ``text`` read with ``fmt`` (a strptime format or one
    of ``UNIX_RANGE``'s), None if it does not fit."""
    if fmt in UNIX_RANGE:
        low, high, unit = UNIX_RANGE[fmt]
        try:
            value = float(text)
        except ValueError:
            return None
        if not low <= value < high:  # also NaN and inf
            return None
        return (datetime.fromtimestamp(value * unit, tz=UTC), lineno, text)
    try:
        return (datetime.strptime(text, fmt), lineno, text)
    except ValueError:
        return None


def fit_normalizer(train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Training-only per-channel (low, high); constant channels get a unit range. A range
    wider than the largest float is refused (``ParameterError``, field ``train[:, k]``)."""
    low = train.min(axis=0)
    high = train.max(axis=0)
    _check_width(low, high)
    high = np.where(high > low, high, low + 1.0)
    return low, high


def _check_width(low: np.ndarray, high: np.ndarray) -> None:
    """Refuse a training interval whose width ``high - low`` overflows to inf: every value
    of that column would normalise to 0 or NaN (a downstream "must be finite" error that
    named neither the column nor the values)."""
    with np.errstate(over="ignore"):
        wide = np.flatnonzero(~np.isfinite(np.asarray(high) - np.asarray(low)))
    if wide.size:
        k = int(wide[0])
        raise ParameterError(
            f"column {k}: the training interval [{float(low[k])!r}, {float(high[k])!r}] is wider "
            "than the largest float (its width overflows): rescale or remove the extreme values",
            field=f"train[:, {k}]",
            limit="a training interval of finite width (value: its (low, high))",
            value=(float(low[k]), float(high[k])),
        )


IQR_FENCE = 1.5  # Tukey's conventional fence constant (not searched)


def fit_iqr_clip(train: np.ndarray, fence: float = IQR_FENCE) -> tuple[np.ndarray, np.ndarray]:
    """Training-only robust per-channel clipping interval (seed 000 §4.1: "public medians and
    interquartile ranges may be used for robust normalization"): Tukey's fences
    ``[Q1 - fence IQR, Q3 + fence IQR]`` of the TRAINING values, intersected with the
    training range (a fence beyond the observed range clips nothing, so the range is kept).
    A channel whose interval is empty or a point gets a unit range, as in ``fit_normalizer``.
    The interval is public (training-only), so the certified bound of a clipped value is
    still ``U - L`` in raw units, 1 after ``normalize``. An interval wider than the largest
    float is refused (``ParameterError``, field ``train[:, k]``)."""
    train = np.asarray(train, dtype=float)
    q1, q3 = np.percentile(train, [25.0, 75.0], axis=0)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflowing width is refused
        iqr = q3 - q1
    low = np.maximum(train.min(axis=0), q1 - fence * iqr)
    high = np.minimum(train.max(axis=0), q3 + fence * iqr)
    _check_width(low, high)
    high = np.where(high > low, high, low + 1.0)
    return low, high


def normalize(x: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Min-max to [0, 1] with frozen (low, high), then clip (the fixed public domain)."""
    return np.clip((x - low) / (high - low), 0.0, 1.0)


def window_means(x: np.ndarray, y: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """Non-overlapping windows of ``window`` records (the trailing partial one dropped):
    per-channel means (n_windows x M) and majority labels (ties -> occupied)."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ParameterError(
            f"must be an integer >= 1, got {window!r}",
            field="window",
            limit="an integer >= 1",
            value=window,
        )
    n = (x.shape[0] // window) * window
    if n == 0:
        raise ParameterError(
            f"fewer records ({x.shape[0]}) than one window",
            field="window",
            limit=f">= {window} records, one window (value: the record count)",
            value=x.shape[0],
        )
    feats = x[:n].reshape(-1, window, x.shape[1]).mean(axis=1)
    labels = (y[:n].reshape(-1, window).mean(axis=1) >= 0.5).astype(int)
    return feats, labels


def label_utility(features: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Utility ``mu_k`` in [0, 1]: |Pearson correlation| of window feature k with the label
    on the training windows (0 for a constant feature or label)."""
    f = features - features.mean(axis=0)
    lab = labels - labels.mean()
    denom = np.sqrt((f**2).sum(axis=0) * (lab**2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(denom > 0, np.abs(f.T @ lab) / np.where(denom > 0, denom, 1.0), 0.0)
    return np.clip(r, 0.0, 1.0)


def masking_utility(model, features: np.ndarray, labels: np.ndarray, metric=None,
                    mask_value: float = 0.0) -> np.ndarray:  # fmt: skip
    """Utility ``mu_k`` in [0, 1] as seed 000 §4.4 defines it: "the normalized reduction in
    validation utility when the associated node or feature group is masked". For each
    coordinate k, replace column k of the (clean, public) validation ``features`` by the
    fixed public ``mask_value`` (0, the mask of Algorithm 2's ``masking_deltas``), and
    score the fixed ``model`` with ``metric`` (default ``f1_percent``):
    ``mu_k = max(0, U - U_k) / U`` with ``U`` the unmasked score (all 0 when ``U = 0``)."""
    metric = f1_percent if metric is None else metric
    features = np.asarray(features, dtype=float)
    base = float(metric(labels, model.predict(features)))
    mu = np.zeros(features.shape[1])
    if base <= 0.0:
        return mu
    for k in range(features.shape[1]):
        masked = features.copy()
        masked[:, k] = mask_value
        mu[k] = max(0.0, base - float(metric(labels, model.predict(masked)))) / base
    return np.clip(mu, 0.0, 1.0)


@dataclass(frozen=True)
class LogisticModel:
    """Fixed logistic regression on standardised features (training mean/std)."""

    mean: np.ndarray
    std: np.ndarray
    coef: np.ndarray
    intercept: float

    def decision(self, features: np.ndarray) -> np.ndarray:
        z = (np.asarray(features, dtype=float) - self.mean) / self.std
        return z @ self.coef + self.intercept

    def predict(self, features: np.ndarray) -> np.ndarray:
        return (self.decision(features) > 0.0).astype(int)


def fit_logistic(
    features: np.ndarray,
    labels: np.ndarray,
    l2: float = 1e-2,
    iters: int = 50,
    class_weight: str = "none",
) -> LogisticModel:
    """Newton's method on the L2-regularised log-loss (intercept unpenalised); deterministic.
    ``class_weight="balanced"`` weighs each present class by half of the total (sample
    weight ``n / (2 n_c)``); ``"none"`` weighs every sample 1."""
    if class_weight not in ("none", "balanced"):
        raise ParameterError(
            f"must be 'none' or 'balanced', got {class_weight!r}",
            field="class_weight",
            limit="'none' or 'balanced'",
            value=class_weight,
        )
    labels = np.asarray(labels, dtype=float)
    weight = np.ones(labels.size)
    if class_weight == "balanced":
        for value in (0.0, 1.0):
            count = int(np.sum(labels == value))
            if count:
                weight[labels == value] = labels.size / (2.0 * count)
    mean = features.mean(axis=0)
    std = features.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    z = (features - mean) / std
    a = np.hstack([z, np.ones((z.shape[0], 1))])
    w = np.zeros(a.shape[1])
    pen = np.full(a.shape[1], l2)
    pen[-1] = 0.0
    n = a.shape[0]
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(a @ w, -500, 500)))
        grad = a.T @ (weight * (p - labels)) / n + pen * w
        curvature = weight * p * (1 - p)
        hess = (a * curvature[:, None]).T @ a / n + np.diag(pen) + 1e-10 * np.eye(a.shape[1])
        step = np.linalg.solve(hess, grad)
        w = w - step
        if np.max(np.abs(step)) < 1e-10:
            break
    return LogisticModel(mean=mean, std=std, coef=w[:-1], intercept=float(w[-1]))


@dataclass(frozen=True)
class OneVsRestModel:
    """Fixed one-vs-rest logistic classifier: class index = argmax of the per-class
    decision values (ties -> the lower index)."""

    models: tuple[LogisticModel, ...]

    def decision(self, features: np.ndarray) -> np.ndarray:
        return np.column_stack([m.decision(features) for m in self.models])

    def predict(self, features: np.ndarray) -> np.ndarray:
        return np.argmax(self.decision(features), axis=1)


def fit_one_vs_rest(
    features: np.ndarray, labels: np.ndarray, n_classes: int, class_weight: str = "none"
) -> OneVsRestModel:
    """One ``fit_logistic`` per class ``0..n_classes-1`` (class vs the rest); deterministic."""
    labels = np.asarray(labels).astype(int)
    return OneVsRestModel(
        tuple(
            fit_logistic(features, (labels == c).astype(int), class_weight=class_weight)
            for c in range(n_classes)
        )
    )


def macro_f1_percent(truth: np.ndarray, pred: np.ndarray, n_classes: int) -> float:
    """Unweighted mean over the fixed classes ``0..n_classes-1`` of the one-vs-rest F1 (%);
    a class without a true positive scores 0."""
    truth = np.asarray(truth).astype(int)
    pred = np.asarray(pred).astype(int)
    scores = [
        f1_percent((truth == c).astype(int), (pred == c).astype(int)) for c in range(n_classes)
    ]
    return float(np.mean(scores))


def f1_percent(truth: np.ndarray, pred: np.ndarray) -> float:
    """Positive-class F1 in percent (0 when there is no true or predicted positive)."""
    tp = int(np.sum((truth == 1) & (pred == 1)))
    fp = int(np.sum((truth == 0) & (pred == 1)))
    fn = int(np.sum((truth == 1) & (pred == 0)))
    if tp == 0:
        return 0.0
    return 100.0 * 2 * tp / (2 * tp + fp + fn)


def prediction_collapse(truth: np.ndarray, pred: np.ndarray) -> dict:
    """Whether the 0/1 predictions ``pred`` of windows labelled ``truth`` are all of one
    class: the share predicted occupied, the F1 (percent) of predicting every window
    occupied (the score a collapsed classifier prints), and ``collapsed``, a sentence for
    "always occupied" / "never occupied" or None when both classes are predicted."""
    pred = np.asarray(pred).astype(int)
    share = float(pred.mean()) if pred.size else 0.0
    collapsed = None
    if pred.size and share == 1.0:
        collapsed = "always occupied: the F1 is that of predicting every window occupied"
    elif pred.size and share == 0.0:
        collapsed = "never occupied: no window predicted occupied, F1 0"
    return {
        "predicted_occupied_share": round(share, 4),
        "always_occupied_f1": round(f1_percent(np.asarray(truth), np.ones_like(pred)), 4),
        "collapsed": collapsed,
    }


def one_class_note(protected: np.ndarray, windows: str) -> str | None:
    """A sentence when every one of the ``windows`` windows has the same protected-attribute
    class (``oriented_auc`` then returns 0.5, which reads as an attack at chance), else
    None."""
    protected = np.asarray(protected).astype(int)
    if protected.size and np.all(protected == protected[0]):
        return (
            f"every {windows} window has protected attribute {int(protected[0])}: the attack "
            "AUC is undefined (printed as 0.5)"
        )
    return None


def oriented_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """``max(AUC, 1 - AUC)`` of ``scores`` for binary ``labels`` (Mann-Whitney with average
    ranks for ties); 0.5 when one class is absent."""
    labels = np.asarray(labels).astype(int)
    scores = np.asarray(scores, dtype=float)
    pos = int(labels.sum())
    neg = labels.size - pos
    if pos == 0 or neg == 0:
        return 0.5
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(scores.size)
    sorted_scores = scores[order]
    i = 0
    while i < scores.size:
        j = i
        while j + 1 < scores.size and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    auc = (ranks[labels == 1].sum() - pos * (pos + 1) / 2.0) / (pos * neg)
    return float(max(auc, 1.0 - auc))


# --- attacker readings ----------------------------------------------------------------------

# Smallest noise scale the informed attacker's likelihood uses (1 % of the normalised range):
# its prior is the finite set of clean training windows, so a release with (almost) no noise
# needs a kernel; it binds for NonPrivate only (every private scale here is above it).
INFORMED_BANDWIDTH = 0.01


class NoiseLaw(NamedTuple):
    """The noise of one release, known to an attacker who reads the public theta: ``kind``
    ``"laplace"`` (``scale`` = b_k = s_k / eps_k) or ``"gaussian"`` (``scale`` = sigma_k)."""

    kind: str
    scale: np.ndarray


def temporal_smooth(features: np.ndarray, lag: int) -> np.ndarray:
    """Centred moving average of the rows of ``features`` (windows in time order) over rows
    ``t - lag .. t + lag`` that exist: the temporal attacker's denoiser. ``lag = 0`` returns
    a copy."""
    if isinstance(lag, bool) or not isinstance(lag, int) or lag < 0:
        raise ParameterError(
            f"must be an integer >= 0, got {lag!r}", field="lag", limit="an integer >= 0", value=lag
        )
    x = np.asarray(features, dtype=float)
    n = x.shape[0]
    total = np.vstack([np.zeros((1, *x.shape[1:])), np.cumsum(x, axis=0)])
    lo = np.clip(np.arange(n) - lag, 0, n)
    hi = np.clip(np.arange(n) + lag + 1, 0, n)
    return (total[hi] - total[lo]) / (hi - lo).reshape((-1,) + (1,) * (x.ndim - 1))


@dataclass(frozen=True)
class TemporalModel:
    """A per-window model applied to the windows averaged over ``lag`` neighbours on each
    side in time (``temporal_smooth``): the rows given to ``decision`` / ``predict`` must
    be consecutive windows in time order. Reading a released sequence this way is
    post-processing of the released matrix (no privacy cost); the ``task_model=temporal``
    reading of the bench's fixed classifier (docs/gcdp.md, "The downstream classifier")."""

    base: object
    lag: int

    def decision(self, features: np.ndarray) -> np.ndarray:
        return self.base.decision(temporal_smooth(features, self.lag))

    def predict(self, features: np.ndarray) -> np.ndarray:
        return self.base.predict(temporal_smooth(features, self.lag))


def _laplace_log_cdf(z: np.ndarray) -> np.ndarray:
    """log P(Laplace(0, 1) <= z)."""
    return np.where(z < 0, np.log(0.5) + np.minimum(z, 0), np.log1p(-0.5 * np.exp(-np.abs(z))))


def _censored_loglik(r: np.ndarray, x: np.ndarray, law: NoiseLaw, low: float, high: float):
    """log p(r | x) per (release row, prior row, coordinate) for r = clip(x + Z, low, high):
    the density inside (low, high), the probability mass of the clipped tail at the edges."""
    scale = np.maximum(np.asarray(law.scale, dtype=float), INFORMED_BANDWIDTH)
    diff = (r[:, None, :] - x[None, :, :]) / scale
    to_low = (low - x[None, :, :]) / scale  # Z <= low - x  -> released at low
    to_high = (x[None, :, :] - high) / scale  # Z >= high - x -> released at high
    if law.kind == "laplace":
        inside = -np.abs(diff) - np.log(2.0 * scale)
        log_cdf = _laplace_log_cdf
    elif law.kind == "gaussian":
        inside = -0.5 * diff**2 - np.log(scale * np.sqrt(2.0 * np.pi))
        from scipy.special import log_ndtr  # here: a ~0.5 s import the fleet shards skip

        log_cdf = log_ndtr
    else:
        raise ParameterError(
            f"must be laplace or gaussian, got {law.kind!r}",
            field="law.kind",
            limit="laplace or gaussian",
            value=law.kind,
        )
    at_low = r[:, None, :] <= low
    at_high = r[:, None, :] >= high
    out = np.where(at_low, log_cdf(to_low), np.where(at_high, log_cdf(to_high), inside))
    return out.sum(axis=2)


def informed_attack_scores(
    released: np.ndarray,
    prior: np.ndarray,
    prior_attribute: np.ndarray,
    law: NoiseLaw,
    low: float = 0.0,
    high: float = 1.0,
) -> np.ndarray:
    """The informed attacker's score per released row: log p(release | attribute = 1) -
    log p(release | attribute = 0), each class the empirical mixture of its clean
    ``prior`` rows (the public training windows) pushed through the known noise ``law`` and
    the fixed clip to [low, high] (censored at the edges). Threshold 0 is the
    equal-prior decision; the AUC does not depend on the threshold."""
    r = np.asarray(released, dtype=float)
    x = np.asarray(prior, dtype=float)
    a = np.asarray(prior_attribute).astype(int)
    if a.min() == a.max():
        raise ParameterError(
            "the prior holds one attribute class only",
            field="prior_attribute",
            limit="both attribute classes in the prior (value: the one class present)",
            value=int(a.min()),
        )
    loglik = _censored_loglik(r, x, law, low, high)
    by_class = []
    for c in (0, 1):
        part = loglik[:, a == c]
        top = part.max(axis=1, keepdims=True)
        by_class.append(top[:, 0] + np.log(np.exp(part - top).mean(axis=1)))
    return by_class[1] - by_class[0]


def noise_variance(law: NoiseLaw) -> np.ndarray:
    """Per-coordinate variance of ``law`` (Laplace 2 b^2, Gaussian sigma^2)."""
    scale = np.asarray(law.scale, dtype=float)
    return 2.0 * scale**2 if law.kind == "laplace" else scale**2


def informed_gaussian_scores(
    released: np.ndarray, prior: np.ndarray, prior_attribute: np.ndarray, law: NoiseLaw
) -> np.ndarray:
    """The informed attacker's Gaussian reading (quadratic discriminant): each class is a
    Gaussian with the mean and covariance of its clean ``prior`` rows plus the known noise
    variance on the diagonal (``noise_variance``); score = log N(r; m1, C1 + V) -
    log N(r; m0, C0 + V). A parametric model of the same knowledge as
    ``informed_attack_scores`` that extrapolates beyond the training windows; the clip is
    ignored (an approximation)."""
    r = np.asarray(released, dtype=float)
    x = np.asarray(prior, dtype=float)
    a = np.asarray(prior_attribute).astype(int)
    if a.min() == a.max() or min(int(a.sum()), int((1 - a).sum())) < 2:
        raise ParameterError(
            "each attribute class needs two prior rows",
            field="prior_attribute",
            limit="two prior rows in each attribute class (value: the smaller class's count)",
            value=min(int(a.sum()), int((1 - a).sum())),
        )
    var = noise_variance(law) + INFORMED_BANDWIDTH**2
    out = []
    for c in (0, 1):
        part = x[a == c]
        cov = np.atleast_2d(np.cov(part, rowvar=False)) + np.diag(var)
        logdet = np.linalg.slogdet(cov)[1]
        centred = r - part.mean(axis=0)
        maha = np.einsum("ij,ij->i", centred, np.linalg.solve(cov, centred.T).T)
        out.append(-0.5 * (maha + logdet))
    return out[1] - out[0]
