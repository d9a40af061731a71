"""``samplers.rr_lie_drawn`` (every Warner answer of the LPEA machines, the graph
canaries' hottest sampler) with ``_Bits`` inlined draws what it drew before: the same coins
and the same generator state, against a frozen copy of the version on ``_Bits`` (main
67a99fb9, itself pinned by tests/unit/test_bits_pool_same_draws.py)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from ldpfleet.protocol import samplers


def _frozen_rr_lie_drawn(rng, parts) -> bool:
    whole, num, den = parts
    bits = samplers._Bits(rng)
    while True:
        if not bits.take(1):
            return False
        for _ in range(whole):
            if not samplers._bern_exp_scalar(bits, 1, 1):
                break
        else:
            if not num or samplers._bern_exp_scalar(bits, num, den):
                return True


EPS = [0.05, 0.5, 1.0, 2.0, 2.5, 3.0, Fraction(7, 3), 0, 1e-9, 10.0]


@pytest.mark.parametrize("eps", EPS)
@pytest.mark.parametrize("generator", ["pcg64", "mt19937"])
def test_the_same_coins_and_generator_state_as_the_bits_version(eps, generator):
    def make():
        if generator == "pcg64":
            return np.random.default_rng(23)
        return np.random.Generator(np.random.MT19937(23))

    new_rng, old_rng = make(), make()
    parts = samplers.rr_lie_parts(eps)
    new = [samplers.rr_lie_drawn(new_rng, parts) for _ in range(3000)]
    old = [_frozen_rr_lie_drawn(old_rng, parts) for _ in range(3000)]
    assert new == old
    assert new_rng.integers(0, 2**63, 8).tolist() == old_rng.integers(0, 2**63, 8).tolist()
    if 0 < eps < 5:
        assert 0 < sum(new) < len(new)  # both answers occur: the test can see a change


def test_interleaved_with_other_bit_pool_draws():
    """Coins interleaved with Pólya shares on one generator (as a device draws them)."""
    new_rng, old_rng = np.random.default_rng(5), np.random.default_rng(5)
    parts = samplers.rr_lie_parts(0.7)
    shape, ratio = Fraction(1, 9), Fraction(395007542, 2**30)
    for _ in range(200):
        assert samplers.rr_lie_drawn(new_rng, parts) == _frozen_rr_lie_drawn(old_rng, parts)
        a = samplers.negative_binomial(new_rng, shape, ratio, 4)
        b = samplers.negative_binomial(old_rng, shape, ratio, 4)
        assert a.tolist() == b.tolist()
    assert new_rng.bit_generator.state == old_rng.bit_generator.state
