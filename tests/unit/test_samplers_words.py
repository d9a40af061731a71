"""The bit pool's words (``samplers._Bits``) and Warner RR's one-bit coin: the faster paths
draw exactly what the former ones drew.

``_Bits`` reads a ``numpy.random.Generator``'s 63-bit words as ``random_raw() >> 1`` where the
bit generator's raw output is its 64-bit word (``samplers._RAW_IS_UINT64``), instead of
``integers(0, 2**63)``: the same words and the same generator state after, pinned here for
each such bit generator (and MT19937, whose raw output is 32 bits, must keep ``integers``).
``WarnerRR.respond(bool)`` prepares its ``eps`` once (``rr_lie_parts``): its reports are pinned
to those of the former code (digests computed with the tree before the change, a46984c;
``scripts/rr_speed_ab.py`` compares 100,000 reports per budget with the old module itself).
"""

from __future__ import annotations

import hashlib
from fractions import Fraction

import numpy as np
import pytest
from ldpfleet.protocol import samplers
from ldpfleet.protocol.rr import WarnerRR


class _IntegersOnly:
    """A generator seen only through ``integers``: ``_Bits``' portable path."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def integers(self, *args, **kwargs):
        return self.rng.integers(*args, **kwargs)


WIDTHS = [1, 5, 63, 64, 130, 0, 7, 504, 505, 1000, 2, 3]


@pytest.mark.parametrize("bit_generator", [*samplers._RAW_IS_UINT64, np.random.MT19937])
def test_the_pool_draws_the_words_integers_draws(bit_generator):
    fast = np.random.Generator(bit_generator(2026))
    portable = np.random.Generator(bit_generator(2026))
    fast_bits, portable_bits = samplers._Bits(fast), samplers._Bits(_IntegersOnly(portable))
    for _ in range(50):
        for k in WIDTHS:
            assert fast_bits.take(k) == portable_bits.take(k)
    assert repr(fast.bit_generator.state) == repr(portable.bit_generator.state)
    assert fast.integers(0, 2**62) == portable.integers(0, 2**62)  # and draws go on alike


@pytest.mark.parametrize(
    ("eps", "seed", "digest"),
    [
        (0.7, 1, "7cda552f569058c55ec0f3982993243dcc7d02e28018ad294986199a528f9453"),
        (2.0, 2, "64ea89a4351cf6b8d3e96f9717f7df4af1b5a8f6ca0210131bea4d39d736db26"),
        (12.5, 3, "9169a4b457d544203a1fe902b40675bd49c9a4b81585cfea11e0dfc24e314aab"),
    ],
)
def test_one_bit_reports_are_the_former_ones(eps, seed, digest):
    mech, rng = WarnerRR(eps), np.random.default_rng(seed)
    bits = "".join("1" if mech.respond(i % 3 == 0, rng) else "0" for i in range(20_000))
    assert hashlib.sha256(bits.encode()).hexdigest() == digest


@pytest.mark.parametrize("eps", [0.0, 0.3, 1.0, 2.5, Fraction(7, 3), 40.0])
def test_prepared_and_unprepared_coins_draw_alike(eps):
    parts = samplers.rr_lie_parts(eps)
    first, second = np.random.default_rng(9), np.random.default_rng(9)
    assert [samplers.rr_lie_one(first, eps) for _ in range(300)] == [
        samplers.rr_lie_drawn(second, parts) for _ in range(300)
    ]
    assert repr(first.bit_generator.state) == repr(second.bit_generator.state)


def test_a_negative_budget_is_refused_naming_eps():
    with pytest.raises(samplers.ParameterError) as caught:
        samplers.rr_lie_parts(-0.5)
    assert caught.value.field == "eps" and "-0.5" in str(caught.value)
