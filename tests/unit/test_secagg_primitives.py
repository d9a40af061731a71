"""Secure-aggregation primitives: X25519/HKDF/AES-GCM/AES-CTR/Ed25519, Shamir over
GF(2^521 - 1), fixed-point encoding mod 2^bits, and the full and Harary sharing graphs."""

from __future__ import annotations

import hashlib
import itertools
import random

import numpy as np
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.secagg import crypto, encoding, graph, shamir
from ldpfleet.protocol.secagg.encoding import FixedPoint
from ldpfleet.protocol.secagg.shamir import PRIME
from scipy import stats

P_FLOOR = 1e-6  # statistical tests fail falsely with probability <= 1e-6


class Stream:
    """A deterministic ``random_bytes``: SHAKE-256 of (seed, call counter)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.calls = 0

    def __call__(self, n: int) -> bytes:
        self.calls += 1
        return hashlib.shake_256(f"{self.seed}/{self.calls}".encode()).digest(n)


def _keys(seed: int) -> tuple[crypto.KeyPair, crypto.KeyPair]:
    stream = Stream(seed)
    return crypto.generate_keypair(stream), crypto.generate_keypair(stream)


# ---------------------------------------------------------------------------- crypto


def test_agree_is_symmetric_and_pair_specific():
    u, v = _keys(1)
    w = crypto.generate_keypair(Stream(2))
    shared = crypto.agree(u.private, v.public)
    assert len(shared) == 32
    assert shared == crypto.agree(v.private, u.public)
    assert shared != crypto.agree(u.private, w.public)
    assert crypto.public_from_private(u.private) == u.public


def test_keypairs_come_from_the_injected_randomness_only():
    assert crypto.generate_keypair(Stream(5)) == crypto.generate_keypair(Stream(5))
    assert crypto.generate_keypair(Stream(5)) != crypto.generate_keypair(Stream(6))
    assert "private" in repr(crypto.generate_keypair(Stream(5)))
    assert crypto.generate_keypair(Stream(5)).private.hex() not in repr(
        crypto.generate_keypair(Stream(5))
    )
    with pytest.raises(ParameterError) as info:
        crypto.generate_keypair(lambda n: bytes(n - 1))
    assert info.value.field == "random_bytes"
    with pytest.raises(ParameterError) as info:
        crypto.KeyPair(bytes(31), bytes(32))
    assert info.value.field == "private"


def test_keypair_keeps_its_parsed_key_which_agrees_like_the_raw_bytes():
    u, v = _keys(7)
    assert u.x25519 is not None and u.x25519.private_bytes_raw() == u.private
    assert crypto.agree(u.agreement_key(), v.public) == crypto.agree(u.private, v.public)
    assert crypto.public_from_private(u.agreement_key()) == u.public
    bare = crypto.KeyPair(u.private, u.public)  # no key object: parsed on demand
    assert bare == u and bare.x25519 is None
    assert crypto.agree(bare.agreement_key(), v.public) == crypto.agree(u.private, v.public)
    assert repr(u) == repr(bare)  # the key object never shows in a repr
    with pytest.raises(ParameterError) as info:
        crypto.KeyPair(u.private, u.public, v.x25519)
    assert info.value.field == "x25519"
    with pytest.raises(ParameterError) as info:
        crypto.KeyPair(u.private, u.public, u.private)  # type: ignore[arg-type]
    assert info.value.field == "x25519"


@pytest.mark.parametrize("peer", [bytes(32), (1).to_bytes(32, "little"), bytes(31), b"x" * 33])
def test_agree_with_a_key_object_refuses_low_order_or_malformed_peer_keys(peer):
    u, _ = _keys(1)
    with pytest.raises(ParameterError) as info:
        crypto.agree(u.agreement_key(), peer)
    assert info.value.field == "public_key"


@pytest.mark.parametrize("peer", [bytes(32), (1).to_bytes(32, "little"), bytes(31), b"x" * 33])
def test_agree_refuses_low_order_or_malformed_peer_keys(peer):
    u, _ = _keys(1)
    with pytest.raises(ParameterError) as info:
        crypto.agree(u.private, peer)
    assert info.value.field == "public_key"


def test_derive_key_separates_every_context_field_and_ignores_pair_order():
    u, v = _keys(3)
    shared = crypto.agree(u.private, v.public)
    base = {"purpose": "mask", "run": "run1", "session": "s1", "round": 0, "a": 3, "b": 9}
    variants = [
        base,
        {**base, "purpose": "enc"},
        {**base, "run": "run2"},
        {**base, "session": "s2"},
        {**base, "round": 1},
        {**base, "a": 4},
        {**base, "b": 8},
    ]
    keys = [crypto.derive_key(shared, **kw) for kw in variants]
    assert all(len(k) == 32 for k in keys)
    assert len(set(keys)) == len(keys)
    assert crypto.derive_key(shared, **{**base, "a": 9, "b": 3}) == keys[0]
    other = crypto.agree(u.private, crypto.generate_keypair(Stream(4)).public)
    assert crypto.derive_key(other, **base) != keys[0]


def test_derive_key_is_hkdf_sha256_with_the_documented_info_string():
    shared = bytes(range(32))
    expected = HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=None,
        info=b"ldpfleet/secagg/v1/enc/r/s/7/2/11",
    ).derive(shared)
    got = crypto.derive_key(shared, purpose="enc", run="r", session="s", round=7, a=11, b=2)
    assert got == expected


def test_derive_key_equals_the_cryptography_hkdf_on_many_inputs():
    """``derive_key`` writes HKDF out with ``hmac.digest``: bit for bit ``cryptography``'s
    HKDF-SHA256 (no salt, 32 bytes) over random secrets and contexts (fixed seed)."""
    rng = np.random.default_rng(20)
    for _ in range(300):
        shared = rng.bytes(32)
        run = "r" * int(rng.integers(1, 65))
        session = f"theta-{int(rng.integers(0, 10**6))}"
        round_, a, b = (int(v) for v in rng.integers(0, 2**31, size=3))
        purpose = ("mask", "enc")[int(rng.integers(0, 2))]
        info = f"{purpose}/{run}/{session}/{round_}/{min(a, b)}/{max(a, b)}".encode()
        expected = HKDF(
            algorithm=hashes.SHA256(), length=32, salt=None, info=crypto.INFO_PREFIX + info
        ).derive(shared)
        got = crypto.derive_key(
            shared, purpose=purpose, run=run, session=session, round=round_, a=a, b=b
        )
        assert got == expected


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"purpose": "self"}, "purpose"),
        ({"run": "a/b"}, "run"),
        ({"session": ""}, "session"),
        ({"round": -1}, "round"),
        ({"a": True}, "a"),
    ],
)
def test_derive_key_refuses_ambiguous_context(override, field):
    kw = {"purpose": "mask", "run": "r", "session": "s", "round": 0, "a": 1, "b": 2, **override}
    with pytest.raises(ParameterError) as info:
        crypto.derive_key(bytes(32), **kw)
    assert info.value.field == field


def test_encrypt_decrypt_round_trip_with_fresh_nonces():
    key, ad = bytes(range(32)), b"3->9/round0"
    stream = Stream(7)
    c1 = crypto.encrypt(key, b"shares", ad, stream)
    c2 = crypto.encrypt(key, b"shares", ad, stream)
    assert c1 != c2 and len(c1) == 12 + len(b"shares") + 16
    assert crypto.decrypt(key, c1, ad) == crypto.decrypt(key, c2, ad) == b"shares"
    assert crypto.decrypt(key, crypto.encrypt(key, b"", ad), ad) == b""


def test_any_tampering_is_a_remote_protocol_error():
    key, ad = bytes(range(32)), b"3->9"
    ct = crypto.encrypt(key, b"some share bytes", ad, Stream(8))
    tampered = []
    for i in (0, 11, 12, len(ct) - 17, len(ct) - 1):  # nonce, body, tag
        flipped = bytearray(ct)
        flipped[i] ^= 0x01
        tampered.append((key, bytes(flipped), ad))
    tampered += [
        (key, ct, b"9->3"),
        (bytes(31) + b"\x01", ct, ad),
        (key, ct[:-1], ad),
        (key, ct[:27], ad),
        (key, b"", ad),
    ]
    for k, c, a in tampered:
        with pytest.raises(RemoteProtocolError) as info:
            crypto.decrypt(k, c, a)
        assert info.value.field == "ciphertext"


def test_prg_mask_is_deterministic_typed_and_key_specific():
    key = bytes(range(32))
    m64 = crypto.prg_mask(key, 1000, 64)
    m32 = crypto.prg_mask(key, 1000, 32)
    assert m64.dtype == np.uint64 and m64.shape == (1000,)
    assert m32.dtype == np.uint32 and m32.shape == (1000,)
    np.testing.assert_array_equal(m64, crypto.prg_mask(key, 1000, 64))
    m64.flags.writeable = True  # the caller owns a writable copy
    # Same little-endian AES-CTR keystream in both widths.
    np.testing.assert_array_equal(crypto.prg_mask(key, 500, 64).view("<u4"), m32)
    assert crypto.prg_mask(key, 0, 64).shape == (0,)
    # Every key byte matters: the full 256-bit key is used, never a folded seed.
    for i in range(32):
        other = bytearray(key)
        other[i] ^= 0x80
        assert not np.array_equal(crypto.prg_mask(bytes(other), 8, 64), m64[:8])
    with pytest.raises(ParameterError):
        crypto.prg_mask(key, 10, 16)
    with pytest.raises(ParameterError):
        crypto.prg_mask(key[:16], 10, 64)


def test_prg_mask_is_the_zero_iv_aes256_ctr_keystream():
    # Known answer: AES-256 of the zero block under the zero key (first CTR block, IV 0).
    assert crypto.prg_mask(bytes(32), 2, 64).tobytes().hex() == "dc95c078a2408989ad48a21492842087"
    # Independent reference: AES-256-ECB of the big-endian counter blocks 0, 1, 2, ...
    key = hashlib.sha256(b"k").digest()
    ecb = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    blocks = b"".join(i.to_bytes(16, "big") for i in range(50))
    expected = np.frombuffer(ecb.update(blocks), dtype="<u8")
    np.testing.assert_array_equal(crypto.prg_mask(key, 100, 64), expected)


def test_prg_mask_top_and_bottom_bytes_are_uniform():
    words = crypto.prg_mask(b"\x5a" * 32, 2**16, 64)
    for byte in (words >> np.uint64(56), words & np.uint64(0xFF)):
        counts = np.bincount(byte.astype(np.int64), minlength=256)
        assert stats.chisquare(counts).pvalue > P_FLOOR
    # A broken PRG (one 16-byte block repeated) is caught by the same test.
    broken = np.tile(words[:2], 2**15)
    counts = np.bincount((broken >> np.uint64(56)).astype(np.int64), minlength=256)
    assert stats.chisquare(counts).pvalue < P_FLOOR


def test_signatures_verify_and_refuse_forgeries():
    alice, bob = crypto.signing_keypair(Stream(9)), crypto.signing_keypair(Stream(10))
    message = b"U3=1,2,3"
    signature = crypto.sign(alice.private, message)
    assert len(signature) == 64
    crypto.verify(alice.public, message, signature)
    forged = bytearray(signature)
    forged[5] ^= 1
    for public, msg, sig in [
        (alice.public, b"U3=1,2", signature),
        (bob.public, message, signature),
        (alice.public, message, bytes(forged)),
        (alice.public, message, signature[:-1]),
    ]:
        with pytest.raises(RemoteProtocolError) as info:
            crypto.verify(public, msg, sig)
        assert info.value.field == "signature"
    with pytest.raises(RemoteProtocolError) as info:
        crypto.verify(alice.public[:-1], message, signature)
    assert info.value.field == "public_key"


# ---------------------------------------------------------------------------- Shamir


def _interpolate(points: dict[int, int], x: int) -> int:
    """Reference Lagrange evaluation at ``x`` (naive, one inversion per term)."""
    total = 0
    for j, yj in points.items():
        term = yj
        for m in points:
            if m != j:
                term = term * (x - m) % PRIME * pow(j - m, -1, PRIME) % PRIME
        total += term
    return total % PRIME


def test_every_t_subset_reconstructs_n7_t4():
    secret = hashlib.sha256(b"s").digest()
    shares = shamir.split(secret, range(1, 8), 4, Stream(11))
    subsets = list(itertools.combinations(shares, 4))
    assert len(subsets) == 35
    for subset in subsets:
        assert shamir.combine({x: shares[x] for x in subset}, 4) == secret


def test_random_t_subsets_reconstruct_n11_t6():
    rng = random.Random(12)
    for trial in range(20):
        secret = hashlib.sha256(str(trial).encode()).digest()
        xs = rng.sample(range(1, 10**6), 11)
        shares = shamir.split(secret, xs, 6, Stream(trial))
        for _ in range(10):
            subset = rng.sample(xs, rng.randint(6, 11))
            assert shamir.combine({x: shares[x] for x in subset}, 6) == secret


@pytest.mark.parametrize("xs", [range(4000, 4026), [PRIME - 1 - 7 * i for i in range(26)]])
def test_split_and_combine_match_the_reference_for_small_and_huge_abscissae(xs):
    """Evaluation and interpolation reduce mod p lazily while values stay small: the
    shares are the reference polynomial's values and any t of them give the secret back,
    for device labels and for abscissae near p alike."""
    xs = list(xs)
    secret = hashlib.sha256(b"lazy").digest()
    shares = shamir.split(secret, xs, 14, Stream(31))
    assert all(0 <= y < PRIME for y in shares.values())
    first = {x: shares[x] for x in xs[:14]}  # degree 13: 14 points fix the polynomial
    assert all(_interpolate(first, x) == shares[x] for x in xs[14:])
    assert _interpolate(first, 0) == int.from_bytes(secret, "big")
    rng = random.Random(32)
    for _ in range(5):
        subset = rng.sample(xs, 14)
        assert shamir.combine({x: shares[x] for x in subset}, 14) == secret


def test_more_than_t_shares_use_the_t_smallest_x():
    secret = b"\x07" * 32
    shares = shamir.split(secret, range(1, 8), 3, Stream(13))
    corrupt = {**shares, 7: (shares[7] + 1) % PRIME}
    assert shamir.combine(corrupt, 3) == secret  # x = 7 is not among the 3 smallest
    corrupt_small = {**shares, 1: (shares[1] + 1) % PRIME}
    assert shamir.combine(corrupt_small, 3) != secret


def test_t_minus_one_shares_are_consistent_with_every_secret():
    secret_a, secret_b = b"A" * 32, b"B" * 32
    t = 4
    shares = shamir.split(secret_a, range(1, 8), t, Stream(14))
    known = {x: shares[x] for x in (2, 4, 6)}  # t - 1 shares
    with pytest.raises(ParameterError) as info:
        shamir.combine(known, t)
    assert info.value.field == "shares" and "need 4 shares" in str(info.value)
    # For each candidate secret there is a degree-(t-1) polynomial through (0, secret) and
    # the t - 1 known points; evaluating it at a fresh x gives a share completing the set.
    for secret in (secret_a, secret_b):
        through = {0: int.from_bytes(secret, "big"), **known}
        extra = _interpolate(through, 7)
        assert shamir.combine({**known, 7: extra}, t) == secret
        assert all(_interpolate(through, x) == y for x, y in known.items())
    # So the known shares plus a forged extra share give a different secret: B for the
    # constructed forgery, a shifted secret for a small offset, and, for a random value,
    # an out-of-range value that combine refuses.
    forged = _interpolate({0: int.from_bytes(secret_b, "big"), **known}, 7)
    assert forged != shares[7]
    assert shamir.combine({**known, 7: forged}, t) != secret_a
    try:  # an offset share shifts the secret by l_7 = 48/(-15) mod p: refused or different
        shifted = shamir.combine({**known, 7: (shares[7] + 1) % PRIME}, t)
    except ParameterError:
        shifted = None
    assert shifted != secret_a
    garbage = int.from_bytes(Stream(29)(66), "big") % PRIME  # e.g. a mis-decrypted share
    with pytest.raises(ParameterError):
        shamir.combine({**known, 7: garbage}, t)


def test_threshold_one_and_full_threshold():
    secret = b"\x01" * 32
    shares = shamir.split(secret, [3, 5, 9], 1, Stream(15))
    assert set(shares.values()) == {int.from_bytes(secret, "big")}
    shares = shamir.split(secret, [3, 5, 9], 3, Stream(15))
    assert shamir.combine(shares, 3) == secret
    with pytest.raises(ParameterError):
        shamir.combine({3: shares[3], 5: shares[5]}, 3)
    with pytest.raises(ParameterError) as info:
        shamir.combine({}, 1)
    assert info.value.field == "shares"


@pytest.mark.parametrize(
    ("xs", "threshold", "field"),
    [
        ([1, 2, 2], 2, "xs"),
        ([0, 1, 2], 2, "xs[0]"),
        ([1, PRIME], 2, "xs[1]"),
        ([1, True], 2, "xs[1]"),
        ([1, 2, 3], 0, "threshold"),
        ([1, 2, 3], 4, "threshold"),
    ],
)
def test_split_refuses_bad_abscissae_and_thresholds(xs, threshold, field):
    with pytest.raises(ParameterError) as info:
        shamir.split(b"\x00" * 32, xs, threshold)
    assert info.value.field == field


def test_secret_size_limits_and_overflow_detection():
    with pytest.raises(ParameterError) as info:
        shamir.split(b"\x01" * 65, [1, 2], 2)
    assert info.value.field == "secret"
    big = b"\x01" + b"\x00" * 32  # 33 bytes, value 2^256
    shares = shamir.split(big, range(1, 6), 3, Stream(16))
    with pytest.raises(ParameterError) as info:
        shamir.combine(shares, 3)  # length 32: 2^256 does not fit
    assert info.value.field == "shares"
    assert shamir.combine(shares, 3, length=33) == big
    max64 = b"\xff" * 64
    assert shamir.combine(shamir.split(max64, [1, 2, 3], 2, Stream(17)), 2, length=64) == max64
    short = b"\x00\x00\x09"
    assert shamir.combine(shamir.split(short, [1, 2], 2, Stream(18)), 2, length=3) == short


def test_coefficients_are_rejection_sampled_from_66_bytes():
    calls: list[int] = []
    stream = Stream(19)

    def biased_first(n: int) -> bytes:
        calls.append(n)
        return b"\xff" * n if len(calls) == 1 else stream(n)  # first draw masks to p: rejected

    shares = shamir.split(b"\x02" * 32, range(1, 4), 2, biased_first)
    assert calls == [66, 66]
    assert shamir.combine(shares, 2) == b"\x02" * 32
    # Same seed, same shares: the only randomness is the injected one.
    assert shamir.split(b"\x02" * 32, range(1, 4), 2, Stream(20)) == shamir.split(
        b"\x02" * 32, range(1, 4), 2, Stream(20)
    )


def test_share_bytes_round_trip_and_refusals():
    for y in (0, 1, PRIME - 1, 2**512 + 3):
        encoded = shamir.share_to_bytes(y)
        assert len(encoded) == 66
        assert shamir.share_from_bytes(encoded) == y
    for bad in (PRIME.to_bytes(66, "big"), b"\xff" * 66, b"\x00" * 65, b"\x00" * 67):
        with pytest.raises(RemoteProtocolError) as info:
            shamir.share_from_bytes(bad)
        assert info.value.field == "share"
    with pytest.raises(ParameterError):
        shamir.share_to_bytes(PRIME)
    with pytest.raises(ParameterError):
        shamir.combine({1: PRIME, 2: 0}, 2)


# ---------------------------------------------------------------------------- encoding


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"clip_low": float("nan"), "clip_high": 1.0, "scale": 10.0}, "clip_low"),
        ({"clip_low": 0.0, "clip_high": float("inf"), "scale": 10.0}, "clip_high"),
        ({"clip_low": 1.0, "clip_high": 1.0, "scale": 10.0}, "clip_high"),
        ({"clip_low": 0.0, "clip_high": 1.0, "scale": 0.0}, "scale"),
        ({"clip_low": 0.0, "clip_high": 1.0, "scale": -2.0}, "scale"),
        ({"clip_low": 0.0, "clip_high": 1.0, "scale": 0.1}, "scale"),  # rounds to 0 levels
        ({"clip_low": 0.0, "clip_high": 1.0, "scale": 2.0**60}, "scale"),  # beyond 2^53
        ({"clip_low": 0.0, "clip_high": 1.0, "scale": 10.0, "bits": 16}, "bits"),
        ({"clip_low": True, "clip_high": 2.0, "scale": 10.0}, "clip_low"),
    ],
)
def test_fixed_point_validation_names_the_field(kwargs, field):
    with pytest.raises(ParameterError) as info:
        FixedPoint(**kwargs)
    assert info.value.field == field


def test_encode_decode_round_trip_within_one_over_scale():
    fp = FixedPoint(-2.0, 3.0, 1000.0)
    x = np.random.default_rng(21).uniform(-2.0, 3.0, size=5000)
    encoded = fp.encode(x)
    assert encoded.dtype == np.uint64
    assert encoded.min() >= 0 and encoded.max() <= fp.max_encoded() == 5000
    decoded = fp.decode_sum(encoded, 1)
    assert np.max(np.abs(decoded - x)) <= 0.5 / fp.scale + 1e-12
    # n clients: the decoded sum is within n / (2 scale) of the clipped sum.
    xs = np.random.default_rng(22).uniform(-4.0, 5.0, size=(7, 100))
    total = np.zeros(100, dtype=np.uint64)
    for row in xs:
        total = encoding.add_mod(total, fp.encode(row), 64)
    expected = np.clip(xs, -2.0, 3.0).sum(axis=0)
    assert np.max(np.abs(fp.decode_sum(total, 7) - expected)) <= 7 * 0.5 / fp.scale + 1e-9


def test_encode_clips_and_refuses_nan():
    fp = FixedPoint(0.0, 1.0, 100.0, bits=32)
    encoded = fp.encode(np.array([-5.0, -np.inf, 0.0, 0.504, 1.0, 7.0, np.inf]))
    np.testing.assert_array_equal(encoded, [0, 0, 0, 50, 100, 100, 100])
    with pytest.raises(ParameterError) as info:
        fp.encode(np.array([0.1, 0.2, np.nan, 0.3]))
    assert info.value.field == "x[2]"
    with pytest.raises(ParameterError) as info:
        fp.encode(np.array([[0.1, 0.2], [0.3, np.nan]]))
    assert info.value.field == "x[1, 1]"


@pytest.mark.parametrize(
    ("bits", "scale", "field"), [(32, 2.0**16, "bits"), (64, 2.0**32, "scale")]
)
def test_capacity_refuses_exactly_at_the_wrap_boundary(bits, scale, field):
    fp = FixedPoint(0.0, 1.0, scale, bits=bits)
    n_max = 2**bits // fp.max_encoded()  # n_max * max_encoded == 2**bits exactly
    assert n_max * fp.max_encoded() == 2**bits
    fp.check_capacity(n_max - 1)
    with pytest.raises(ParameterError) as info:
        fp.check_capacity(n_max)
    assert info.value.field == field
    assert f"at most {n_max - 1} clients" in str(info.value)
    with pytest.raises(ParameterError):
        fp.decode_sum(np.zeros(3, dtype=np.uint64), n_max)
    with pytest.raises(ParameterError) as info:
        fp.check_capacity(0)
    assert info.value.field == "n_clients"


def test_capacity_blames_scale_when_even_64_bits_would_wrap():
    fp = FixedPoint(0.0, 1.0, 2.0**31, bits=32)
    fp.check_capacity(1)
    with pytest.raises(ParameterError) as info:
        fp.check_capacity(2)  # 2 * 2^31 = 2^32: would fit in 64 bits
    assert info.value.field == "bits"
    with pytest.raises(ParameterError) as info:
        fp.check_capacity(2**33)  # 2^33 * 2^31 = 2^64: no modulus here fits
    assert info.value.field == "scale"


def test_decode_sum_refuses_totals_above_n_times_max():
    fp = FixedPoint(0.0, 1.0, 10.0, bits=32)
    bound = 3 * fp.max_encoded()
    np.testing.assert_allclose(fp.decode_sum(np.array([0, bound], dtype=np.uint64), 3), [0, 3])
    with pytest.raises(ParameterError) as info:
        fp.decode_sum(np.array([0, bound + 1], dtype=np.uint64), 3)
    assert info.value.field == "total[1]"
    with pytest.raises(ParameterError):
        fp.decode_sum(np.array([0.5]), 3)
    with pytest.raises(ParameterError):
        fp.decode_sum(np.array([-1]), 3)


@pytest.mark.parametrize("bits", [32, 64])
def test_add_sub_mod_are_inverse_and_exact(bits):
    rng = np.random.default_rng(bits)
    top = 2**bits
    a = rng.integers(0, top, size=1000, dtype=np.uint64, endpoint=False)
    b = rng.integers(0, top, size=1000, dtype=np.uint64, endpoint=False)
    a[:2], b[:2] = top - 1, top - 1
    s = encoding.add_mod(a, b, bits)
    d = encoding.sub_mod(a, b, bits)
    assert s.dtype == d.dtype == np.uint64
    np.testing.assert_array_equal(encoding.sub_mod(s, b, bits), a)
    np.testing.assert_array_equal(encoding.add_mod(d, b, bits), a)
    ref_s = [(int(x) + int(y)) % top for x, y in zip(a, b, strict=True)]
    ref_d = [(int(x) - int(y)) % top for x, y in zip(a, b, strict=True)]
    assert s.tolist() == ref_s and d.tolist() == ref_d
    with pytest.raises(ParameterError):
        encoding.add_mod(np.array([-1]), b[:1], bits)


@pytest.mark.parametrize("bits", [32, 64])
def test_pairwise_masks_cancel_and_the_sum_decodes(bits):
    """The primitives compose: y_u = x_u + sum_v sign(u, v) PRG(k_uv) mod R sums to sum x_u."""
    fp = FixedPoint(0.0, 1.0, 1000.0, bits=bits)
    ids, length = [1, 2, 3, 4], 64
    fp.check_capacity(len(ids))
    xs = np.random.default_rng(23).uniform(0, 1, size=(len(ids), length))
    pair_keys = {}
    for u, v in itertools.combinations(ids, 2):
        pair_keys[(u, v)] = pair_keys[(v, u)] = hashlib.sha256(f"{u}-{v}".encode()).digest()
    total = np.zeros(length, dtype=np.uint64)
    for u, x in zip(ids, xs, strict=True):
        y = fp.encode(x)
        for v in ids:
            if v != u:
                mask = crypto.prg_mask(pair_keys[(u, v)], length, bits)
                y = encoding.add_mod(y, mask, bits) if u > v else encoding.sub_mod(y, mask, bits)
        assert not np.array_equal(y, fp.encode(x))
        total = encoding.add_mod(total, y, bits)
    assert np.max(np.abs(fp.decode_sum(total, len(ids)) - xs.sum(axis=0))) <= 4 * 0.5e-3 + 1e-9


# ---------------------------------------------------------------------------- graphs


def _check_symmetric(g: dict[int, tuple[int, ...]], ids: list[int]) -> None:
    assert list(g) == ids
    for u, neighbours in g.items():
        assert u not in neighbours
        assert len(set(neighbours)) == len(neighbours)
        assert list(neighbours) == sorted(neighbours)
        for v in neighbours:
            assert u in g[v]


def test_full_graph():
    ids = [5, 2, 9, 7]
    g = graph.full_graph(ids)
    _check_symmetric(g, ids)
    assert g[5] == (2, 7, 9) and g[2] == (5, 7, 9)
    assert graph.full_graph([4]) == {4: ()}
    with pytest.raises(ParameterError):
        graph.full_graph([1, 1])


def test_harary_graph_is_symmetric_with_documented_degrees():
    stream = Stream(24)
    for n in range(2, 26):
        ids = [10 * i + 3 for i in range(n)]
        for k in range(1, n):
            if k == 1 and n % 2 == 1:
                continue
            g = graph.harary_graph(ids, k, stream)
            _check_symmetric(g, ids)
            degrees = sorted(len(v) for v in g.values())
            if k % 2 == 1 and n % 2 == 1:
                assert degrees == [k - 1] + [k] * (n - 1), (n, k)
            else:
                assert degrees == [k] * n, (n, k)
            if k == n - 1:
                assert g == graph.full_graph(ids)


def test_harary_labels_come_from_the_injected_randomness():
    ids = list(range(40))
    assert graph.harary_graph(ids, 7, Stream(25)) == graph.harary_graph(ids, 7, Stream(25))
    assert graph.harary_graph(ids, 7, Stream(25)) != graph.harary_graph(ids, 7, Stream(26))
    # Without a shuffle node i would neighbour i +- 1..3 (and its antipode).
    ring = {i: tuple(sorted({(i + d) % 40 for d in (-3, -2, -1, 1, 2, 3, 20)})) for i in ids}
    assert graph.harary_graph(ids, 7, Stream(25)) != ring


def test_harary_shuffle_is_unbiased():
    # n = 5, k = 3: exactly one node has degree 2; under a uniform shuffle it is each id
    # with probability 1/5.
    stream = Stream(27)
    counts = [0] * 5
    for _ in range(3000):
        g = graph.harary_graph(range(5), 3, stream)
        counts[next(u for u, v in g.items() if len(v) == 2)] += 1
    assert stats.chisquare(counts).pvalue > P_FLOOR


@pytest.mark.parametrize(
    ("ids", "k"), [([1, 2, 3], 3), ([1, 2, 3], 0), ([1, 2, 3], 1), ([1, 1], 1)]
)
def test_harary_refusals(ids, k):
    with pytest.raises(ParameterError):
        graph.harary_graph(ids, k, Stream(28))


def test_default_degree_and_threshold():
    table = {2: 1, 3: 2, 4: 3, 5: 4, 6: 5, 8: 7, 9: 7, 16: 9, 100: 15, 200: 17, 1000: 21}
    assert {n: graph.default_degree(n) for n in table} == table
    for n in range(4, 2000):
        k = graph.default_degree(n)
        assert 3 <= k <= n - 1
        if k < n - 1:
            assert k % 2 == 1 and k >= 2 * np.log2(n) and k - 2 < 2 * np.log2(n)
    with pytest.raises(ParameterError):
        graph.default_degree(1)
    for degree in range(1, 60):
        t = graph.default_threshold(degree)
        assert 2 * t > degree >= 2 * (t - 1)  # strictly more than half, and the least such
    assert graph.default_threshold(17) == 9
    with pytest.raises(ParameterError):
        graph.default_threshold(0)
