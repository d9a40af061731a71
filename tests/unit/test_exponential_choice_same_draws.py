"""``samplers.exponential_choice`` keeps its draws: the prepared-gaps path (the exact gaps of
a score vector computed once per (scores, rate), not per proposal) returns the same index
and leaves the generator in the same state as the reference below, a frozen copy of the
sampler before that change (every gap recomputed in ``Fraction`` arithmetic per round).
Seeded runs (the audit battery's rows, the CADR traces) therefore stay identical."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from ldpfleet.protocol import samplers
from ldpfleet.protocol.exponential import (
    ExponentialMechanism,
    ndoe_partitions,
    ndoe_scores,
    ndoe_sensitivity,
)


def _reference_choice(rng: np.random.Generator, scores, rate) -> int:
    """The sampler as it was (rejection on the bit pool, gaps per proposal)."""
    values = np.asarray(scores, dtype=float).ravel().tolist()
    r = Fraction(rate)
    top = Fraction(max(values))
    bits = samplers._Bits(rng)
    while True:
        k = bits.below(len(values))
        gap = r * (top - Fraction(values[k]))
        if not gap:
            return k
        whole = math.floor(gap)
        accepted = all(samplers._bern_exp_scalar(bits, 1, 1) for _ in range(whole))
        frac = gap - whole
        if accepted and (
            not frac or samplers._bern_exp_scalar(bits, frac.numerator, frac.denominator)
        ):
            return k


def _ndoe_cases():
    parts = ndoe_partitions(0, 40, 16)
    sens = ndoe_sensitivity(parts)
    return [
        (ndoe_scores(d, parts), Fraction(e) / (2 * sens))
        for d in (0, 7, 40)
        for e in (0.05, 1.0, 2.0, 8.0)
    ]


CASES = [
    *_ndoe_cases(),
    (np.array([0.0, -1.0, -1.0, -1.0]), Fraction(1, 2)),
    (np.array([-0.0, 0.0, -2.5]), Fraction(3)),  # -0.0 and 0.0 are the same rational
    (np.array([0.0, -1e300, 1e300, 1e300]), Fraction(40)),
    (np.array([5.0]), Fraction(0)),
    ([0.1, 0.2, 0.3], 0.7),  # a float rate, a list of scores
    (np.linspace(-3.0, 0.0, 100), Fraction(1, 3)),  # above the cached size: per-round gaps
]


@pytest.mark.parametrize(("scores", "rate"), CASES)
def test_same_index_and_generator_state_as_the_reference(scores, rate):
    new, old = np.random.default_rng(11), np.random.default_rng(11)
    got = [samplers.exponential_choice(new, np.asarray(scores, float), rate) for _ in range(400)]
    want = [_reference_choice(old, scores, rate) for _ in range(400)]
    assert got == want
    assert new.bit_generator.state == old.bit_generator.state


def test_the_mechanism_draws_the_reference_sequence_across_score_vectors():
    """Alternating score vectors (as NDOE does across nodes) share no stale gaps."""
    parts = ndoe_partitions(0, 8, 9)
    mech = ExponentialMechanism(1.0, ndoe_sensitivity(parts))
    vectors = [ndoe_scores(d, parts) for d in (0, 8, 3, 0, 5)]
    new, old = np.random.default_rng(3), np.random.default_rng(3)
    got = [mech.sample(vectors[i % 5], new) for i in range(500)]
    want = [_reference_choice(old, vectors[i % 5], mech.rate) for i in range(500)]
    assert got == want
