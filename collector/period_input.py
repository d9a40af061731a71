"""Validation of the streams ``detect_period`` and CPR accept (``check_stream``, ``stream_kind``,
``is_time_column``) and of its integer options (``_check_int``)."""

from __future__ import annotations

import numbers

import numpy as np
from ldpfleet.protocol.errors import ParameterError


def is_time_column(x: object) -> bool:
    """Whether ``x`` is a column of timestamps or durations (numpy ``datetime64`` /
    ``timedelta64``, as an array or a list of them): numpy casts those to float (epoch
    units) without a word, so a timestamp column passed by mistake would be read as
    numbers. Only the first element of a list is looked at (a column is one type)."""
    dtype = getattr(x, "dtype", None)
    if isinstance(dtype, np.dtype):
        return dtype.kind in "mM"
    return (
        isinstance(x, list | tuple)
        and len(x) > 0
        and isinstance(x[0], np.datetime64 | np.timedelta64)
    )


def check_stream(x: object, name: str = "x") -> np.ndarray:
    """``x`` as a 1-D float64 array of finite real numbers (lists, ints, float32, numeric
    strings accepted), else a ``ParameterError`` naming ``name`` or its first bad sample
    ``name[k]``. Shared by ``detect_period`` and the baselines of ``ldpfleet bench cpr``."""
    # held-out (u5): a ragged list escaped as numpy's own ValueError (from iscomplexobj), a
    # CSV column with an empty or text cell was refused without naming the cell, and a
    # masked array's masked samples were read as numbers; held-out (helper A, 2026-12-05):
    # a datetime64 / timedelta64 column was read as epoch numbers
    _check_not_numbers_in_disguise(x, name)
    _check_a_sequence(x, name)
    _check_not_a_table(x, name)
    arr = _float_array(x, name)
    if arr.ndim == 0:  # a number (or a numeric string) is not a stream of samples
        raise ParameterError(
            f"must be 1-D (a stream of samples), got one value {x!r}",
            field=name,
            limit="1-D",
            value=arr.shape,
        )
    if arr.ndim != 1:
        # a table's column (n, 1) or a row (1, n) was "must be 1-D, got shape (555, 1)"
        # without saying what to pass (helper P, 2026-12-06); still refused: which axis is
        # time is the caller's to say (cpr's _one_stream_hint says the same)
        if arr.ndim == 2 and arr.shape[1] == 1:
            hint = "a column of one stream? pass x[:, 0] or x.ravel()"
        elif arr.ndim == 2 and arr.shape[0] == 1:
            hint = "a row of one stream? pass x[0] or x.ravel()"
        else:
            hint = "one stream per call, e.g. one column x[:, k]"
        raise ParameterError(
            f"must be 1-D, got shape {arr.shape}: {hint}",
            field=name,
            limit="1-D",
            value=arr.shape,
        )
    bad = ~np.isfinite(arr)
    if np.any(bad):
        idx = int(np.flatnonzero(bad)[0])
        raise ParameterError(
            f"sample must be finite, got {arr[idx]!r}",
            field=f"{name}[{idx}]",
            limit="a finite real number",
            value=float(arr[idx]),
        )
    return arr


def _check_not_numbers_in_disguise(x: object, name: str) -> None:
    """Refuse what ``np.asarray(x, dtype=float)`` would read as numbers wrongly: a time
    column (epoch numbers), a masked array's masked samples, complex values (the
    imaginary part dropped)."""
    if is_time_column(x):
        raise ParameterError(
            "must be a 1-D array of real numbers, got a time column (datetime64 / "
            "timedelta64): pass the values, not the timestamps",
            field=name,
            limit="a 1-D array of real numbers, not timestamps",
            value=stream_kind(x),
        )
    if np.ma.isMaskedArray(x) and np.ma.count_masked(x):
        idx = int(np.flatnonzero(np.ma.getmaskarray(x))[0])
        raise ParameterError(
            "sample is masked (fill or drop masked samples)",
            field=f"{name}[{idx}]",
            limit="no masked sample",
            value="masked",
        )
    try:
        complex_ = np.iscomplexobj(x)
    except (TypeError, ValueError):
        complex_ = False  # ragged: refused below
    if complex_:  # float() of a complex array drops the imaginary part (a warning)
        raise ParameterError(
            "must be a 1-D array of real numbers, got complex",
            field=name,
            limit=_REAL_ARRAY,
            value=stream_kind(x),
        )


def _check_a_sequence(x: object, name: str) -> None:
    """Refuse, naming what was given, what is no sequence of samples: ``None`` was "must be
    1-D, got shape ()" (numpy reads it as one NaN), a generator or a text "must be a 1-D
    array of real numbers" without saying what it got (helper B1, 2026-12-06)."""
    if x is None:
        what, hint = "None", ""
    elif isinstance(x, str | bytes) and not _is_number_text(x):
        what, hint = f"a {type(x).__name__} {_short(x)}", ": split and convert it first"
    elif not hasattr(x, "__len__") and hasattr(x, "__next__"):  # a generator, an iterator
        what, hint = f"an iterator ({type(x).__name__})", ": pass list(...) or an array"
    else:
        return
    raise ParameterError(
        f"must be a 1-D array of real numbers, got {what}{hint}",
        field=name,
        limit=_REAL_ARRAY,
        value=stream_kind(x),
    )


def _check_not_a_table(x: object, name: str) -> None:
    """Refuse a structured array of several fields, naming them and saying what to pass: it
    is what ``np.genfromtxt(..., names=True)`` gives for a CSV with a header, and was
    refused as "must be a 1-D array of real numbers" without a word on why (issue 19,
    helper E, 2026-12-06). A one-field structured array is read as its field, as numpy
    casts it."""
    fields = getattr(getattr(x, "dtype", None), "names", None)
    if not fields or len(fields) < 2:
        return
    shown = ", ".join(repr(f) for f in fields[:6]) + (", ..." if len(fields) > 6 else "")
    raise ParameterError(
        f"must be a 1-D array of real numbers, got a table (a structured array with fields "
        f"{shown}): pass one field, e.g. {name}[{fields[-1]!r}]",
        field=name,
        limit=_REAL_ARRAY,
        value=stream_kind(x),
    )


def _is_number_text(x: str | bytes) -> bool:
    try:
        float(x)
    except ValueError:
        return False
    return True


def _short(x: str | bytes) -> str:
    return repr(x if len(x) <= 40 else x[:37] + ("..." if isinstance(x, str) else b"..."))


def _float_array(x: object, name: str) -> np.ndarray:
    """``np.asarray(x, dtype=float)``, any shape; what it cannot read is refused naming
    the first sample of a list or tuple that is no real number, else ``name``."""
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        if isinstance(x, list | tuple):
            for idx, value in enumerate(x):
                try:
                    float(value)
                except (TypeError, ValueError):
                    raise ParameterError(
                        f"sample must be a real number, got {value!r}",
                        field=f"{name}[{idx}]",
                        limit="a real number",
                        value=value,
                    ) from None
        raise ParameterError(
            "must be a 1-D array of real numbers",
            field=name,
            limit=_REAL_ARRAY,
            value=stream_kind(x),
        ) from None
    except OverflowError:  # a Python int beyond the float range
        raise ParameterError(
            "must be a 1-D array of real numbers within the float range (|x| < 1.8e308)",
            field=name,
            limit="|x| < 1.8e308",
            value=stream_kind(x),
        ) from None


_REAL_ARRAY = "a 1-D array of real numbers"  # the limit of check_stream's array refusals


def stream_kind(x: object) -> str:
    """What a refused stream is, for ``ParameterError.value``: its dtype, else its type (the
    stream itself may be millions of samples)."""
    dtype = getattr(x, "dtype", None)
    if isinstance(dtype, np.dtype):
        return f"array of {dtype}"
    if isinstance(x, list | tuple) and len(x) > 0:
        return f"{type(x).__name__} of {type(x[0]).__name__}"
    return type(x).__name__


def _check_int(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(
            f"must be an integer, got {value!r}", field=name, limit="an integer", value=value
        )
    if value < minimum:
        raise ParameterError(
            f"must be >= {minimum}, got {value!r}",
            field=name,
            limit=f"an integer >= {minimum}",
            value=value,
        )
    return int(value)
