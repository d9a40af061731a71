"""``samplers._Bits`` keeps its bits: the pool that appends a drawn word only when it runs
short hands out the same bits, and leaves the generator in the same state, as the
reference below, a frozen copy of the pool that appended all ``_WORDS`` words of a refill
at once. Every pure-Python sampler (Warner RR's coin, the exponential mechanism, the
small-request discrete Laplace and negative binomial) reads its draws from this pool."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.protocol import samplers


class _ReferenceBits:
    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._pool = 0
        self._count = 0

    def take(self, k: int) -> int:
        pool, count = self._pool, self._count
        while count < k:
            words = self._rng.integers(0, 2**63, size=samplers._WORDS, dtype=np.int64)
            for word in words.tolist():
                pool |= word << count
                count += 63
        self._pool, self._count = pool >> k, count - k
        return pool & ((1 << k) - 1)


@pytest.mark.parametrize("widths", [[1] * 700, [5, 63, 1, 64, 130, 2, 600, 3, 7], [504, 1, 504]])
def test_same_bits_and_generator_state_as_the_reference(widths):
    new, old = np.random.default_rng(9), np.random.default_rng(9)
    for _ in range(3):  # fresh pools, as the samplers make one per call
        bits, reference = samplers._Bits(new), _ReferenceBits(old)
        assert [bits.take(k) for k in widths] == [reference.take(k) for k in widths]
        assert new.bit_generator.state == old.bit_generator.state
