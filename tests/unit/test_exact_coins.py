"""Exact coins: ``samplers.rr_lie``, ``bernoulli_rational``, ``bernoulli_float`` and the
Warner RR / Duchi mechanisms built on them.

Statistical thresholds: a count ``X ~ Binomial(n, p)`` with ``n = 10**6`` is compared with
``n p`` in units of ``sqrt(n p (1 - p))``; the normal approximation is accurate there
(``n p (1 - p) >= 2.6e4`` in every case: the skewness correction at 5 sigma is < 1e-2 of the
tail). Each test makes ``m`` comparisons at ``|z| <= 5.1``:
``2 Phi(-5.1) = 3.4e-7`` each, so ``m <= 3`` keeps a test's false-failure rate near 1e-6.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from ldpfleet.protocol.duchi import DuchiMechanism
from ldpfleet.protocol.rr import WarnerRR
from ldpfleet.protocol.samplers import (
    bernoulli_exp,
    bernoulli_float,
    bernoulli_rational,
    rr_lie,
    rr_lie_one,
)

Z = 5.1  # two-sided 3.4e-7 per comparison (module docstring)
N = 10**6


def _z(count: int, n: int, p: float) -> float:
    return (count - n * p) / math.sqrt(n * p * (1.0 - p))


class _ScriptedGenerator:
    """A stub generator: ``integers`` returns 1 on its first call (the RR proposal "lie"),
    then 0 when ``high <= 2`` and ``high - 1`` otherwise — the draws that make every CKS
    ``Bernoulli(exp(-1))`` succeed (k = 2 succeeds, k = 3 fails: K = 3 is odd). ``random``
    returns the largest double below 1 (the old ``rng.random() >= p`` coin's best chance)."""

    def __init__(self) -> None:
        self.calls = 0

    def integers(self, low, high, size=None):
        self.calls += 1
        shape = () if size is None else size
        if self.calls == 1:
            return np.ones(shape, dtype=np.int64)
        h = np.broadcast_to(np.asarray(high, dtype=np.int64), shape)
        return np.where(h <= 2, 0, h - 1)

    def random(self, size=None):
        return np.full(() if size is None else size, np.nextafter(1.0, 0.0))


def test_rr_lie_branch_reachable_at_eps_40():
    """At eps = 40, p = 1 / (1 + e^-40) rounds to 1.0: the old ``rng.random() >= p`` never
    lied (infinite privacy loss). The exact coin lies on the draws that realise
    Bernoulli(exp(-40))."""
    mech = WarnerRR(40.0)
    assert mech.p == 1.0  # what the old coin compared with
    assert rr_lie(_ScriptedGenerator(), mech.coin_eps, 1).tolist() == [True]  # arrays >= 64
    assert mech.respond(True, _PoolGenerator(_lie_bits(40))) is False  # the bool path
    assert mech.respond(np.array([False]), _PoolGenerator(_lie_bits(40))).tolist() == [True]


def _lie_bits(whole: int) -> int:
    """The bit pool (least significant first) on which ``rr_lie_one`` lies at an integer
    eps: 1 (propose "lie"), then per Bernoulli(exp(-1)) of CKS Alg. 1: k = 1 needs no bit,
    k = 2 the bit 0 (success), k = 3 two bits worth 1 (failure at K = 3, odd: accept)."""
    pool, at = 1, 1
    for _ in range(whole):
        pool |= 0b010 << at  # LSB first: 0, then the two bits 1, 0 (value 1)
        at += 3
    return pool


class _PoolGenerator:
    """A stub for ``samplers._Bits``: ``integers(0, 2**63, size, dtype)`` hands out the
    given bit string as 63-bit words, then zeros — at most ``ZERO_WORDS_LEFT`` words past
    the string: a sampler that never stops on the script (a planted bug: helper T's EX1,
    the exponential mechanism's rate doubled, looped here for 7 minutes) fails instead of
    hanging the suite."""

    ZERO_WORDS_LEFT = 100_000  # every scripted test here stops within a few words

    def __init__(self, pool: int) -> None:
        self.pool = pool
        self.words_left = pool.bit_length() // 63 + 1 + self.ZERO_WORDS_LEFT

    def integers(self, low, high, size=None, dtype=np.int64):
        self.words_left -= size
        assert self.words_left >= 0, "the scripted bit pool ran out: the sampler did not stop"
        words = [(self.pool >> (63 * i)) & (2**63 - 1) for i in range(size)]
        self.pool >>= 63 * size
        return np.array(words, dtype=np.int64)


@pytest.mark.parametrize("eps", [0.3, 1.7])
def test_rr_lie_one_law(eps):
    """The bool path's pure-Python coin, 2 * 10**5 coins (m = 1 per case; n p (1 - p) >=
    2.6e4, still deep in the normal regime)."""
    rng = np.random.default_rng(2026)
    n = 200_000
    lies = sum(rr_lie_one(rng, eps) for _ in range(n))
    assert abs(_z(lies, n, 1.0 / (1.0 + math.exp(eps)))) <= Z


def test_bernoulli_exp_40_true_on_scripted_draws():
    rng = _ScriptedGenerator()
    rng.calls = 1  # skip the "1" answer
    assert bernoulli_exp(rng, 40) is True


@pytest.mark.parametrize("eps", [0.3, 1.7, 2.0**-40])
def test_rr_lie_law(eps):
    """0.3: fractional part with denominator 2**54 (the any-denominator coin); 1.7: the int64
    path; 2**-40: a tiny eps (denominator 2**92). One comparison per case (m = 1)."""
    rng = np.random.default_rng(20261204)
    lies = int(np.sum(rr_lie(rng, eps, N)))
    assert abs(_z(lies, N, 1.0 / (1.0 + math.exp(eps)))) <= Z


def test_warner_rr_answers_law():
    """Both truths at eps = 1.3 (m = 2)."""
    rng = np.random.default_rng(7)
    mech = WarnerRR(1.3)
    for truth in (True, False):
        answers = mech.respond(np.full(N, truth), rng)
        agree = int(np.sum(answers == truth))
        assert abs(_z(agree, N, mech.p)) <= Z


def test_bernoulli_rational_law_big_denominator():
    """A denominator above 2**62 takes the chunked comparison (m = 2)."""
    rng = np.random.default_rng(11)
    for prob in (Fraction(2**70 + 1, 3 * 2**70), Fraction(1, 7) + Fraction(1, 2**80)):
        hits = int(np.sum(bernoulli_rational(rng, prob, N)))
        assert abs(_z(hits, N, float(prob))) <= Z


def test_bernoulli_float_law_and_ends():
    """x = 0.3 (m = 1) and 2**-70 + ... (deep leading zeros): never a hit in 10**6 draws
    when P = 8.5e-22 (a false failure has probability below 1e-15); ends exact."""
    rng = np.random.default_rng(12)
    hits = int(np.sum(bernoulli_float(rng, np.full(N, 0.3))))
    assert abs(_z(hits, N, 0.3)) <= Z
    assert not bernoulli_float(rng, np.full(N, 2.0**-70 * 1.5)).any()
    assert bernoulli_float(rng, np.array([1.0, 1.0])).all()
    assert not bernoulli_float(rng, np.array([0.0, 5e-324])).any()


def test_bernoulli_float_deep_zero_bits_scripted():
    """All-zero draws realise ``U = 0 < x`` for any ``x > 0``, even a subnormal (its 1074
    leading zero bits span 18 chunks)."""

    class Zeros:
        def integers(self, low, high, size=None):
            return np.zeros(np.broadcast(np.asarray(high), np.empty(size or ())).shape, np.int64)

    assert bernoulli_float(Zeros(), np.array([5e-324, 0.5, 0.0])).tolist() == [
        True,
        True,
        False,
    ]


@pytest.mark.parametrize("x", [0.0, 0.8])
def test_duchi_law(x):
    """P(+C) = 1/(e^eps + 1) + x tanh(eps/2) at eps = 1.1 (m = 1 per case)."""
    mech = DuchiMechanism(1.1)
    rng = np.random.default_rng(13)
    high = int(np.sum(mech.perturb(np.full(N, x), rng) > 0))
    assert abs(_z(high, N, float(mech.prob_high(np.array(x))))) <= Z
