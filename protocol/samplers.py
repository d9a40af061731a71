"""Exact noise samplers driven by the injected generator — theory of operation.

Why. ``numpy``'s ``rng.laplace`` computes ``-b * log(u)`` in floating point. Mironov
("On Significance of the Least Significant Bits for Differential Privacy", CCS 2012) shows
that the set of doubles such a sampler can output around ``x`` depends on ``x``: the low
bits of ``x + noise`` reveal the input, so the floating-point Laplace mechanism is not
eps-DP however large the scale. The cure is to sample from a distribution whose support
does not depend on the input: integers (or a fixed grid), with exact arithmetic.

What. ``discrete_laplace(rng, scale)`` draws ``Z`` with ``P[Z = z] ∝ exp(-|z| / scale)``
on the integers (the two-sided geometric distribution; Ghosh, Roughgarden, Sundararajan
2009) by Algorithms 1 and 2 of Canonne, Kamath and Steinke ("The Discrete Gaussian for
Differential Privacy", NeurIPS 2020): ``Bernoulli(exp(-gamma))`` from Bernoulli draws of
rational probabilities, a geometric variable from those, and a sign. Every step is
integer arithmetic: a ``Bernoulli(num / den)`` is ``rng.integers(0, den) < num``, and
numpy's bounded integers are exactly uniform (rejection sampling, not floating-point
scaling). So for an integer input ``k``, ``k + discrete_laplace(rng, Δ / eps)`` is exactly
``eps``-DP for sensitivity ``Δ`` (integer): the output is an integer whose probability
ratio between inputs ``k`` and ``k'`` is at most ``exp(|k - k'| / scale)``.

``scale`` is taken as an exact rational ``t / s``: an int or a small ``Fraction`` as given,
a float (or a Fraction with a denominator of ``2**40`` or more) rounded UP to a multiple of
``2**-SCALE_BITS`` (more noise, never less, so the privacy claim survives the rounding).

``laplace_on_grid(rng, value, scale, grid)`` is the real-valued use: the input is rounded
to the grid ``grid * Z`` (``grid`` a power of two, so ``k * grid`` is an exact double for
``|k| < 2**53``) and ``grid * discrete_laplace(rng, scale / grid)`` is added: every output
is a grid point, whatever the input, and the ratio between two inputs is at most
``exp((|x - x'| + grid) / scale)`` (rounding moves each input by at most ``grid / 2``).
A caller protecting sensitivity ``Δ`` at ``eps`` therefore uses ``scale = (Δ + grid) /
eps`` (``grid_laplace_scale``, exact rational arithmetic) — or ``Δ / eps`` when the
ROUNDED inputs still differ by at most ``Δ``: integers, or any inputs confined to an
interval of length ``Δ`` whose ends are grid points (rounding is monotone and keeps them
inside; the Laplace stream mechanism's [0, 1] and DSR's [0, theta]).
This is the construction OpenDP uses for its float Laplace mechanism
(``make_laplace`` on float domains: discretise to ``2**k``, discrete Laplace on the
integers), in the spirit of Mironov's snapping mechanism (which clamps and rounds the
float output instead).

Choice: own sampler, OpenDP as reference. OpenDP's samplers (``opendp``, the field's
reference library) are exact too, but draw from the operating system's CSPRNG: they
cannot take the injected ``numpy.random.Generator``, so a seeded run would not be
reproducible (the same seed must give the same values on every transport and in separate
processes, DESIGN.md). So the samplers here take the generator's exact uniform integers
and do the rest in integer arithmetic; the tests compare their distribution with the
exact probability mass function and with OpenDP's sampler (tests/unit/test_samplers.py).
A seeded generator is of course not a cryptographic source: exactness removes the
floating-point leak, reproducibility is kept on purpose, and a deployment that needs
unpredictable noise seeds the generator from ``os.urandom`` (numpy's default).

Cost: two exact implementations of the same algorithm. Small requests (fewer than
``VECTOR_MIN`` values, e.g. one device's batch) run in pure Python on a pool of the
generator's 63-bit words (``_Bits``: uniform integers below n by rejection on
``bit_length(n - 1)`` bits), about 10-20 microseconds per value; large ones are vectorised
over the array (every draw loops until accepted, a small constant number of rounds), below
a microsecond per value. Both are exact; which one runs depends only on the size, so a
seed still determines every value.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np
from ldpfleet.protocol.errors import ParameterError

__all__ = [
    "SCALE_BITS",
    "bernoulli_exp",
    "discrete_laplace",
    "exact_scale",
    "grid_laplace_scale",
    "laplace_on_grid",
]

SCALE_BITS = 20  # a float scale is rounded up to a multiple of 2**-SCALE_BITS
GRID = 2.0**-20  # the default output grid of laplace_on_grid
_MAX_DEN = 2**62  # integer bounds stay within numpy's int64
VECTOR_MIN = 64  # requests of at least this many values use the vectorised sampler
_WORDS = 8  # 63-bit words drawn per refill of the bit pool
_HUGE = 2**55  # scales t / s with t or s this large use Python ints (the int64 path would overflow)


class _Bits:
    """Uniform random bits from the generator, consumed exactly (pure Python ints)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._pool = 0
        self._count = 0

    def take(self, k: int) -> int:
        """``k`` fresh uniform bits as an integer in ``[0, 2**k)``."""
        while self._count < k:
            for word in self._rng.integers(0, 2**63, size=_WORDS, dtype=np.int64).tolist():
                self._pool |= word << self._count
                self._count += 63
        out = self._pool & ((1 << k) - 1)
        self._pool >>= k
        self._count -= k
        return out

    def below(self, n: int) -> int:
        """Uniform in ``[0, n)`` by rejection (exact)."""
        k = (n - 1).bit_length()
        while True:
            x = self.take(k)
            if x < n:
                return x


def _bern_exp_scalar(bits: _Bits, num: int, den: int) -> bool:
    """``Bernoulli(exp(-num / den))`` for ``0 <= num <= den`` (CKS Alg. 1, one value)."""
    k = 1
    while bits.below(den * k) < num:
        k += 1
    return k % 2 == 1


def _discrete_laplace_scalar(bits: _Bits, t: int, s: int) -> int:
    """One discrete Laplace value of scale ``t / s`` (CKS Alg. 2, as ``discrete_laplace``)."""
    while True:
        u = bits.below(t)
        if not _bern_exp_scalar(bits, u, t):
            continue
        v = 0
        while _bern_exp_scalar(bits, 1, 1):
            v += 1
        y = (u + t * v) // s
        negative = bits.take(1)
        if negative and y == 0:
            continue
        return -y if negative else y


def exact_scale(scale: int | float | Fraction) -> Fraction:
    """``scale`` as an exact positive rational: ints and Fractions as given, a float rounded
    up to a multiple of ``2**-SCALE_BITS`` (never less noise than asked)."""
    if isinstance(scale, int | float | Fraction) and not isinstance(scale, bool):
        return _exact_scale_cached(scale)
    return _exact_scale(scale)


@lru_cache(maxsize=1024)
def _exact_scale_cached(scale: int | float | Fraction) -> Fraction:
    return _exact_scale(scale)


@lru_cache(maxsize=1024)
def _grid_ratio(scale: int | float | Fraction, grid: float) -> Fraction:
    return exact_scale(exact_scale(scale) / Fraction(grid))


def _exact_scale(scale: int | float | Fraction) -> Fraction:
    if isinstance(scale, bool) or not isinstance(scale, int | float | Fraction | np.number):
        raise ParameterError(f"must be a positive real number, got {scale!r}", field="scale")
    if isinstance(scale, Fraction):
        value = scale
        if value.denominator >= 2**40:
            value = Fraction(math.ceil(value * 2**SCALE_BITS), 2**SCALE_BITS)
    elif isinstance(scale, int | np.integer):
        value = Fraction(int(scale))
    else:
        f = float(scale)
        if not math.isfinite(f):
            raise ParameterError(f"must be finite, got {scale!r}", field="scale")
        value = Fraction(math.ceil(Fraction(f) * 2**SCALE_BITS), 2**SCALE_BITS)
    if value <= 0:
        raise ParameterError(f"must be > 0, got {scale!r}", field="scale")
    return value


def grid_laplace_scale(
    sensitivity: float, eps: float, grid: float = GRID, coordinates: int = 1
) -> Fraction:
    """``(sensitivity + coordinates * grid) / eps`` exactly (rounded up as ``exact_scale``
    does): the scale that keeps ``laplace_on_grid`` eps-DP for inputs that are not grid
    points. ``sensitivity`` is an l1 sensitivity over ``coordinates`` values, each of which
    rounding may move by up to ``grid`` more."""
    for name, value in (("sensitivity", sensitivity), ("eps", eps)):
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            raise ParameterError(f"must be a real number, got {value!r}", field=name)
        if not (math.isfinite(value) and value >= 0 and (name == "sensitivity" or value > 0)):
            raise ParameterError(f"out of range: {value!r}", field=name)
    g = _check_grid(grid)
    n = int(coordinates)
    if isinstance(coordinates, bool) or n != coordinates or n < 1:
        raise ParameterError(f"must be an integer >= 1, got {coordinates!r}", field="coordinates")
    return exact_scale((Fraction(float(sensitivity)) + n * Fraction(g)) / Fraction(float(eps)))


def _bernoulli_exp_le1(rng: np.random.Generator, num: np.ndarray, den: int) -> np.ndarray:
    """``Bernoulli(exp(-num / den))`` element-wise for ``0 <= num <= den`` (CKS Alg. 1:
    draw ``A_k ~ Bernoulli(gamma / k)`` for k = 1, 2, ... until one fails at K; return
    ``K`` odd)."""
    out = np.empty(num.shape, dtype=bool)
    active = np.arange(num.size)
    k = 1
    while active.size:
        if den * k >= _MAX_DEN:  # pragma: no cover - P[K > k] = gamma^k / k!, never here
            raise ParameterError("Bernoulli denominator overflow", field="scale")
        success = rng.integers(0, den * k, size=active.size) < num[active]
        out[active[~success]] = k % 2 == 1
        active = active[success]
        k += 1
    return out


def bernoulli_exp(
    rng: np.random.Generator, gamma: int | Fraction, size: int | None = None
) -> bool | np.ndarray:
    """Exact ``Bernoulli(exp(-gamma))`` for a rational ``gamma >= 0`` (CKS Alg. 1): one
    ``Bernoulli(exp(-1))`` per unit of ``gamma``, then one for the fractional part."""
    g = Fraction(gamma)
    if g < 0:
        raise ParameterError(f"must be >= 0, got {gamma!r}", field="gamma")
    n = 1 if size is None else int(size)
    out = np.ones(n, dtype=bool)
    whole = math.floor(g)
    for _ in range(whole):
        idx = np.flatnonzero(out)
        if not idx.size:
            break
        out[idx] = _bernoulli_exp_le1(rng, np.ones(idx.size, dtype=np.int64), 1)
    frac = g - whole
    idx = np.flatnonzero(out)
    if frac and idx.size:
        num = np.full(idx.size, frac.numerator, dtype=np.int64)
        out[idx] = _bernoulli_exp_le1(rng, num, frac.denominator)
    return bool(out[0]) if size is None else out


def discrete_laplace(
    rng: np.random.Generator, scale: int | float | Fraction, size: int | tuple | None = None
) -> int | np.ndarray:
    """Integers with ``P[Z = z] ∝ exp(-|z| / scale)``, exactly (CKS 2020, Alg. 2; module
    docstring). Returns an int for ``size=None``, else an ``int64`` array of that shape
    (an ``object`` array of Python ints for scales of ``2**55`` and more, which the
    vectorised int64 arithmetic cannot hold: those run the pure-Python path).

    With ``scale = t / s``: ``U ~ Uniform{0..t-1}`` accepted with probability
    ``exp(-U / t)``, ``V ~ Geometric(1 - exp(-1))``, ``X = U + t V`` (geometric with ratio
    ``exp(-1 / t)``), ``Y = floor(X / s)`` (ratio ``exp(-s / t)``), a fair sign, and
    ``(sign -, 0)`` rejected so that zero is not counted twice."""
    exact = exact_scale(scale)
    t, s = exact.numerator, exact.denominator
    shape = () if size is None else (size if isinstance(size, tuple) else (int(size),))
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    huge = t >= _HUGE or s >= _HUGE
    if n < VECTOR_MIN or huge:
        bits = _Bits(rng)
        values = [_discrete_laplace_scalar(bits, t, s) for _ in range(n)]
        if size is None:
            return values[0]
        return np.array(values, dtype=object if huge else np.int64).reshape(shape)
    out = np.zeros(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        m = pending.size
        u = rng.integers(0, t, size=m)
        keep = _bernoulli_exp_le1(rng, u, t)
        v = np.zeros(m, dtype=np.int64)
        going = np.flatnonzero(keep)
        while going.size:  # V: Bernoulli(exp(-1)) successes before the first failure
            more = _bernoulli_exp_le1(rng, np.ones(going.size, dtype=np.int64), 1)
            v[going[more]] += 1
            going = going[more]
        y = (u + t * v) // s
        negative = rng.integers(0, 2, size=m).astype(bool)
        accepted = keep & ~(negative & (y == 0))
        out[pending[accepted]] = np.where(negative[accepted], -y[accepted], y[accepted])
        pending = pending[~accepted]
    return int(out[0]) if size is None else out.reshape(shape)


def _check_grid(grid: float) -> float:
    g = float(grid) if isinstance(grid, int | float) and not isinstance(grid, bool) else 0.0
    if not (g > 0 and math.isfinite(g) and math.frexp(g)[0] == 0.5):
        raise ParameterError(f"must be a positive power of two, got {grid!r}", field="grid")
    return g


def laplace_on_grid(
    rng: np.random.Generator,
    value: float | np.ndarray,
    scale: int | float | Fraction,
    grid: float = GRID,
) -> float | np.ndarray:
    """``value`` rounded to the grid ``grid * Z`` plus ``grid * discrete_laplace(scale /
    grid)``: a grid point whatever the input, ``P ∝ exp(-|y - round(x)| / scale)``. For
    sensitivity ``Δ`` at ``eps`` use ``scale = (Δ + grid) / eps`` (module docstring).
    ``grid`` is a power of two; returns a float for a scalar ``value``."""
    g = _check_grid(grid)
    x = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(x)):
        raise ParameterError("must be finite", field="value")
    k = np.rint(x / g)  # x / g is exact (g a power of two); rint is exact on doubles
    if np.any(np.abs(k) >= 2.0**52):
        raise ParameterError(f"|value| / grid must stay below 2**52 (grid {g!r})", field="value")
    key = float(scale) if isinstance(scale, np.floating) else scale
    ratio = _grid_ratio(key, g) if isinstance(key, int | float | Fraction) else None
    if ratio is None:
        ratio = exact_scale(exact_scale(scale) / Fraction(g))
    z = discrete_laplace(rng, ratio, size=x.shape or None)
    # The exact output is the integer k + z (times g). Below 2**53 the double is exact; a
    # larger one is rounded to the nearest double, a deterministic function of the exact
    # output (post-processing), so the guarantee is unchanged.
    zz = np.asarray(z)
    if zz.dtype == np.int64:  # |k| < 2**52 and |z| < 2**62: no int64 overflow
        out = (k.astype(np.int64) + zz).astype(float) * g
    else:  # Python ints (huge scales)
        ints = [
            int(a) + int(b) for a, b in zip(k.ravel().tolist(), zz.ravel().tolist(), strict=True)
        ]
        out = np.array([_to_float(v) * g for v in ints], dtype=float).reshape(x.shape)
    return float(out) if out.ndim == 0 else out


def _to_float(v: int) -> float:
    """The nearest double (infinite beyond the double range): post-processing."""
    try:
        return float(v)
    except OverflowError:
        return math.copysign(math.inf, v)
