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
``bit_length(n - 1)`` bits; the words ``integers(0, 2**63)`` would return, read with
``random_raw`` where that is the same, ``_word_source``), about 10-20 microseconds per
value; large ones are vectorised over the array (every draw loops until accepted, a small
constant number of rounds), below a microsecond per value. Both are exact; which one runs
depends only on the size, so a seed still determines every value.
Coins for the one-bit and cell mechanisms. ``bernoulli_rational(rng, prob, n)`` is an
exact ``Bernoulli(prob)`` for a rational of any denominator (one bounded integer below
``2**62``; above, the uniform is compared with ``prob``'s binary expansion 62 bits at a
time). ``bernoulli_float(rng, x)`` is exact for doubles ``x`` (the leading zero bits, then
the 53-bit mantissa). ``rr_lie(rng, eps, n)`` is randomized response's lie coin
``Bernoulli(1 / (1 + e^eps))``, exactly, by rejection with ``bernoulli_exp`` (which takes
any rational ``gamma``, a float as its exact rational). ``exp_lower_bound(eps)`` is a
rational ``R <= e^eps`` (Square Wave's density ratio, protocol/sw.py).
``exponential_choice(rng, scores, rate)`` is the exponential mechanism's draw, ``P(k) ∝
exp(rate (s_k - max s))`` exactly (rejection: a uniform proposal accepted with the exact
``Bernoulli(exp(-gap))`` of its rational gap; protocol/exponential.py).

Negative binomial (Pólya) shares, for distributed-noise secure sums
(``negative_binomial``, ``geometric_ratio_bound``). ``NB(r, 1 - a)`` (failures before the
r-th success, ``P[X = x] = (r)_x / x! · (1 - a)^r a^x``, ``(r)_x`` the rising factorial)
is drawn exactly for a RATIONAL ratio ``a`` and a rational shape ``r``: ``r = q + f``,
``q`` an integer and ``0 <= f < 1``, as ``q`` geometric variables (``Bernoulli(a)``
successes before the first failure) plus one ``NB(f, 1 - a)``, which is drawn in two exact
steps:

1. ``X = 0`` with probability ``(1 - a)^f``, by the Bernoulli factory for ``p^λ``
   (``0 < λ < 1``) from ``p``-coins: for ``i = 1, 2, ...`` flip ``Bernoulli(p)`` (heads:
   "yes"), then ``Bernoulli(λ / i)`` (heads: "no"). Then ``P[yes] = p Σ_k (1-p)^k
   Π_(i<=k) (1 - λ/i) = p Σ_k (1-λ)_k / k! (1-p)^k = p · p^(λ-1) = p^λ`` (the binomial
   series ``Σ_k (c)_k / k! z^k = (1 - z)^(-c)``).
2. otherwise ``X >= 1`` with ``P ∝ c_x a^x``, ``c_x = (f)_x / x!``, by rejection from
   ``1 + Geometric`` (``P ∝ a^(x-1)``): accept with ``c_x / c_1 = Π_(j=1..x-1) (f + j) /
   (j + 1) <= 1``, one rational coin per factor.

Every coin is ``rng.integers(0, den) < num`` with integers (rational ``a = u / 2**bits``,
``λ = f``; or the same comparison on the bit pool of ``_Bits`` for requests expected to
take fewer than ``_NB_SCALAR_ROUNDS`` coin rounds in all, ``n / (1 - a)``: the size and
the public ratio decide the path, so a seed still fixes every value), so the law is exact.
``geometric_ratio_bound(gamma)`` gives the rational ``a`` for a mechanism that wants
``exp(-gamma)``: an upper bound ``u / 2**RATIO_BITS >= exp(-gamma)`` (a rigorous rational
Taylor bound, not libm), i.e. MORE noise: the two-sided geometric of ratio ``a`` with
sensitivity ``Δ`` is ``Δ ln(1/a)``-DP and ``Δ ln(1/a) <= Δ gamma``, so a claim made for
``gamma`` holds (the difference to ``exp(-gamma)`` is below ``2**-RATIO_BITS``). Cost:
``O(1 / (1 - a))`` coin rounds per value (the geometric
and the factory's loop), vectorised over the request.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache, partial

import numpy as np
from ldpfleet.protocol.errors import ParameterError

__all__ = [
    "SCALE_BITS",
    "bernoulli_exp",
    "bernoulli_float",
    "bernoulli_rational",
    "discrete_laplace",
    "exact_scale",
    "exp_lower_bound",
    "exponential_choice",
    "geometric",
    "geometric_ratio_bound",
    "grid_laplace_scale",
    "laplace_on_grid",
    "negative_binomial",
    "rr_lie",
    "rr_lie_drawn",
    "rr_lie_one",
    "rr_lie_parts",
]

SCALE_BITS = 20  # a float scale is rounded up to a multiple of 2**-SCALE_BITS
GRID = 2.0**-20  # the default output grid of laplace_on_grid
_MAX_DEN = 2**62  # integer bounds stay within numpy's int64
RATIO_BITS = 30  # geometric_ratio_bound's grid: a = u / 2**RATIO_BITS
_NB_SCALAR_ROUNDS = 512  # negative_binomial: bit-pool path below n / (1 - a) expected rounds
_BLOCK = 16  # coin rounds drawn per generator call in the negative binomial sampler
VECTOR_MIN = 64  # requests of at least this many values use the vectorised sampler
_WORDS = 8  # 63-bit words drawn per refill of the bit pool
_FACTORY_ROUNDS_CACHED = 8  # _nb_scalar_values: Bernoulli-factory rounds whose constants are kept
_GAPS_CACHED_MAX = 64  # exponential_choice: score vectors up to this size keep their gaps
_HUGE = 2**55  # scales t / s with t or s this large use Python ints (the int64 path would overflow)


# bit generators whose raw output (``random_raw``) is the 64-bit word ``integers`` reads
# (MT19937's raw output is a 32-bit word: not listed)
_RAW_IS_UINT64 = (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)


def _word_source(rng: np.random.Generator):
    """What ``_Bits`` refills from: ``(draw, shift)``, ``draw()`` giving ``_WORDS`` words (an
    integer array; ``_Bits`` reads them as Python ints) whose uniform 63-bit values are
    ``word >> shift``.

    ``rng.integers(0, 2**63, size, dtype=int64)`` takes, per value, one raw 64-bit word
    ``r`` of the bit generator and returns ``(r * 2**63) >> 64 = r >> 1`` (Lemire's bounded
    integers; a range of ``2**63`` never rejects), so for a ``numpy.random.Generator`` on
    one of ``_RAW_IS_UINT64`` the same values are ``random_raw(size) >> 1``, with the same
    generator state after: identical draws at a fraction of the cost (~2 us instead of
    ~20 for 8 words; tests/unit/test_samplers_words.py pins the identity). Anything else
    (another bit generator, a stub) is asked through ``integers``."""
    global _last_word_source
    if type(rng) is np.random.Generator:
        last = _last_word_source  # one read: (generator, source), consistent across threads
        if last[0] is rng:
            return last[1]
        bit_generator = rng.bit_generator
        if type(bit_generator) in _RAW_IS_UINT64:
            source = partial(bit_generator.random_raw, _WORDS), 1
        else:
            source = partial(rng.integers, 0, 2**63, size=_WORDS, dtype=np.int64), 0
        # a generator's bit generator is fixed for its life: the source of the last one
        # asked is kept for the next call (a device draws all its shares from one)
        _last_word_source = (rng, source)
        return source
    return partial(rng.integers, 0, 2**63, size=_WORDS, dtype=np.int64), 0


_last_word_source: tuple = (None, None)


class _Bits:
    """Uniform random bits from the generator, consumed exactly (pure Python ints)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._words, self._shift = _word_source(rng)
        self._pool = 0
        self._count = 0
        # words drawn but not yet in the pool, the next one last: the pool takes a word
        # only when it runs short (the generator is asked for _WORDS more only when none
        # is left), so the bits are those of all words appended at once, at the cost of
        # the bits actually used
        self._left: list[int] = []

    def take(self, k: int) -> int:
        """``k`` fresh uniform bits as an integer in ``[0, 2**k)``."""
        pool, count = self._pool, self._count
        if count < k:
            left, shift = self._left, self._shift
            while count < k:
                if not left:
                    left = self._words().tolist()[::-1]
                pool |= (left.pop() >> shift) << count
                count += 63
            self._left = left
        self._pool, self._count = pool >> k, count - k
        return pool & ((1 << k) - 1)

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
        raise ParameterError(
            f"must be a positive real number, got {scale!r}",
            field="scale",
            limit="a positive real number",
            value=scale,
        )
    if isinstance(scale, Fraction):
        value = scale
        if value.denominator >= 2**40:
            value = Fraction(math.ceil(value * 2**SCALE_BITS), 2**SCALE_BITS)
    elif isinstance(scale, int | np.integer):
        value = Fraction(int(scale))
    else:
        f = float(scale)
        if not math.isfinite(f):
            raise ParameterError(
                f"must be finite, got {scale!r}", field="scale", limit="finite", value=scale
            )
        value = Fraction(math.ceil(Fraction(f) * 2**SCALE_BITS), 2**SCALE_BITS)
    if value <= 0:
        raise ParameterError(f"must be > 0, got {scale!r}", field="scale", limit="> 0", value=scale)
    return value


def grid_laplace_scale(
    sensitivity: float, eps: float, grid: float = GRID, coordinates: int = 1
) -> Fraction:
    """``(sensitivity + coordinates * grid) / eps`` exactly (rounded up as ``exact_scale``
    does): the scale that keeps ``laplace_on_grid`` eps-DP for inputs that are not grid
    points. ``sensitivity`` is an l1 sensitivity over ``coordinates`` values, each of which
    rounding may move by up to ``grid`` more."""
    if (
        type(sensitivity) in _PLAIN_REALS
        and type(eps) in _PLAIN_REALS
        and type(grid) in _PLAIN_REALS
        and type(coordinates) is int
    ):  # a release's call: the same Fraction, remembered per arguments (typed: 1 is not
        # True nor 1.0; errors are not cached)
        return _grid_laplace_scale_cached(sensitivity, eps, grid, coordinates)
    return _grid_laplace_scale(sensitivity, eps, grid, coordinates)


def _grid_laplace_scale(sensitivity, eps, grid, coordinates) -> Fraction:
    for name, value in (("sensitivity", sensitivity), ("eps", eps)):
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            raise ParameterError(
                f"must be a real number, got {value!r}",
                field=name,
                limit="a real number",
                value=value,
            )
        if not (math.isfinite(value) and value >= 0 and (name == "sensitivity" or value > 0)):
            raise ParameterError(
                f"out of range: {value!r}",
                field=name,
                limit="finite and >= 0 (> 0 for eps)",
                value=value,
            )
    g = _check_grid(grid)
    n = int(coordinates)
    if isinstance(coordinates, bool) or n != coordinates or n < 1:
        raise ParameterError(
            f"must be an integer >= 1, got {coordinates!r}",
            field="coordinates",
            limit="an integer >= 1",
            value=coordinates,
        )
    return exact_scale((Fraction(float(sensitivity)) + n * Fraction(g)) / Fraction(float(eps)))


_PLAIN_REALS = (float, int)
# the gcdp releases asked it once per run with the same arguments (~5 % of the gcdp and
# gau-dp audits: Fraction arithmetic; helper A, 2026-12-07 evening)
_grid_laplace_scale_cached = lru_cache(maxsize=1024, typed=True)(_grid_laplace_scale)


def _bernoulli_exp_le1(rng: np.random.Generator, num: np.ndarray, den: int) -> np.ndarray:
    """``Bernoulli(exp(-num / den))`` element-wise for ``0 <= num <= den`` (CKS Alg. 1:
    draw ``A_k ~ Bernoulli(gamma / k)`` for k = 1, 2, ... until one fails at K; return
    ``K`` odd)."""
    out = np.empty(num.shape, dtype=bool)
    active = np.arange(num.size)
    k = 1
    while active.size:
        if den * k >= _MAX_DEN:  # pragma: no cover - P[K > k] = gamma^k / k!, never here
            raise ParameterError(
                "Bernoulli denominator overflow",
                field="scale",
                limit="a Bernoulli denominator < _MAX_DEN",
                value=den * k,
            )
        success = rng.integers(0, den * k, size=active.size) < num[active]
        out[active[~success]] = k % 2 == 1
        active = active[success]
        k += 1
    return out


_CHUNK_BITS = 62  # bernoulli_rational compares the expansion 62 bits at a time


def bernoulli_rational(rng: np.random.Generator, prob: Fraction, size: int) -> np.ndarray:
    """``size`` exact ``Bernoulli(prob)`` coins for a rational ``0 <= prob <= 1`` of ANY
    denominator (bool array). Below ``2**62`` one bounded integer per coin; above, the
    uniform ``U`` is drawn 62 bits at a time and compared with ``prob``'s binary expansion
    (computed exactly with Python ints): heads iff ``U < prob``, decided at the first chunk
    that differs (another chunk with probability ``2**-62``)."""
    num, den = prob.numerator, prob.denominator
    if num <= 0 or num >= den:
        return np.full(size, num > 0, dtype=bool)
    if den < _MAX_DEN:
        return rng.integers(0, den, size=size) < num
    out = np.zeros(size, dtype=bool)
    active = np.arange(size)
    rem = num  # prob = rem / den, shifted 62 bits per round
    while active.size:
        chunk, rem = divmod(rem << _CHUNK_BITS, den)
        u = rng.integers(0, 2**_CHUNK_BITS, size=active.size)
        out[active[u < chunk]] = True
        active = active[u == chunk]
    return out


def bernoulli_float(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """Exact ``Bernoulli(x)`` element-wise for doubles ``x`` in ``[0, 1]`` (bool array of
    ``x``'s shape). A double ``0 < x < 1`` is ``M 2**-(z + 53)`` (``M < 2**53``, ``z >= 0``
    from ``frexp``): ``U < x`` iff the uniform's first ``z`` bits are 0 (probability
    ``2**-z``) and its next 53 bits, as an integer, are below ``M``."""
    xx = np.asarray(x, dtype=float)
    if not np.all((xx >= 0.0) & (xx <= 1.0)):
        raise ParameterError(
            "must be probabilities in [0, 1]",
            field="x",
            limit="probabilities in [0, 1] (value is the first entry outside)",
            value=float(xx.reshape(-1)[np.argmax(~((xx >= 0.0) & (xx <= 1.0)).reshape(-1))]),
        )
    flat = xx.ravel()
    out = flat >= 1.0
    idx = np.flatnonzero((flat > 0.0) & (flat < 1.0))
    frac, expo = np.frexp(flat[idx])  # x = frac 2**expo, 0.5 <= frac < 1, expo <= 0
    mant = np.ldexp(frac, 53).astype(np.int64)  # exact: a double has <= 53 bits
    zeros_left = -expo.astype(np.int64)
    ok = np.ones(idx.size, dtype=bool)
    todo = np.flatnonzero(zeros_left > 0)
    while todo.size:  # the first z bits, 62 at a time: all must be 0
        take = np.minimum(zeros_left[todo], _CHUNK_BITS)
        ok[todo] = rng.integers(0, np.left_shift(1, take)) == 0
        zeros_left[todo] -= take
        todo = todo[ok[todo] & (zeros_left[todo] > 0)]
    out[idx] = ok & (rng.integers(0, 2**53, size=idx.size) < mant)
    return out.reshape(xx.shape)


def _bernoulli_exp_frac(rng: np.random.Generator, frac: Fraction, n: int) -> np.ndarray:
    """``Bernoulli(exp(-frac))`` for a rational ``0 <= frac < 1`` of any denominator (CKS
    Alg. 1 with the coins ``Bernoulli(frac / k)`` drawn by ``bernoulli_rational``)."""
    if frac.denominator * 512 < _MAX_DEN:  # the int64 path: P[K > 512] = frac^512 / 512!
        num = np.full(n, frac.numerator, dtype=np.int64)
        return _bernoulli_exp_le1(rng, num, frac.denominator)
    out = np.empty(n, dtype=bool)
    active = np.arange(n)
    k = 1
    while active.size:
        success = bernoulli_rational(rng, frac / k, active.size)
        out[active[~success]] = k % 2 == 1
        active = active[success]
        k += 1
    return out


def bernoulli_exp(
    rng: np.random.Generator, gamma: int | float | Fraction, size: int | None = None
) -> bool | np.ndarray:
    """Exact ``Bernoulli(exp(-gamma))`` for a rational ``gamma >= 0`` (a float is taken as
    its exact rational; CKS Alg. 1): one ``Bernoulli(exp(-1))`` per unit of ``gamma``, then
    one for the fractional part (any denominator)."""
    g = Fraction(gamma)
    if g < 0:
        raise ParameterError(
            f"must be >= 0, got {gamma!r}", field="gamma", limit=">= 0", value=gamma
        )
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
        out[idx] = _bernoulli_exp_frac(rng, frac, idx.size)
    return bool(out[0]) if size is None else out


def rr_lie(rng: np.random.Generator, eps: float | Fraction, size: int) -> np.ndarray:
    """``size`` exact ``Bernoulli(1 / (1 + e^eps))`` coins (randomized response's "lie"),
    for the exact rational of ``eps >= 0``. Rejection: each round proposes "truth" with
    probability 1/2 (accepted) or "lie" (accepted with an exact ``Bernoulli(exp(-eps))``,
    else a new round), so ``P(lie) = (e^-eps / 2) / (1/2 + e^-eps / 2) = 1 / (1 + e^eps)``
    exactly, in at most 2 rounds on average."""
    g = Fraction(eps)
    if g < 0:
        raise ParameterError(f"must be >= 0, got {eps!r}", field="eps", limit=">= 0", value=eps)
    out = np.zeros(size, dtype=bool)
    pending = np.arange(size)
    while pending.size:
        lie_side = pending[rng.integers(0, 2, size=pending.size) == 1]
        accepted = bernoulli_exp(rng, g, lie_side.size)
        out[lie_side[accepted]] = True
        pending = lie_side[~accepted]
    return out


def _bernoulli_exp_bits(bits: _Bits, gamma: Fraction) -> bool:
    """One exact ``Bernoulli(exp(-gamma))`` on the bit pool (``bernoulli_exp``'s steps)."""
    whole = math.floor(gamma)
    for _ in range(whole):
        if not _bern_exp_scalar(bits, 1, 1):
            return False
    frac = gamma - whole
    return _bern_exp_scalar(bits, frac.numerator, frac.denominator) if frac else True


def rr_lie_one(rng: np.random.Generator, eps: float | Fraction) -> bool:
    """One ``rr_lie`` coin (the same rejection, the same law) in pure Python on the bit pool
    of the generator's 63-bit words (``_Bits``): a few microseconds, where the array path
    costs tens for one value. Its draws differ from ``rr_lie(rng, eps, 1)``'s. A caller
    drawing many coins of one ``eps`` prepares it once (``rr_lie_parts``, ``rr_lie_drawn``:
    the same draws)."""
    return rr_lie_drawn(rng, rr_lie_parts(eps))


def rr_lie_parts(eps: float | Fraction) -> tuple[int, int, int]:
    """``eps >= 0`` prepared for ``rr_lie_drawn``: ``(whole, num, den)``, its exact
    rational's integer part and fractional part ``num / den`` (``ParameterError`` naming
    ``eps`` when negative)."""
    g = Fraction(eps)
    if g < 0:
        raise ParameterError(f"must be >= 0, got {eps!r}", field="eps", limit=">= 0", value=eps)
    whole = math.floor(g)
    frac = g - whole
    return whole, frac.numerator, frac.denominator


def rr_lie_drawn(rng: np.random.Generator, parts: tuple[int, int, int]) -> bool:
    """One ``rr_lie_one`` coin for ``parts = rr_lie_parts(eps)``: the same draws as
    ``rr_lie_one(rng, eps)`` without converting ``eps`` again. Propose "truth" (bit 0,
    accepted) or "lie" (accepted with ``Bernoulli(exp(-eps))``: ``whole`` coins
    ``Bernoulli(exp(-1))`` then ``Bernoulli(exp(-num / den))``, as ``bernoulli_exp``)."""
    # ``_Bits`` (take, below) and ``_bern_exp_scalar`` inlined on local variables, as in
    # ``_nb_scalar_values``: the same bits read in the same order, the same words drawn
    # (the pool of one call is dropped at its end, as the ``_Bits`` of before was; its
    # frozen copy: tests/unit/test_A_rr_coin_same_draws.py)
    whole, num, den = parts
    coins = ((1, 1),) * whole + (((num, den),) if num else ())
    words, shift = _word_source(rng)
    pool = count = 0
    left: list[int] = []
    while True:
        if not count:  # take(1)
            if not left:
                left = words().tolist()[::-1]
            pool |= left.pop() >> shift
            count = 63
        proposed_lie = pool & 1
        pool >>= 1
        count -= 1
        if not proposed_lie:
            return False  # proposed truth: accepted
        for coin_num, coin_den in coins:  # Bernoulli(exp(-coin_num / coin_den)), CKS Alg. 1
            k = 1
            while True:
                m = coin_den * k
                kb = (m - 1).bit_length()
                while True:  # below(m)
                    while count < kb:
                        if not left:
                            left = words().tolist()[::-1]
                        pool |= (left.pop() >> shift) << count
                        count += 63
                    x = pool & ((1 << kb) - 1)
                    pool >>= kb
                    count -= kb
                    if x < m:
                        break
                if x >= coin_num:
                    break
                k += 1
            if not k % 2:
                break  # this coin failed: propose again
        else:
            return True  # proposed lie: accepted with Bernoulli(exp(-eps))


def exponential_choice(rng: np.random.Generator, scores: np.ndarray, rate: Fraction) -> int:
    """An index ``k`` with ``P(k) ∝ exp(rate (scores[k] - max(scores)))``, exactly, for a
    rational ``rate >= 0`` and finite double scores (each taken as its exact rational).

    Rejection on the bit pool (``_Bits``): propose ``k`` uniformly, accept it with the exact
    ``Bernoulli(exp(-gap_k))``, ``gap_k = rate (max - scores[k]) >= 0`` (CKS Alg. 1 on the
    rational, ``_bernoulli_exp_bits``), else propose again. A round accepts ``k`` with
    probability ``exp(-gap_k) / n``, so the output law is ``exp(-gap_k) / sum_j exp(-gap_j)``
    whatever the number of rounds; the best candidate (gap 0) is always accepted, so a
    round succeeds with probability at least ``1 / n`` (expected rounds ``n / sum_j
    exp(-gap_j) <= n``). Every candidate has a positive probability, however small (no
    underflow: the gaps are exact rationals)."""
    array = np.asarray(scores, dtype=float).ravel()
    if array.size == 0 or not np.isfinite(array).all():  # the method: np.all's wrapper skipped
        raise ParameterError(
            "must be a non-empty array of finite numbers",
            field="scores",
            limit="a non-empty array of finite numbers (value: size if empty, else 1st non-finite)",
            value=array.size if array.size == 0 else float(array[~np.isfinite(array)][0]),
        )
    r = rate if type(rate) is Fraction else Fraction(rate)  # Fraction(a Fraction) is a copy
    if r < 0:
        raise ParameterError(f"must be >= 0, got {rate!r}", field="rate", limit=">= 0", value=rate)
    values = array.tolist()
    if len(values) <= _GAPS_CACHED_MAX:  # NDOE, GCDP's tau: few candidates, many draws
        gap_of = _exponential_gaps(tuple(values), r).__getitem__
    else:
        top = Fraction(max(values))
        gap_of = lambda k: _gap_parts(r * (top - Fraction(values[k])))  # noqa: E731
    n = len(values)
    bits = _Bits(rng)
    while True:
        k = bits.below(n)
        if _bern_exp_parts(bits, *gap_of(k)):
            return k


def _gap_parts(gap: Fraction) -> tuple[int, int, int]:
    """A gap ``>= 0`` as ``(whole, num, den)``: its integer part and fractional part."""
    whole = math.floor(gap)
    frac = gap - whole
    return whole, frac.numerator, frac.denominator


@lru_cache(maxsize=1024)
def _exponential_gaps(
    values: tuple[float, ...], rate: Fraction
) -> tuple[tuple[int, int, int], ...]:
    """Each candidate's exact gap ``rate (max - value)`` as ``_gap_parts``, computed once
    per score vector and rate: ``exponential_choice`` draws the same coins as with the gap
    recomputed per proposal (tests/unit/test_exponential_choice_same_draws.py), without
    the ``Fraction`` arithmetic on every round."""
    top = Fraction(max(values))
    return tuple(_gap_parts(rate * (top - Fraction(value))) for value in values)


def _bern_exp_parts(bits: _Bits, whole: int, num: int, den: int) -> bool:
    """``_bernoulli_exp_bits`` for a gap prepared as ``(whole, num, den)``; a zero gap is
    accepted without a coin (as ``exponential_choice`` always did)."""
    for _ in range(whole):
        if not _bern_exp_scalar(bits, 1, 1):
            return False
    return _bern_exp_scalar(bits, num, den) if num else True


@lru_cache(maxsize=256)
def exp_lower_bound(eps: float, bits: int = 60) -> Fraction:
    """A rational ``R <= e^eps`` (``eps >= 0``, a float taken exactly): ``1 /
    _exp_neg_upper(eps)`` (a rigorous bound, not libm) rounded DOWN to ``bits`` significant
    bits of ``R - 1`` (so ``R - 1``, what a small ``eps`` leaves of the ratio, keeps a
    relative precision of ``2**-(bits - 2)``). A mechanism whose probability ratio is ``R``
    has privacy loss ``ln R <= eps``."""
    if isinstance(eps, bool) or not isinstance(eps, int | float | Fraction):
        raise ParameterError(
            f"must be a real number >= 0, got {eps!r}",
            field="eps",
            limit="a real number >= 0",
            value=eps,
        )
    if not (math.isfinite(eps) and eps >= 0):
        raise ParameterError(
            f"must be finite and >= 0, got {eps!r}", field="eps", limit="finite and >= 0", value=eps
        )
    excess = 1 / _exp_neg_upper(Fraction(eps)) - 1  # <= e^eps - 1
    if excess <= 0:
        return Fraction(1)
    shift = bits - excess.numerator.bit_length() + excess.denominator.bit_length()
    if shift >= 0:
        return 1 + Fraction((excess.numerator << shift) // excess.denominator, 1 << shift)
    return 1 + Fraction(excess.numerator // (excess.denominator << -shift) << -shift)


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
        raise ParameterError(
            f"must be a positive power of two, got {grid!r}",
            field="grid",
            limit="a positive power of two",
            value=grid,
        )
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
        raise ParameterError(
            "must be finite",
            field="value",
            limit="finite (value is the first non-finite entry)",
            value=float(x.reshape(-1)[np.argmax(~np.isfinite(x).reshape(-1))]),
        )
    k = np.rint(x / g)  # x / g is exact (g a power of two); rint is exact on doubles
    if np.any(np.abs(k) >= 2.0**52):
        raise ParameterError(
            f"|value| / grid must stay below 2**52 (grid {g!r})",
            field="value",
            limit=f"|value| / grid < 2**52 (grid {g!r}; value is the first entry beyond)",
            value=float(x.reshape(-1)[np.argmax(np.abs(k).reshape(-1) >= 2.0**52)]),
        )
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


# --- negative binomial (Pólya) shares: module docstring, "Negative binomial" ---------------


def _exp_neg_upper(gamma: Fraction) -> Fraction:
    """A rational upper bound of ``exp(-gamma)`` for ``gamma >= 0``, within ``2**-60``:
    ``exp(-gamma) = exp(-gamma / N)^N`` with ``gamma / N <= 1``, each factor bounded by the
    Taylor partial sum ending on a positive term (an alternating series with decreasing
    terms: its partial sums ending on a positive term lie above the limit)."""
    steps = max(1, math.ceil(gamma))
    x = gamma / steps
    term, total = Fraction(1), Fraction(1)
    for k in range(1, 25):  # ends on k = 24 (even: a positive term); remainder < 1/25!
        term = -term * x / k
        total += term
    return total**steps


@lru_cache(maxsize=256)
def geometric_ratio_bound(gamma: int | float | Fraction, bits: int = RATIO_BITS) -> Fraction:
    """The ratio ``a = u / 2**bits >= exp(-gamma)`` (the smallest such ``u``; module
    docstring): a geometric mechanism that wants ``exp(-gamma)`` and uses ``a`` adds more
    noise, never less. ``gamma`` > 0 (a float is taken exactly); ``a < 1`` is required."""
    if isinstance(gamma, bool) or not isinstance(gamma, int | float | Fraction):
        raise ParameterError(
            f"must be a positive real number, got {gamma!r}",
            field="gamma",
            limit="a positive real number",
            value=gamma,
        )
    if isinstance(gamma, float) and not math.isfinite(gamma):
        raise ParameterError(
            f"must be finite, got {gamma!r}", field="gamma", limit="finite", value=gamma
        )
    g = Fraction(gamma)
    if g <= 0:
        raise ParameterError(f"must be > 0, got {gamma!r}", field="gamma", limit="> 0", value=gamma)
    # the bound's own excess over exp(-g) is < 2**-60; rounding up keeps it an upper bound
    u = math.ceil(_exp_neg_upper(g) * 2**bits)
    if u >= 2**bits:
        raise ParameterError(
            f"exp(-gamma) rounds to 1 on a 2**-{bits} grid (gamma {gamma!r} too small)",
            field="gamma",
            limit=f"exp(-gamma) < 1 on a 2**-{bits} grid",
            value=gamma,
        )
    return Fraction(u, 2**bits)


def _ratio(value: Fraction, field: str) -> tuple[int, int]:
    """``value`` as (numerator, denominator) of a rational in ``(0, 1)``."""
    if isinstance(value, bool) or not isinstance(value, int | Fraction):
        raise ParameterError(
            f"must be an exact rational (Fraction), got {value!r}",
            field=field,
            limit="an exact rational (Fraction)",
            value=value,
        )
    v = Fraction(value)
    if not 0 < v < 1 or v.denominator >= _MAX_DEN:
        raise ParameterError(
            f"must be a rational in (0, 1), got {value!r}",
            field=field,
            limit="a rational in (0, 1)",
            value=value,
        )
    return v.numerator, v.denominator


def _coins(rng: np.random.Generator, num: int | np.ndarray, den: int | np.ndarray, n: int):
    """``n`` exact ``Bernoulli(num / den)`` coins (bool array)."""
    return rng.integers(0, den, size=n) < num


def _geometric(rng: np.random.Generator, u: int, v: int, n: int) -> np.ndarray:
    """``Bernoulli(u / v)`` successes before the first failure, ``n`` values (int64).
    Coins are drawn ``_BLOCK`` per value at a time (one generator call per block); coins
    after a value's first failure are unused, so the law is that of one coin at a time."""
    out = np.zeros(n, dtype=np.int64)
    active = np.arange(n)
    while active.size:
        success = rng.integers(0, v, size=(active.size, _BLOCK)) < u
        failed = ~success
        done = failed.any(axis=1)
        first = np.argmax(failed, axis=1)  # the first failure's index (if any)
        out[active] += np.where(done, first, _BLOCK)
        active = active[~done]
    return out


def _nb_fraction(rng: np.random.Generator, f: Fraction, u: int, v: int, n: int) -> np.ndarray:
    """``NB(f, 1 - u/v)`` for ``0 < f < 1`` (module docstring, steps 1 and 2)."""
    fn, fd = f.numerator, f.denominator
    # step 1: "X = 0" with probability (1 - a)^f (Bernoulli factory for p^λ, p = 1 - a).
    # Round i's two coins as one draw w < v·fd·i: "yes" (p heads) if w < (v-u)·fd·i, "no"
    # (p tails, then λ/i heads) if the next u·fn values, else go on; _BLOCK rounds a call.
    zero = np.zeros(n, dtype=bool)
    active = np.arange(n)
    i = 1
    while active.size:
        rounds = np.arange(i, i + _BLOCK, dtype=np.int64)
        if v * fd * int(rounds[-1]) >= _MAX_DEN:  # pragma: no cover - P ~ a^(2**62 / v fd)
            raise ParameterError(
                "Bernoulli factory denominator overflow",
                field="shape",
                limit="a Bernoulli factory denominator < _MAX_DEN",
                value=v * fd * int(rounds[-1]),
            )
        w = rng.integers(0, v * fd * rounds, size=(active.size, _BLOCK))
        yes_below = (v - u) * fd * rounds
        decided = w < yes_below + u * fn
        done = decided.any(axis=1)
        first = np.argmax(decided, axis=1)
        hit = active[done]
        row = np.flatnonzero(done)
        zero[hit] = w[row, first[row]] < yes_below[first[row]]
        active = active[~done]
        i += _BLOCK
    out = np.zeros(n, dtype=np.int64)
    pending = np.flatnonzero(~zero)
    # step 2: X >= 1, P ∝ c_x a^x, by rejection from 1 + Geometric(1 - a)
    while pending.size:
        x = 1 + _geometric(rng, u, v, pending.size)
        width = int(x.max()) - 1  # coin j: Bernoulli((f + j) / (j + 1)), j = 1 .. x - 1
        if width:
            j = np.arange(1, width + 1, dtype=np.int64)
            ok = rng.integers(0, (j + 1) * fd, size=(pending.size, width)) < fn + j * fd
            unused = j[None, :] > (x - 1)[:, None]  # coins past a value's x - 1 count for nothing
            accept = np.all(ok | unused, axis=1)
        else:
            accept = np.ones(pending.size, dtype=bool)
        out[pending[accept]] = x[accept]
        pending = pending[~accept]
    return out


def _nb_scalar_values(
    bits: _Bits, n: int, whole: int, fn: int, fd: int, u: int, v: int
) -> list[int]:
    """``n`` values of ``NB(whole + fn/fd, 1 - u/v)`` on the bit pool: ``_geometric`` and
    ``_nb_fraction`` one coin at a time (the same steps, the same law), each coin
    ``bits.below(den) < num``; the fraction's step 2 (X >= 1) in ``_nb_positive_bits``.

    ``_Bits.take`` and ``below`` are inlined on local variables (the method calls were
    most of the cost of a Pólya share), with the same bits read in the same order and the
    same pool and generator state after as the one-value-per-call version it replaced
    (its frozen copy: tests/unit/test_C_nb_scalar_same_draws.py). Each inlined
    ``below(m)``: take ``bit_length(m - 1)`` bits from the pool, refilled one word at a
    time as ``take`` does, again while the value is ``>= m``. Step 1 stays here: a Pólya
    share (``NB(1/m)``) passes it for every value and rarely reaches step 2, and a call
    per value cost ~5% of it (helper S2, 2026-12-06)."""
    pool, count, left = bits._pool, bits._count, bits._left
    words, shift = bits._words, bits._shift
    kv = (v - 1).bit_length()
    mask_v = (1 << kv) - 1
    rounds = list(_factory_rounds(fn, fd, u, v)) if fn else []  # round i's constants, i >= 1
    values = []
    for _ in range(n):
        x = 0
        for _ in range(whole):  # geometric: Bernoulli(u / v) successes before a failure
            while True:
                while True:  # below(v)
                    while count < kv:
                        if not left:
                            left = words().tolist()[::-1]
                        pool |= (left.pop() >> shift) << count
                        count += 63
                    coin = pool & mask_v
                    pool >>= kv
                    count -= kv
                    if coin < v:
                        break
                if coin >= u:
                    break
                x += 1
        if fn:
            i = 0
            while True:  # step 1: the Bernoulli factory, one combined draw per round
                if i == len(rounds):
                    rounds.append(_factory_round(i + 1, fn, fd, u, v))
                m, k, mask, yes_below, decided_below = rounds[i]
                while True:  # below(m)
                    while count < k:
                        if not left:
                            left = words().tolist()[::-1]
                        pool |= (left.pop() >> shift) << count
                        count += 63
                    w = pool & mask
                    pool >>= k
                    count -= k
                    if w < m:
                        break
                if w < decided_below:  # decided: "X = 0" below yes_below, else step 2
                    break
                i += 1
            if w >= yes_below:  # not "X = 0": step 2, 1 + Geometric accepted with the coins
                y, pool, count, left = _nb_positive_bits(
                    pool, count, left, words, shift, fn, fd, u, v
                )
                x += y
        values.append(x)
    bits._pool, bits._count, bits._left = pool, count, left
    return values


def _factory_round(i: int, fn: int, fd: int, u: int, v: int) -> tuple[int, int, int, int, int]:
    """Round ``i``'s constants of ``_nb_scalar_values``' Bernoulli factory: the bound ``m =
    v fd i`` of its draw, the bits ``k`` a try takes and their mask, ``yes_below = (v - u)
    fd i`` ("X = 0" below it) and ``yes_below + u fn`` (decided below it)."""
    m = v * fd * i
    k = (m - 1).bit_length()
    yes_below = (v - u) * fd * i
    return m, k, (1 << k) - 1, yes_below, yes_below + u * fn


@lru_cache(maxsize=256)
def _factory_rounds(fn: int, fd: int, u: int, v: int) -> tuple[tuple[int, int, int, int, int], ...]:
    """The first ``_FACTORY_ROUNDS_CACHED`` rounds' ``_factory_round`` constants, per (shape,
    ratio): a Pólya share's step 1 is decided in its first round about two times in three,
    so these are what every share reads (the same numbers the loop computed per round)."""
    return tuple(_factory_round(i, fn, fd, u, v) for i in range(1, _FACTORY_ROUNDS_CACHED + 1))


def _nb_positive_bits(
    pool: int, count: int, left: list[int], words, shift: int, fn: int, fd: int, u: int, v: int
) -> tuple[int, int, int, list[int]]:
    """Step 2 of ``_nb_scalar_values``' fraction (X >= 1), on its bit pool ``(pool, count,
    left)`` refilled from ``words`` as there: ``y = 1 + Geometric(1 - u/v)`` accepted with
    the coins ``below((j + 1) fd) < fn + j fd``, ``j = 1 .. y - 1``, drawn again until
    accepted. Returns ``(y, pool, count, left)``."""
    kv = (v - 1).bit_length()
    mask_v = (1 << kv) - 1
    while True:
        y = 1
        while True:  # 1 + Geometric: below(v) < u counts
            while True:
                while count < kv:
                    if not left:
                        left = words().tolist()[::-1]
                    pool |= (left.pop() >> shift) << count
                    count += 63
                coin = pool & mask_v
                pool >>= kv
                count -= kv
                if coin < v:
                    break
            if coin >= u:
                break
            y += 1
        j = 1
        while j < y:  # coin j: below((j + 1) fd) < fn + j fd
            m = (j + 1) * fd
            k = (m - 1).bit_length()
            while True:
                while count < k:
                    if not left:
                        left = words().tolist()[::-1]
                    pool |= (left.pop() >> shift) << count
                    count += 63
                c = pool & ((1 << k) - 1)
                pool >>= k
                count -= k
                if c < m:
                    break
            if c >= fn + j * fd:
                break
            j += 1
        if j == y:
            return y, pool, count, left


def geometric(rng: np.random.Generator, ratio: Fraction, size: int) -> np.ndarray:
    """``size`` exact ``Geometric`` values, ``P[X = x] = (1 - a) a^x`` for the rational
    ``a = ratio`` in ``(0, 1)`` (int64)."""
    u, v = _ratio(ratio, "ratio")
    return _geometric(rng, u, v, _size(size))


def _size(size: int) -> int:
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
        raise ParameterError(
            f"must be an integer >= 1, got {size!r}",
            field="size",
            limit="an integer >= 1",
            value=size,
        )
    return int(size)


def negative_binomial(
    rng: np.random.Generator, shape: Fraction, ratio: Fraction, size: int
) -> np.ndarray:
    """``size`` exact ``NB(r, 1 - a)`` values (failures before the r-th success: ``P[X =
    x] = (r)_x / x! (1 - a)^r a^x``) for a rational shape ``r = shape > 0`` and ratio ``a
    = ratio`` in ``(0, 1)`` (module docstring; int64). ``NB(1/m)`` is one party's Pólya
    share: the sum of ``m`` independent ones is ``Geometric(1 - a)``."""
    global _last_nb_parts
    if type(shape) is Fraction and type(ratio) is Fraction and type(size) is int and size > 0:
        # a Pólya share's call: (shape, ratio) checked once (_nb_parts), not per share;
        # the same two objects as the last call (the shares' cached ones) skip even the
        # cache's lookup, whose Fraction hashes cost a quarter of a share
        last = _last_nb_parts  # one read: (shape, ratio, parts), consistent across threads
        if last[0] is shape and last[1] is ratio:
            return _nb_draw(rng, last[2], size)
        parts = _nb_parts_cached(shape, ratio)
        _last_nb_parts = (shape, ratio, parts)
        return _nb_draw(rng, parts, size)
    u, v = _ratio(ratio, "ratio")
    n = _size(size)
    return _nb_draw(rng, _nb_shape(shape, u, v), n)


_last_nb_parts: tuple = (None, None, None)


def _nb_shape(shape: Fraction, u: int, v: int) -> tuple[int, int, int, int, int]:
    """``(whole, frac, den, u, v)`` of ``NB(shape, 1 - u/v)``: ``shape = whole + frac /
    den`` checked (a positive rational of a moderate denominator)."""
    if isinstance(shape, bool) or not isinstance(shape, int | Fraction) or shape <= 0:
        raise ParameterError(
            f"must be a positive rational (Fraction), got {shape!r}",
            field="shape",
            limit="a positive rational (Fraction)",
            value=shape,
        )
    r = Fraction(shape)
    if r.denominator >= _MAX_DEN // 2**10:
        raise ParameterError(
            f"denominator too large: {shape!r}",
            field="shape",
            limit="a denominator < _MAX_DEN // 2**10",
            value=shape,
        )
    whole, frac = divmod(r.numerator, r.denominator)
    return whole, frac, r.denominator, u, v


@lru_cache(maxsize=256)
def _nb_parts_cached(shape: Fraction, ratio: Fraction) -> tuple[int, int, int, int, int]:
    """``_nb_shape`` of a checked ratio, per (shape, ratio) (errors are not cached)."""
    u, v = _ratio(ratio, "ratio")
    return _nb_shape(shape, u, v)


def _nb_draw(rng: np.random.Generator, parts: tuple[int, int, int, int, int], n: int):
    """``n`` values of the checked ``NB(whole + frac/den, 1 - u/v)``: the bit-pool path
    when few coin rounds are expected (``n / (1 - a)`` below ``_NB_SCALAR_ROUNDS``), else
    the vectorised one; the size and the public ratio decide, so a seed fixes the values."""
    whole, frac, den, u, v = parts
    if n * v < _NB_SCALAR_ROUNDS * (v - u):  # few coin rounds expected: the bit-pool path
        values = _nb_scalar_values(_Bits(rng), n, whole, frac, den, u, v)
        return np.array(values, dtype=np.int64)
    out = np.zeros(n, dtype=np.int64)
    for _ in range(whole):
        out += _geometric(rng, u, v, n)
    if frac:
        out += _nb_fraction(rng, Fraction(frac, den), u, v, n)
    return out
