"""The SecAgg speed-ups of 2026-12-05 (helper F) compute exactly what they replaced.

- ``crypto.prg_mask`` writes the AES-256-CTR keystream straight into its array from a
  shared zero buffer (was: a fresh zero ``bytes``, the keystream as ``bytes``, a copy);
- ``crypto.derive_key``'s HKDF-Extract hashes from two SHA-256 states of the (public,
  all-zero) salt key prepared once (was: ``hmac.digest`` every call);
- the masked input (device) and the unmasked total (server) are summed in place mod 2^64
  and reduced to 2^bits once (was: a new array per mask, reduced every step).

Each is compared with the replaced computation written out here, on fixed seeds.
"""

from __future__ import annotations

import hmac

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from ldpfleet.protocol.secagg import crypto
from ldpfleet.protocol.secagg.client import add_pairwise_into, apply_pairwise
from ldpfleet.protocol.secagg.encoding import add_mod, low_bits


def _old_prg_mask(key: bytes, length: int, bits: int) -> np.ndarray:
    """prg_mask as it was before the speed-up."""
    encryptor = Cipher(algorithms.AES(key), modes.CTR(bytes(16))).encryptor()
    stream = encryptor.update(bytes(length * (bits // 8)))
    dtype = np.dtype("<u8") if bits == 64 else np.dtype("<u4")
    native = np.uint64 if bits == 64 else np.uint32
    return np.frombuffer(stream, dtype=dtype).astype(native)


@pytest.mark.parametrize("bits", [32, 64])
def test_prg_mask_equals_the_replaced_computation_for_every_length(bits):
    rng = np.random.default_rng(51)
    for length in (0, 1, 2, 3, 5, 7, 16, 1000, 10_001):
        key = rng.bytes(32)
        got = crypto.prg_mask(key, length, bits)
        expected = _old_prg_mask(key, length, bits)
        assert got.dtype == expected.dtype and got.shape == (length,)
        np.testing.assert_array_equal(got, expected)


def test_prg_mask_arrays_are_the_callers_own_and_the_zero_buffer_stays_zero():
    key = bytes(range(32))
    first = crypto.prg_mask(key, 64, 64)
    assert first.flags.writeable
    first[:] = 0xFFFF  # the caller may sum into its mask
    second = crypto.prg_mask(key, 64, 64)
    np.testing.assert_array_equal(second, _old_prg_mask(key, 64, 64))
    # a longer mask after a shorter one (the zero buffer grows), then a shorter one again
    np.testing.assert_array_equal(crypto.prg_mask(key, 5000, 32), _old_prg_mask(key, 5000, 32))
    np.testing.assert_array_equal(crypto.prg_mask(key, 10, 64), _old_prg_mask(key, 10, 64))
    assert bytes(crypto._zeros(40_000)) == bytes(40_000)


def test_hkdf_extract_is_hmac_sha256_keyed_with_the_zero_salt():
    rng = np.random.default_rng(52)
    for _ in range(300):
        shared = rng.bytes(32)
        assert crypto._hkdf_extract(shared) == hmac.digest(bytes(32), shared, "sha256")
    # the prepared states are copied, never consumed: the same input, the same output
    assert crypto._hkdf_extract(bytes(32)) == crypto._hkdf_extract(bytes(32))


@pytest.mark.parametrize("bits", [32, 64])
def test_in_place_pairwise_sum_equals_the_step_by_step_reduction(bits):
    rng = np.random.default_rng(53 + bits)
    high = 2**bits
    start = rng.integers(0, high, size=257, dtype=np.uint64)
    masks = [rng.integers(0, high, size=257, dtype=np.uint64) for _ in range(12)]
    pairs = [(int(u), int(v)) for u, v in rng.integers(1, 30, size=(12, 2))]
    expected = start.copy()
    for mask, (u, v) in zip(masks, pairs, strict=True):
        expected = apply_pairwise(expected, mask, u=u, v=v, bits=bits)
    total = start.copy()
    for mask, (u, v) in zip(masks, pairs, strict=True):
        add_pairwise_into(total, mask, u=u, v=v)
    np.testing.assert_array_equal(low_bits(total, bits), expected)
    # and with the self mask added first, as the device does
    self_mask = rng.integers(0, high, size=257, dtype=np.uint64)
    total = start.copy()
    np.add(total, self_mask, out=total)
    np.testing.assert_array_equal(low_bits(total, bits), add_mod(start, self_mask, bits))
