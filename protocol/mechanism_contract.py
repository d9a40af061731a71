"""The contract of a per-report stream mechanism — theory of operation.

A stream device clips each reading to FIXED public bounds ``[lo, hi]`` and maps it to
``x`` in [0, 1] (``protocol.sw.normalise``); a mechanism privatises ``x`` alone, with the
budget ``eps`` of ONE report (the stream's ``eps0 = eps / w``: any ``w`` consecutive reports
then spend ``eps``, charged by the device's ledger, never by the mechanism). The same code
path serves the built-ins (``sw``, ``sw01``, ``laplace``, ``raw``, ``duchi``, ``piecewise``,
``hybrid``) and user mechanisms (``"package.module:Class"`` or an entry point in the group
``ldpfleet.mechanisms``; ``protocol.mechanisms`` resolves names).

Required (a class ``Cls`` with):

``Cls(eps)``
    ``eps`` > 0 is the budget per report; refuse what you cannot honour by raising
    ``ValueError`` (or ``ParameterError``) with a sentence. The object must be a pure
    function of ``eps``: the device and the collector each build their own.
``perturb(x, rng) -> ndarray``
    ``x``: a 1-D float array of inputs in [0, 1]; returns a ``numpy.ndarray`` of the SAME
    shape of finite real numbers, int or float dtype (the reports; a list is refused),
    drawing randomness only from ``rng`` (a ``numpy.random.Generator``), never from a
    global RNG, a clock or ``os.urandom``. The whole mechanism must be pure ``eps``-LDP: for
    any two inputs and any set of outputs the probabilities differ by at most ``e^eps``.
``in_domain(y) -> ndarray[bool]``
    which reports an honest device could have sent (finite and inside the output range), a
    numpy array of dtype bool and y's shape (an int, float or list mask is refused).
    The collector refuses a report with a value outside it (counted, ``values[i]``
    named), so it must accept every output of ``perturb``.
``estimate_mean(y) -> float``
    an estimate of the mean of the inputs behind the reports ``y``, unbiased for every
    input distribution on [0, 1], a finite real number (``int``, ``float``, a numpy
    scalar of either kind or a 0-d array of one; a string, a bool, a 1-element array or a
    list is refused); the results'
    per-device means use it, mapped back to physical units with the public bounds.

Optional, used where present: ``eps`` (the budget it was built with: if stated, it must
equal the constructor's ``eps`` within a relative 1e-6, ``check_stated_eps``),
``output_low`` / ``output_high`` (the report range: if either is stated, both must be
finite real numbers with ``output_low <= output_high``, ``stated_range``; every report must
lie in it, on the device and on the collector alike, whatever ``in_domain`` says),
``estimate(y)`` (per-report unbiased point estimates), ``density(y, v)`` (output density
given input ``v``), ``variance(v)`` (the per-report variance of the estimate given ``v``,
shown beside the measured one by ``ldpfleet bench mechanisms``).

``check_mechanism`` enforces the contract on a sample when a scenario loads (and when an
audit or a device builds the mechanism): a missing method, a constructor that refuses the
budget, wrong shapes, non-finite reports or ``in_domain`` refusing the mechanism's own
outputs, or a ``perturb`` that draws randomness elsewhere than ``rng`` (two calls with
generators seeded alike give different reports, or it draws nothing from ``rng``) each
give ONE sentence naming what is
wrong (``ParameterError``, field ``mechanism``). The check is not a privacy proof:
``ldpfleet audit NAME --eps E`` audits the mechanism black-box.
"""

from __future__ import annotations

import functools
import inspect
import math
import traceback
from collections.abc import Callable
from pathlib import PurePath
from typing import Protocol, runtime_checkable

import numpy as np
from ldpfleet.protocol.errors import ParameterError

__all__ = [
    "EPS_MIN",
    "LOAD_BATCH_SIZES",
    "REQUIRED_METHODS",
    "StreamMechanism",
    "a_or_an",
    "below_eps_min",
    "build_mechanism",
    "check_budget",
    "check_mechanism",
    "check_outputs",
    "check_stated_eps",
    "checked_mean",
    "checked_report_values",
    "checked_reports",
    "checked_rng",
    "contract_reports",
    "domain_mask",
    "mean_problem",
    "nonnegative_values",
    "probe_inputs",
    "stated_range",
    "unit_inputs",
]

FIELD = "mechanism"
REQUIRED_METHODS = ("perturb", "in_domain", "estimate_mean")
PROBE_SIZE = 256  # inputs of the load-time sample (0, 1 and a grid in between)
# the batch sizes the load-time check runs perturb on: the sample, one reading (a device
# streaming live) and a backlog longer than the sample
LOAD_BATCH_SIZES = (PROBE_SIZE, 1, PROBE_SIZE + 44)
EPS_MAX = 50.0  # the wire's limit on a budget (``protocol.messages.Epsilon``)
# The smallest budget per report (``check_budget``). Below it the built-in mechanisms
# degenerate in float64: Square Wave's and PM's densities p and q = p e^-eps are ~1/2 apart
# by eps/2, which rounds to p == q below ~1.1e-16 (every estimate NaN) and keeps fewer than
# 4,500 ulps of the ratio at 1e-12; Duchi's and PM's range ~2/eps and variance ~1/eps^2
# overflow below ~1e-154 (the range and sums of n reports long before). At 1e-12 one report's
# estimate already has a standard deviation above 1e11 (all of them).
EPS_MIN = 1e-12
EPS_STATED_TOLERANCE = 1e-6  # relative: a stated self.eps must match the built eps


@runtime_checkable
class StreamMechanism(Protocol):
    """What a stream mechanism offers (see the module docstring)."""

    eps: float

    def perturb(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Reports for inputs ``x`` in [0, 1], same shape, finite."""
        ...

    def in_domain(self, y: np.ndarray) -> np.ndarray:
        """Boolean mask: which reports an honest device could send."""
        ...

    def estimate_mean(self, y: np.ndarray) -> float:
        """Unbiased estimate of the mean input behind the reports ``y``."""
        ...


def a_or_an(word: str) -> str:
    """``word`` with its indefinite article: "an int64", "an ndarray", "a str", "a list"
    (a leading vowel, or "nd" spelt out as "en-dee", takes "an")."""
    vowel = word[:1].lower() in "aeiou" or word.lower().startswith("nd")
    return f"{'an' if vowel else 'a'} {word}"


def check_budget(eps: object) -> float:
    """A budget per report: a finite real number in [EPS_MIN, EPS_MAX] (``ParameterError``
    naming ``eps``, the limit and the value; ``EPS_MIN`` says why the floor)."""
    real = int | float | np.integer | np.floating  # numpy's real scalars too (a float32)
    if isinstance(eps, bool | np.bool_) or not isinstance(eps, real) or not math.isfinite(eps):
        raise ParameterError(
            f"must be a finite real number, got {eps!r}",
            field="eps",
            limit="a finite real number",
            value=eps,
        )
    value = float(eps)
    if not 0.0 < value <= EPS_MAX:
        raise ParameterError(
            f"must be in (0, {EPS_MAX:g}], got {eps!r}",
            field="eps",
            limit=f"in (0, {EPS_MAX:g}]",
            value=eps,
        )
    if value < EPS_MIN:
        raise ParameterError(below_eps_min(value), field="eps", limit=f">= {EPS_MIN:g}", value=eps)
    return value


def report_floats(y: object, field: str = "y") -> np.ndarray:
    """``y`` as a float array (what ``in_domain`` and ``estimate_mean`` read), or a
    ``ParameterError`` naming ``field`` and the value when it is not numbers (text gave
    numpy's "could not convert string to float")."""
    try:
        return np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(
            f"reports must be real numbers, got {y!r:.80}",
            field=field,
            limit="real numbers",
            value=y,
        ) from None


def checked_report_values(mechanism: object, y: object, field: str = "y") -> np.ndarray:
    """Reports ``y`` a built-in mechanism's ``estimate_mean`` reads, as a float array: at
    least one, each one an output the mechanism can produce (``in_domain``); otherwise a
    ``ParameterError`` naming ``y`` or the first bad ``y[k]``, the range and the value
    (no reports gave NaN with a numpy warning, a NaN report NaN, and one outside the range
    a number, silently)."""
    arr = report_floats(y, field)
    if arr.size == 0:
        raise ParameterError(
            "need at least one report, got none",
            field=field,
            limit="at least one report",
            value=arr.size,
        )
    bad = ~mechanism.in_domain(arr)  # type: ignore[attr-defined]
    if np.any(bad):
        idx = np.unravel_index(int(np.flatnonzero(bad)[0]), arr.shape)
        where = field if arr.ndim == 0 else f"{field}[{', '.join(str(int(k)) for k in idx)}]"
        low = getattr(mechanism, "output_low", None)
        high = getattr(mechanism, "output_high", None)
        span = f" in [{low!r}, {high!r}]" if low is not None and high is not None else ""
        raise ParameterError(
            f"report must be a finite output of the mechanism{span}, got {float(arr[idx])!r}",
            field=where,
            limit=f"a finite output of the mechanism{span}",
            value=float(arr[idx]),
        )
    return arr


def below_eps_min(eps: object) -> str:
    """The reason a budget per report below ``EPS_MIN`` is refused (the floor, the value)."""
    return (
        f"must be >= {EPS_MIN:g}, the smallest budget per report the mechanisms compute "
        f"without degenerating (p == q or an overflowing estimate below it), got {eps!r}"
    )


# dtype kinds a privatised input may have: bool, signed and unsigned integers, floats
_REAL_KINDS = frozenset("biuf")


def unit_inputs(x: object, field: str = "v") -> np.ndarray:
    """``x`` as a float array, every value in [0, 1]; otherwise a ``ParameterError`` naming
    ``field`` (with the first bad index for an array) and the value. Refused as well: a
    masked array (its masked values would be privatised all the same), complex, date,
    text and other non-real inputs (numpy would read "0.5" as 0.5 and a datetime as a
    count of ticks)."""
    if isinstance(x, np.ma.MaskedArray):
        raise ParameterError(
            "a masked array is not an input: fill or drop its masked values first",
            field=field,
            limit="not a masked array",
            value=x,
        )
    raw = x if isinstance(x, np.ndarray) else _as_array(x, field)
    if raw.dtype.kind not in _REAL_KINDS and raw.dtype != object:
        raise _not_real(f"got dtype {raw.dtype}", field, raw.dtype)
    try:
        arr = np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as error:  # an object array holding text or None
        raise _not_real(str(error), field, x) from None
    bad = ~((arr >= 0.0) & (arr <= 1.0))  # also catches NaN
    if np.any(bad):
        index = int(np.flatnonzero(bad)[0])
        where = field if arr.ndim == 0 else f"{field}[{index}]"
        raise ParameterError(
            f"input must lie in [0, 1], got {float(arr.reshape(-1)[index])!r}",
            field=where,
            limit="in [0, 1]",
            value=float(arr.reshape(-1)[index]),
        )
    return arr


def checked_rng(rng: object, field: str = "rng") -> np.random.Generator:
    """``rng`` if it draws as a ``numpy.random.Generator`` does (has ``integers``), else a
    ``ParameterError`` naming ``field``: a seed, ``None`` or a legacy ``RandomState`` died in
    an ``AttributeError`` deep in a sampler."""
    if not hasattr(rng, "integers") or isinstance(rng, str | bytes | int | float):
        raise ParameterError(
            "must be a numpy.random.Generator, e.g. np.random.default_rng(seed) (the "
            f"randomness of every report comes from it), got {rng!r:.80}",
            field=field,
            limit="a numpy.random.Generator",
            value=rng,
        )
    return rng  # type: ignore[return-value]


def _as_array(x: object, field: str) -> np.ndarray:
    """``np.asarray(x)``, a ragged or otherwise unreadable input named as such."""
    try:
        return np.asarray(x)
    except (TypeError, ValueError) as error:
        raise _not_real(str(error), field, x) from None


def _not_real(detail: str, field: str, value: object) -> ParameterError:
    return ParameterError(
        f"inputs must be real numbers in [0, 1]: {detail}",
        field=field,
        limit="real numbers in [0, 1]",
        value=value,
    )


def _why(error: BaseException) -> str:
    """What a plugin's exception says; ``sys.exit`` inside a plugin is named as such (it
    ended ``ldpfleet audit`` with exit status 0 and no output)."""
    if isinstance(error, SystemExit):
        return f"it called sys.exit({error.code!r})"
    text = str(error)
    if text and not isinstance(error, LookupError):
        return text
    # a bare ``assert`` said nothing at all, a missing key only "'clip'": name the
    # exception and the plugin line that raised it
    said = f"{type(error).__name__}: {text}" if text else type(error).__name__
    where = _raised_at(error)
    return f"{said} ({where})" if where else said


def _raised_at(error: BaseException) -> str:
    """``raised at mech.py:12: assert 0 < eps``: the innermost frame of ``error``'s
    traceback (the plugin's own line), or ``""`` without one."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return ""
    frame = frames[-1]
    line = f": {frame.line.strip()}" if frame.line and frame.line.strip() else ""
    return f"raised at {PurePath(frame.filename).name}:{frame.lineno}{line}"


def _fail(name: str, what: str, *, rule: str = "the mechanism contract") -> ParameterError:
    """The contract refusing plugin ``name``: ``what`` it did, ``rule`` (``.limit``) the
    part of the contract it broke; ``.value`` is the plugin's name."""
    return ParameterError(f"{name!r} {what}", field=FIELD, limit=rule, value=name)


def _keyword_only_hint(signature: inspect.Signature | None) -> str:
    """`` (its eps is keyword-only: ...)`` when the constructor takes ``eps`` after ``*``
    (``def __init__(self, *, eps)``), for which Python's own message, "too many positional
    arguments", does not say what to change (helper M, 2026-12-06); else ``""``."""
    eps = None if signature is None else signature.parameters.get("eps")
    if eps is None or eps.kind is not inspect.Parameter.KEYWORD_ONLY:
        return ""
    return " (its eps is keyword-only: ldpfleet passes it by position, so drop the '*' before it)"


# The classes whose signature binds Cls(eps), by ``_binds_one_argument_key``: a fleet
# builds one mechanism a device, and ``inspect.signature`` of a class was ~7 % of the
# ``fleet-stream`` audit's CPU (helper A, 2026-12-07; 1,608 builds). Whether a signature
# binds one positional argument does not depend on the value (bind checks arity only).
_BINDS_ONE_ARGUMENT: set[tuple] = set()


def _binds_one_argument_key(factory: object) -> tuple | None:
    """What ``inspect.signature`` of the class ``factory`` reads (the class, its metaclass's
    ``__call__``, its ``__new__`` and ``__init__`` as resolved now, a stated
    ``__signature__`` or ``__wrapped__``), so a class or method replaced later (a planted
    mutant) is a new key; a ``functools.partial`` of such a class (the built-in ``sw``) by
    that and its bound arguments as they are now; None (never remembered) for anything
    else."""
    try:
        if isinstance(factory, functools.partial):
            inner = _binds_one_argument_key(factory.func)
            if inner is None:
                return None
            key = (
                "partial",
                inner,
                factory.args,
                tuple(factory.keywords.items()),
                getattr(factory, "__signature__", None),
                getattr(factory, "__wrapped__", None),
            )
        elif isinstance(factory, type):
            key = (
                factory,
                type(factory).__call__,
                factory.__new__,
                factory.__init__,
                getattr(factory, "__signature__", None),
                getattr(factory, "__wrapped__", None),
            )
        else:
            return None
        hash(key)
    except Exception:  # an unhashable or odd attribute: inspect it every time
        return None
    return key


def build_mechanism(factory: Callable[[float], object], eps: float, name: str) -> object:
    """``factory(eps)`` with the contract's methods checked; one sentence on failure."""
    if not callable(factory):
        raise _fail(
            name,
            f"is not a class (got {a_or_an(type(factory).__name__)})",
            rule="a class (the mechanism contract)",
        )
    signature = None
    binds = _binds_one_argument_key(factory)
    try:  # a constructor that cannot be called as Cls(eps) is named as such, not "refused"
        if binds not in _BINDS_ONE_ARGUMENT:
            signature = inspect.signature(factory)
            signature.bind(eps)
            if binds is not None:
                _BINDS_ONE_ARGUMENT.add(binds)
    except TypeError as error:
        raise _fail(
            name,
            f"cannot be built as Cls(eps), the mechanism contract's constructor: {error}"
            f"{_keyword_only_hint(signature)}",
            rule="a constructor callable as Cls(eps)",
        ) from None
    except ValueError:  # no signature to inspect (a builtin): calling it will tell
        pass
    try:
        mechanism = factory(eps)
    except (Exception, SystemExit) as error:  # a plugin may raise anything: report it
        raise _fail(
            name,
            f"refused eps = {eps:g}: {_why(error)}",
            rule="a constructor that accepts the eps it is given",
        ) from None
    missing = [m for m in REQUIRED_METHODS if not callable(_stated(mechanism, m, name))]
    if missing:
        raise _fail(
            name,
            f"has no method {', '.join(missing)} (the mechanism contract)",
            rule=f"the methods {', '.join(REQUIRED_METHODS)} (the mechanism contract)",
        )
    check_stated_eps(mechanism, eps, name)
    stated_range(mechanism, name)
    return mechanism


def stated_range(mechanism: object, name: str) -> tuple[float, float] | None:
    """``(output_low, output_high)`` when the mechanism states its report range, ``None``
    when it states neither; one sentence (``ParameterError``, field ``mechanism``) when only
    one is stated, either is not a finite real number, or ``output_low > output_high``.
    Reports outside a stated range are refused on the device and on the collector (before,
    the range was only quoted in messages: a plugin stating [0, 1] with a permissive
    ``in_domain`` had its 1.5 accepted and aggregated)."""
    low = _stated(mechanism, "output_low", name)
    high = _stated(mechanism, "output_high", name)
    if low is None and high is None:
        return None
    ok = all(
        isinstance(v, int | float | np.integer | np.floating)
        and not isinstance(v, bool | np.bool_)
        and math.isfinite(float(v))
        for v in (low, high)
    )
    if not ok or float(low) > float(high):  # type: ignore[arg-type]
        raise _fail(
            name,
            f"states output_low = {_shown(low)} and output_high = {_shown(high)}: the report "
            "range must be two finite real numbers with output_low <= output_high (or "
            "neither stated)",
            rule="output_low <= output_high, both finite real numbers (or neither stated)",
        )
    return float(low), float(high)  # type: ignore[arg-type]


def _stated(mechanism: object, attr: str, name: str) -> object:
    """``getattr(mechanism, attr, None)``, or one sentence (``ParameterError``, field
    ``mechanism``) when reading it raises: a property ``eps`` that raised ``RuntimeError``
    ended ``ldpfleet run`` and ``ldpfleet audit`` in a traceback, exit 1 (helper G's user
    trial, round 4). An ``AttributeError`` means "not stated", as Python's ``getattr``
    reads it."""
    try:
        return getattr(mechanism, attr, None)
    except (Exception, SystemExit) as error:
        raise _fail(
            name,
            f"raised reading its {attr}: {_why(error)} (state it as a plain attribute, or "
            "a property that does not raise)",
            rule=f"{attr} readable without raising",
        ) from None


def check_stated_eps(mechanism: object, eps: float, name: str) -> None:
    """A mechanism that states its budget (an ``eps`` attribute) must state the one it was
    built with, within a relative ``EPS_STATED_TOLERANCE``: a plugin answering
    ``self.eps = 2 * eps`` (or running at a budget of its own) would otherwise be labelled
    and audited at a budget it does not spend. Not stating ``eps`` is allowed."""
    stated = _stated(mechanism, "eps", name)
    if stated is None:
        return
    real = isinstance(stated, int | float | np.integer | np.floating)
    if not real or isinstance(stated, bool | np.bool_):
        raise _fail(
            name,
            f"states eps = {_shown(stated)} ({a_or_an(type(stated).__name__)}), not a real "
            f"number; it was built with eps = {eps!r} (store the constructor's argument: "
            "self.eps = float(eps))",
            rule="self.eps a real number: the constructor's eps",
        )
    if not math.isclose(float(stated), float(eps), rel_tol=EPS_STATED_TOLERANCE, abs_tol=0.0):
        raise _fail(
            name,
            f"states eps = {float(stated)!r} but was built with eps = {float(eps)!r} (relative "
            f"difference above {EPS_STATED_TOLERANCE:g}): self.eps must be the budget the "
            "constructor was given; to run at another budget, change the scenario's eps",
            rule=f"self.eps = the built eps (relative difference <= {EPS_STATED_TOLERANCE:g})",
        )


def probe_inputs(size: int = PROBE_SIZE) -> np.ndarray:
    """The load-time sample: 0, 1 and an even grid in between."""
    return np.linspace(0.0, 1.0, size)


def checked_reports(x: np.ndarray, y: object, name: str) -> np.ndarray:
    """``y = perturb(x)`` as a float array of x's shape with finite values, or one sentence
    (``ParameterError``, field ``mechanism``): what a device checks before it sends its
    reports, since the wire cannot carry a NaN and a wrong count would shift the steps.

    The ONE check of a ``perturb`` result (the load-time sample, every device call, the
    bench and the audit): it must be a ``numpy.ndarray`` of real numbers (integer or
    floating dtype, converted to float64; an integer float64 cannot hold exactly, beyond
    ±2^53, is refused rather than rounded: ``_check_integers_exact``); a list, a tuple, a
    scalar, booleans, complex numbers or objects are refused rather than converted, so
    what the collector receives is what the plugin's author wrote."""
    if isinstance(y, np.ma.MaskedArray):  # isfinite skips masked entries: NaN passed
        raise _fail(
            name,
            "perturb returned a MaskedArray, not a numpy.ndarray (the wire cannot carry a "
            "mask: return every report, e.g. np.asarray(reports, dtype=float))",
            rule="perturb returns a numpy.ndarray",
        )
    if not isinstance(y, np.ndarray):
        raise _fail(
            name,
            f"perturb returned {a_or_an(type(y).__name__)}, not a numpy.ndarray (the mechanism "
            "contract: an array of the inputs' shape, e.g. np.asarray(reports, dtype=float))",
            rule="perturb returns a numpy.ndarray",
        )
    if y.shape != x.shape:
        raise _fail(
            name,
            f"perturb returned shape {y.shape} for inputs of shape {x.shape}",
            rule="perturb returns an array of the inputs' shape",
        )
    if not (np.issubdtype(y.dtype, np.integer) or np.issubdtype(y.dtype, np.floating)):
        raise _fail(
            name,
            f"perturb returned reports of dtype {y.dtype}, not real numbers (int or float)",
            rule="perturb returns real numbers (int or float)",
        )
    if not np.all(np.isfinite(y)):
        raise _fail(
            name,
            f"perturb returned non-finite reports{_first_bad(y)}",
            rule="perturb returns finite reports",
        )
    out = y.astype(float, copy=False)
    if y.dtype.kind in "iu" and y.dtype.itemsize > 4:
        _check_integers_exact(y, out, name)
    return out


# integers of magnitude up to 2^53 are exact in float64; above, only some are
_EXACT_INT = 2**53


def _check_integers_exact(y: np.ndarray, out: np.ndarray, name: str) -> None:
    """One sentence if an integer report has no float64 of its own: the wire carries
    float64, so 2^60 + 1 would arrive as 2^60 (a bitmask of 60 levels packed in an int64
    lost its low bits silently, and ``estimate_mean`` read other reports than the device
    sent; helper U3). ``out`` is ``y`` as float64."""
    big = np.flatnonzero((np.abs(out) >= _EXACT_INT).ravel())  # 2^53 + 1 rounds to 2^53
    if not big.size:
        return
    wide = y.ravel()[big].tolist()  # Python ints: exact
    floats = out.ravel()[big].tolist()
    lossy = [i for i, a, b in zip(big.tolist(), wide, floats, strict=True) if int(b) != a]
    if lossy:
        i = lossy[0]
        sent = int(y.ravel()[i])
        raise _fail(
            name,
            f"perturb returned integer reports that float64, what the wire carries, cannot "
            f"hold exactly (report {i} is {sent}, it would arrive as {int(out.ravel()[i])}; "
            f"{len(lossy)} of {y.size} are not exact): integer reports must be exact in "
            f"float64, e.g. within ±2^53 = ±{_EXACT_INT} (pack fewer bits per report)",
            rule="integer reports exact in float64 (every integer within ±2^53 is)",
        )


def mean_problem(value: object) -> str | None:
    """Why ``value`` (what ``estimate_mean`` returned) is not a finite real number, or
    ``None``: a Python ``int``/``float``, a numpy integer/floating scalar or a 0-d array of
    such a dtype (``np.where(n > 0, m, 0.5)`` answers one), finite. A string, a bool, a
    1-element array, a list or a complex number is refused, not converted (``float("0.5")``
    would have hidden a plugin returning text)."""
    if _zero_d_real(value):  # np.where(n > 0, m, 0.5) answers one: it is one number
        value = value.item()  # type: ignore[union-attr]
    real = isinstance(value, int | float | np.integer | np.floating)
    if not real or isinstance(value, bool | np.bool_):
        kind = type(value).__name__
        if isinstance(value, np.ndarray):
            kind = f"numpy.ndarray of shape {value.shape}"
        return f"returned {_shown(value)} ({a_or_an(kind)}), not a real number (int or float)"
    try:
        shown = repr(float(value))
    except OverflowError:  # a Python int beyond the float range
        return f"returned {_shown(value)}, not a finite number"
    return None if math.isfinite(float(value)) else f"returned {shown}, not a finite number"


def _zero_d_real(value: object) -> bool:
    """A 0-d numpy array of integer or floating dtype (not bool, not a masked array): one
    real number, read without loss by ``.item()``."""
    return (
        type(value) is np.ndarray
        and value.shape == ()
        and (np.issubdtype(value.dtype, np.integer) or np.issubdtype(value.dtype, np.floating))
    )


def _shown(value: object) -> str:
    """A short repr of what a plugin returned (at most 60 characters)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def checked_mean(mechanism: object, y: np.ndarray, name: str) -> float:
    """``estimate_mean(y)`` as a float, or one sentence (``ParameterError``, field
    ``mechanism``) if it raises or is not a finite real number (``mean_problem``)."""
    try:
        value = mechanism.estimate_mean(y)  # type: ignore[attr-defined]
    except (Exception, SystemExit) as error:
        raise _fail(
            name, f"estimate_mean failed: {_why(error)}", rule="estimate_mean does not raise"
        ) from None
    problem = mean_problem(value)
    if problem is not None:
        raise _fail(
            name, f"estimate_mean {problem}", rule="estimate_mean returns a finite real number"
        )
    return float(value)


def _perturb(mechanism: object, x: np.ndarray, seed: int, name: str) -> object:
    """``perturb(x, default_rng(seed))``, or one sentence if it raises."""
    return _call_perturb(mechanism, x, np.random.default_rng(seed), name)


def _call_perturb(
    mechanism: object,
    x: np.ndarray,
    rng: np.random.Generator,
    name: str,
    *,
    show_batch: bool = True,
):
    """``perturb(x, rng)``, or one sentence naming the call's batch (``show_batch``; off
    where the caller names the batch itself) if it raises."""
    try:
        return mechanism.perturb(x, rng)  # type: ignore[attr-defined]
    except (Exception, SystemExit) as error:
        raise _fail(
            name,
            f"perturb failed on inputs in [0, 1]: {_why(error)}"
            f"{_batch_shown(x) if show_batch else ''}",
            rule="perturb does not raise on inputs in [0, 1]",
        ) from None


def _batch_shown(x: object) -> str:
    """`` (on a batch of 8 inputs from 0.75 to 0.75)``: which call raised, so that a user
    can repeat it (the audit's canary inputs are not the load-time grid; helper G's user
    trial, round 4: "failed on inputs in [0, 1]" named neither); ``""`` when ``x`` is not
    a non-empty real array."""
    try:
        arr = np.asarray(x, dtype=float)
        if arr.size == 0:
            return ""
        low, high = float(np.nanmin(arr)), float(np.nanmax(arr))
    except (TypeError, ValueError):
        return ""
    count = f"{arr.size:,} input" + ("s" if arr.size != 1 else "")
    if low == high:
        return f" (on a batch of {count}, all {low:.6g})"
    return f" (on a batch of {count} from {low:.6g} to {high:.6g})"


def contract_reports(
    mechanism: object, x: np.ndarray, rng: np.random.Generator, name: str
) -> np.ndarray:
    """``perturb(x, rng)`` through the load-time check (``check_outputs``: an ndarray of x's
    shape, finite real numbers, every one accepted by ``in_domain``): what ``ldpfleet bench
    mechanisms`` measures and ``ldpfleet audit`` observes, so neither scores reports the
    collector would refuse. One sentence (``ParameterError``) otherwise."""
    return check_outputs(mechanism, x, _call_perturb(mechanism, x, rng, name), name)


def _first_bad(out: np.ndarray) -> str:
    """`` (report i is v)`` for the first report that is not a finite number, or ``""``."""
    for i, value in enumerate(out.ravel()):
        try:
            ok = math.isfinite(float(value)) and not isinstance(value, str | bytes)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            shown = value.item() if isinstance(value, np.generic) else value
            return f" (report {i} is {shown!r})"
    return ""


def domain_mask(mechanism: object, y: np.ndarray, name: str) -> np.ndarray:
    """``in_domain(y)``: a numpy bool array of y's shape, or one sentence (``ParameterError``,
    field ``mechanism``). The ONE reading of ``in_domain``, at load time and on the
    collector: an int or float mask (converted to bool, it passed the load-time check) made
    the collector reject every report with ``~mask`` and the run hang, a list ended it with
    a traceback."""
    try:
        accepted = mechanism.in_domain(y)  # type: ignore[attr-defined]
    except (Exception, SystemExit) as error:
        raise _fail(
            name, f"in_domain failed: {_why(error)}", rule="in_domain does not raise"
        ) from None
    accepted = _bool_mask(accepted, y, name)
    span = stated_range(mechanism, name)
    if span is not None:  # a stated range bounds the domain, whatever in_domain says
        accepted = accepted & (y >= span[0]) & (y <= span[1])
    return accepted


def _bool_mask(accepted: object, y: np.ndarray, name: str) -> np.ndarray:
    """``in_domain``'s answer as a numpy bool array of y's shape, or one sentence."""
    if isinstance(accepted, bool | np.bool_):  # one bool for all: named by its shape below
        accepted = np.asarray(accepted)
    if not isinstance(accepted, np.ndarray) or accepted.dtype != np.bool_:
        kind = (
            f"dtype {accepted.dtype}"
            if isinstance(accepted, np.ndarray)
            else a_or_an(type(accepted).__name__)
        )
        raise _fail(
            name,
            f"in_domain returned {kind}, not a numpy bool array (one bool per report, "
            "e.g. (y >= low) & (y <= high))",
            rule="in_domain returns a numpy bool array",
        )
    if accepted.shape != y.shape:
        raise _fail(
            name,
            f"in_domain returned shape {accepted.shape} for reports of shape {y.shape} "
            "(one bool per report)",
            rule="in_domain returns one bool per report",
        )
    return accepted


def check_outputs(mechanism: object, x: np.ndarray, y: object, name: str) -> np.ndarray:
    """``y = perturb(x)`` has x's shape, is finite, lies in the stated range (if any) and is
    accepted by ``in_domain``."""
    out = checked_reports(x, y, name)
    span = stated_range(mechanism, name)
    if span is not None:
        outside = np.flatnonzero(~((out >= span[0]) & (out <= span[1])).ravel())
        if outside.size:
            i = int(outside[0])
            raise _fail(
                name,
                "perturb returned reports outside its stated range [output_low, output_high] "
                f"= [{span[0]:.6g}, {span[1]:.6g}] (report {i} is {float(out.ravel()[i])!r}, "
                f"{outside.size} of {out.size} are outside)",
                rule="perturb reports within its stated range [output_low, output_high]",
            )
    accepted = domain_mask(mechanism, out, name)
    if not np.all(accepted):
        bad = int(np.flatnonzero(~accepted.ravel())[0])
        raise _fail(
            name,
            f"in_domain rejects its own output {float(out.ravel()[bad])!r} of perturb",
            rule="in_domain accepts every output of perturb",
        )
    return out


def nonnegative_values(
    call: Callable[[], object],
    shape: tuple[int, ...],
    name: str,
    what: str,
    per: str,
    *,
    one_for_all: bool = False,
    where: tuple[str, np.ndarray] | None = None,
) -> np.ndarray:
    """An optional method's answer (``variance``, ``density``: ``call()``) as finite floats
    >= 0 of ``shape``, or one sentence (``ParameterError``, field ``mechanism``) naming
    ``what`` was called; with ``one_for_all`` a 0-d answer stands for every entry (a
    constant variance's natural answer). A negative or non-finite answer is named with its
    index and, given ``where`` (a label and the reports or inputs it answered for), that
    report's or input's value.
    A plugin's method raising ended a bench or an audit with a traceback."""
    try:
        values = np.asarray(call(), dtype=float)
    except Exception as error:  # a plugin may raise anything
        raise ParameterError(
            f"{name!r} {what} failed: {type(error).__name__}: {error}",
            field=FIELD,
            limit=f"{what} answers without raising",
            value=name,
        ) from None
    if one_for_all and values.shape == ():
        values = np.full(shape, float(values))
    either = " (or one for all)" if one_for_all else ""
    if values.shape != shape:
        raise ParameterError(
            f"{name!r} {what} must answer one finite value >= 0 per {per}{either}, "
            f"got shape {values.shape} for {math.prod(shape)} {per}s",
            field=FIELD,
            limit=f"one finite value >= 0 per {per}{either}; value is the shape",
            value=values.shape,
        )
    bad = np.flatnonzero(~(np.isfinite(values) & (values >= 0.0)).ravel())
    if bad.size:
        i = int(bad[0])
        at = f" for {per} {i}"
        if where is not None and where[1].size == values.size:
            at += f" ({where[0]} = {float(where[1].ravel()[i])!r})"
        raise ParameterError(
            f"{name!r} {what} answered {float(values.ravel()[i])!r}{at}: it must be a finite "
            f"value >= 0 ({bad.size} of {values.size} {per}s are not)",
            field=FIELD,
            limit=f"{what} answers a finite value >= 0",
            value=float(values.ravel()[i]),
        )
    return values


def _check_inputs_kept(x: np.ndarray, before: np.ndarray, name: str) -> None:
    """One sentence if ``perturb`` wrote into its input array (``x += noise``): the second
    call of the reproducibility check then saw other inputs and the plugin was named "not a
    function of its inputs and rng", sending its author after a global RNG."""
    changed = np.flatnonzero(x.ravel() != before.ravel())
    if changed.size:
        i = int(changed[0])
        raise _fail(
            name,
            f"perturb changed its input array in place (input {i} was {float(before[i])!r}, "
            f"is now {float(x.ravel()[i])!r}): leave x as given and work on a copy, e.g. "
            "x = np.array(x, dtype=float)",
            rule="perturb leaves its input array unchanged",
        )


def _rng_mark(rng: np.random.Generator) -> tuple[object, int]:
    """What drawing from ``rng`` changes: its bit generator's state, and the children its
    seed sequence has spawned (``rng.spawn``)."""
    spawned = getattr(rng.bit_generator.seed_seq, "n_children_spawned", 0)
    return rng.bit_generator.state, spawned


def _check_rng_used(rng: np.random.Generator, before: tuple[object, int], name: str) -> None:
    """One sentence if ``perturb`` drew nothing from ``rng`` on the probe sample. An eps-LDP
    mechanism whose reports are not one constant is random at EVERY input (pure LDP gives
    each input's report law the same support), so on 256 inputs it must draw. A plugin
    that builds a fixed-seed generator inside ``perturb`` passed the "seeded alike" check
    (both calls agree), yet every device drew the same noise, public to anyone who reads
    the plugin, and the audit (one call per world, i.i.d. across its runs) saw nothing."""
    if _rng_mark(rng) == before:
        raise _fail(
            name,
            "perturb drew no random number from its rng on 256 inputs in [0, 1]: it is "
            "deterministic (not differentially private) or draws its randomness elsewhere (a "
            "generator seeded inside perturb gives every device the same, public, noise); "
            "draw every random number from the rng argument (the mechanism contract)",
            rule="perturb draws its randomness from rng",
        )


def check_mechanism(
    mechanism: object, name: str, rng: np.random.Generator, *, randomised: bool = True
) -> None:
    """Run the mechanism on the probe sample: outputs and ``estimate_mean`` well formed,
    ``perturb`` drawing from ``rng`` (``randomised``; every mechanism but the central
    model's identity ``raw``) and a function of its inputs and ``rng`` (twice on generators
    seeded alike: the same reports; a global RNG, a clock or ``os.urandom`` breaks that)."""
    x = probe_inputs()
    seed = int(rng.integers(2**63))
    first = np.random.default_rng(seed)
    before = _rng_mark(first)
    out = check_outputs(mechanism, x, _call_perturb(mechanism, x, first, name), name)
    _check_inputs_kept(x, probe_inputs(), name)
    again = checked_reports(x, _perturb(mechanism, x, seed, name), name)
    if not np.array_equal(out, again):
        i = int(np.flatnonzero(out.ravel() != again.ravel())[0])
        raise _fail(
            name,
            "perturb is not a function of its inputs and rng: two calls on the same inputs "
            f"with generators seeded alike gave different reports (report {i}: "
            f"{float(out.ravel()[i])!r} and {float(again.ravel()[i])!r}); draw every random "
            "number from the rng argument (the mechanism contract), or a run cannot be "
            "reproduced from its seed",
            rule="perturb is a function of its inputs and rng",
        )
    if randomised:  # after the check above: a global RNG is named as such there
        _check_rng_used(first, before, name)
    for size in LOAD_BATCH_SIZES[1:]:
        _check_batch(mechanism, name, size, np.random.default_rng(seed + size))
    for k, value in enumerate(BOUND_BATCH_VALUES):
        _check_bound_batch(mechanism, name, value, np.random.default_rng(seed + 1 + k))
    checked_mean(mechanism, out, name)


# a device whose readings sit at a public bound (clipped to it) passes batches of one input
# value: perturb runs on BOUND_BATCH_SIZE readings all 0 and all 1 at load time (a size of
# LOAD_BATCH_SIZES, the sizes a load-time check calls perturb with)
BOUND_BATCH_VALUES = (0.0, 1.0)
BOUND_BATCH_SIZE = LOAD_BATCH_SIZES[-1]


def _check_bound_batch(
    mechanism: object, name: str, value: float, rng: np.random.Generator
) -> None:
    """``perturb`` on ``BOUND_BATCH_SIZE`` inputs all equal to ``value`` (0 or 1) through
    ``check_outputs``. A device's readings clipped to a bound give such batches: a plugin
    that drops a report when its batch's mean is above 0.95 (or divides by the batch's
    spread) passed the sample of 256 and the audit's mixed batches, and failed on every
    device of a fleet reading above its bounds (helper M, 2026-12-06)."""
    x = np.full(BOUND_BATCH_SIZE, value)
    try:
        check_outputs(mechanism, x, _call_perturb(mechanism, x, rng, name, show_batch=False), name)
    except ParameterError as error:
        raise ParameterError(
            f"{error.reason} (on a batch of {BOUND_BATCH_SIZE} inputs all {value:g}: a device "
            f"whose readings sit at a bound passes such batches; the sample of {PROBE_SIZE} "
            "passed)",
            field=error.field,
            limit=error.limit,
            value=error.value,
        ) from None


def _check_batch(mechanism: object, name: str, size: int, rng: np.random.Generator) -> None:
    """``perturb`` on a batch of ``size`` inputs through ``check_outputs``; a failure is the
    same sentence with the batch named. A device passes batches of any size (one reading
    when it streams live, a backlog after a pause): a plugin that squeezes its reports to
    shape () for one input, or privatises in chunks of 256 and leaves the rest NaN, passed
    the sample of 256 and failed on every device of the fleet."""
    x = np.array([0.5]) if size == 1 else np.linspace(0.0, 1.0, size)
    try:
        check_outputs(mechanism, x, _call_perturb(mechanism, x, rng, name, show_batch=False), name)
    except ParameterError as error:
        inputs = "input" if size == 1 else "inputs"
        raise ParameterError(
            f"{error.reason} (on a batch of {size} {inputs}: a device passes batches of any "
            f"size; the sample of {PROBE_SIZE} passed)",
            field=error.field,
            limit=error.limit,
            value=error.value,
        ) from None
