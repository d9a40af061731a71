"""The bit-pool negative binomial (``samplers._nb_scalar_values``, the path of every
Pólya share of the θ search) draws what the one-value-per-call version drew: the same
values, the same pool left, the same generator state. The reference below is a frozen
copy of that version (protocol/samplers.py before helper C inlined the pool), run on the
module's ``_Bits`` (itself pinned by tests/unit/test_bits_pool_same_draws.py)."""

from __future__ import annotations

import hashlib
from fractions import Fraction

import numpy as np
import pytest
from ldpfleet.protocol import samplers
from ldpfleet.protocol.cadr_theta_noise import share_ratio


def _reference_geometric(bits, u: int, v: int) -> int:
    count = 0
    while bits.below(v) < u:
        count += 1
    return count


def _reference_nb(bits, whole: int, fn: int, fd: int, u: int, v: int) -> int:
    x = sum(_reference_geometric(bits, u, v) for _ in range(whole))
    if not fn:
        return x
    i = 1
    while True:  # step 1: the Bernoulli factory, one combined draw per round
        w = bits.below(v * fd * i)
        if w < (v - u) * fd * i:
            return x  # "X = 0"
        if w < (v - u) * fd * i + u * fn:
            break
        i += 1
    while True:  # step 2: 1 + Geometric, accepted with prod_(j < x) (f + j) / (j + 1)
        y = 1 + _reference_geometric(bits, u, v)
        j = 1
        while j < y and bits.below((j + 1) * fd) < fn + j * fd:
            j += 1
        if j == y:
            return x + y


SHAPES = [Fraction(1, 9), Fraction(1, 10), Fraction(1, 4), Fraction(9, 10), Fraction(1),
          Fraction(3, 2), Fraction(7, 3)]  # fmt: skip
# the shares' power-of-two ratios, and two whose bounded draws reject (v not a power of 2)
RATIOS = [share_ratio(0.5), share_ratio(1.0), share_ratio(2.0), share_ratio(4.0),
          Fraction(2, 3), Fraction(5, 7)]  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("ratio", RATIOS)
def test_same_values_pool_and_generator_state_as_the_reference(shape, ratio):
    whole, fn = divmod(shape.numerator, shape.denominator)
    u, v = ratio.numerator, ratio.denominator
    new_rng, old_rng = np.random.default_rng(11), np.random.default_rng(11)
    for n in (1, 7, 300):
        new, old = samplers._Bits(new_rng), samplers._Bits(old_rng)
        values = samplers._nb_scalar_values(new, n, whole, fn, shape.denominator, u, v)
        expected = [_reference_nb(old, whole, fn, shape.denominator, u, v) for _ in range(n)]
        assert values == expected
        assert (new._pool, new._count, new._left) == (old._pool, old._count, old._left)
        assert new_rng.bit_generator.state == old_rng.bit_generator.state


@pytest.mark.parametrize("shape", [Fraction(1, 9), Fraction(1, 4), Fraction(3, 2)])
def test_negative_binomial_small_requests_unchanged(shape):
    """Through the public sampler (its small-request path), with a generator whose words
    come from ``integers`` (not ``random_raw``: ``_word_source``'s other branch)."""
    ratio = share_ratio(1.0)
    for rng_new, rng_old in (
        (np.random.default_rng(5), np.random.default_rng(5)),
        (np.random.Generator(np.random.MT19937(5)), np.random.Generator(np.random.MT19937(5))),
    ):
        new = samplers.negative_binomial(rng_new, shape, ratio, 18)
        bits = samplers._Bits(rng_old)
        whole, fn = divmod(shape.numerator, shape.denominator)
        old = [_reference_nb(bits, whole, fn, shape.denominator, ratio.numerator,
                             ratio.denominator) for _ in range(18)]  # fmt: skip
        assert new.tolist() == old
        assert rng_new.random(4).tolist() == rng_old.random(4).tolist()  # the same state


# sha256 (first 16 hex digits) of 1,000 opened sums of the dropout canary in world D'
# (scripts/B_time_count.py 1000 EPS on main 2d93049, before the inlined pool)
DROPOUT_DIGESTS = {0.5: "d8f815b359e3b443", 1.0: "caedd7199c1d3c2e", 2.0: "7166a69fb834ce3e"}


@pytest.mark.parametrize("eps", [2.0])
def test_the_dropout_canary_opens_the_same_sums(eps):
    from ldpfleet.collector.audit.cadr_count_canary import (
        CADR_COUNT_BOUND,
        dropout_count_release,
    )

    rng = np.random.default_rng(0)
    out = np.array([dropout_count_release(eps, CADR_COUNT_BOUND, rng) for _ in range(1000)])
    assert hashlib.sha256(out.tobytes()).hexdigest()[:16] == DROPOUT_DIGESTS[eps]


def test_the_cached_checks_still_refuse_bad_arguments_every_time():
    """The fast paths (``share_ratio`` per budget, ``negative_binomial`` per (shape,
    ratio)) cache results, never refusals: a bad argument is refused on every call, with
    the field named, before and after a good one was cached."""
    from ldpfleet.protocol.cadr_theta_noise import polya_share
    from ldpfleet.protocol.errors import ParameterError

    rng = np.random.default_rng(0)
    a = share_ratio(1.0)
    samplers.negative_binomial(rng, Fraction(1, 9), a, 18)
    for _ in range(2):
        for call, field in (
            (lambda: samplers.negative_binomial(rng, Fraction(0), a, 3), "shape"),
            (lambda: samplers.negative_binomial(rng, Fraction(-1, 9), a, 3), "shape"),
            (lambda: samplers.negative_binomial(rng, Fraction(1, 9), Fraction(3, 2), 3), "ratio"),
            (lambda: samplers.negative_binomial(rng, Fraction(1, 9), a, 0), "size"),
            (lambda: share_ratio(float("nan")), "eps"),
            (lambda: share_ratio(-1.0), "eps"),
            (lambda: share_ratio(True), "eps"),
            (lambda: share_ratio(1.0, 0), "sensitivity"),
            (lambda: polya_share(rng, 0, 1.0, 9), "parties"),
            (lambda: polya_share(rng, 9, 0.0, 9), "eps"),
            (lambda: polya_share(rng, 9, 1.0, 0), "size"),
        ):
            with pytest.raises(ParameterError) as info:
                call()
            assert info.value.field == field
    assert share_ratio(1.0) == share_ratio(1) == share_ratio(np.float64(1.0))


def test_a_share_ratio_planted_in_the_module_reaches_the_shares(monkeypatch):
    """``polya_share`` reads ``share_ratio`` through its module at every call (the mutant
    ``theta noise for sensitivity 1`` plants one there): the cache is inside the real one."""
    from ldpfleet.protocol import cadr_theta_noise

    real = cadr_theta_noise.share_ratio
    honest = cadr_theta_noise.polya_share(np.random.default_rng(3), 9, 1.0, 2000)
    monkeypatch.setattr(cadr_theta_noise, "share_ratio", lambda eps, sensitivity=2: real(eps, 1))
    planted = cadr_theta_noise.polya_share(np.random.default_rng(3), 9, 1.0, 2000)
    # a share's variance is 2 (1/m) a / (1 - a)^2: 0.871 at a = e^-1/2, 0.205 at e^-1 (m = 9),
    # a ratio of 0.235; the seed is fixed, and 2,000 values put the sample ratio far below 0.8
    assert np.var(planted) < 0.8 * np.var(honest)


def _reference_bucket_vector(degree, thresholds):
    from ldpfleet.protocol.validate import integer_at_least

    t = np.asarray(thresholds)
    out = np.zeros(len(t) + 1)
    out[int(np.sum(t < integer_at_least(degree, "degree", 0)))] = 1.0
    return out


def test_bucket_vector_is_the_reference_one_hot():
    """``bucket_vector`` counts with ``np.count_nonzero`` (was ``np.sum``, twice the cost
    on a device's 9 entries): the same vector for lists, arrays, grids and degrees."""
    from ldpfleet.protocol.cadr_theta_noise import bucket_grid, bucket_vector

    rng = np.random.default_rng(2)
    grids = [list(range(8)), bucket_grid(1999), np.array(bucket_grid(99)), [0, 1], [5]]
    for grid in grids:
        for degree in [0, 1, 2, 7, 8, 15, 16, 17, 1998, 1999, 5000, np.int64(3)]:
            new, old = bucket_vector(degree, grid), _reference_bucket_vector(degree, grid)
            assert new.dtype == old.dtype and np.array_equal(new, old)
        for degree in rng.integers(0, 3000, size=200).tolist():
            assert np.array_equal(
                bucket_vector(degree, grid), _reference_bucket_vector(degree, grid)
            )
