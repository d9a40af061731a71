"""Cryptographic primitives of secure aggregation: key agreement, KDF, AEAD, mask PRG, signatures.

Theory of operation (Bonawitz et al., CCS 2017, section 4; Bell et al., CCS 2020, SecAgg+):

- Key agreement. Every device advertises two X25519 public keys per session: ``c_u`` (to
  encrypt the Shamir shares it sends to its neighbours) and ``s_u`` (to derive the pairwise
  masks). ``agree(private_u, public_v) == agree(private_v, public_u)`` is the raw 32-byte
  Diffie-Hellman secret; it is never used directly. ``agree`` takes the raw private key or
  the parsed key object: parsing (which also derives the public key) costs as much as the
  exchange itself (~32 µs each), so ``generate_keypair`` keeps the parsed object in the
  ``KeyPair`` and callers that agree many times pass that (``KeyPair.agreement_key()``).
- Key derivation. ``derive_key`` runs HKDF-SHA256 (RFC 5869, no salt) on the shared secret
  with the context ``ldpfleet/secagg/v1/{purpose}/{run}/{session}/{round}/{min}/{max}``: the
  purpose ("mask" or "enc") separates the mask PRG key from the share-encryption key, the
  run/session/round make every aggregation round use fresh pairwise masks under one key
  setup, and the unordered pair makes both ends derive the same key. The fields are
  separated by "/" and run/session may not contain "/", so the context is injective.
- Share encryption. AES-256-GCM with a fresh random 96-bit nonce prepended to the ciphertext;
  the caller binds the sender, receiver and round in the associated data. Any tampering
  fails authentication and is reported as a ``RemoteProtocolError``.
- Mask PRG. ``prg_mask`` expands a 32-byte key into ``length`` words mod 2^bits with the
  AES-256-CTR keystream (zero IV: each key is used for exactly one mask because the round
  and pair are in its HKDF context). The full 256-bit key keys the PRG: a key is never
  folded to fewer bits and never used to seed numpy's generators, so the masks are
  computationally indistinguishable from uniform and the sum of the masks hides each input.
- Signatures (active-adversary mode, Bonawitz section 6): Ed25519 over the raw messages.

Randomness is always injected as ``random_bytes(n) -> bytes`` (default ``os.urandom``); no
module-level RNG exists.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError

RandomBytes = Callable[[int], bytes]

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
SIGNATURE_BYTES = 64
INFO_PREFIX = b"ldpfleet/secagg/v1/"
PURPOSES = frozenset({"mask", "enc"})
_HKDF_NO_SALT = bytes(32)  # RFC 5869: no salt = HashLen (SHA-256: 32) zero bytes
# HMAC-SHA256 keyed with that salt (a public constant), its ipad and opad blocks hashed
# once: the key zero-padded to the 64-byte block, XORed with 0x36 / 0x5c (RFC 2104)
_EXTRACT_INNER = hashlib.sha256(bytes(b ^ 0x36 for b in _HKDF_NO_SALT.ljust(64, b"\0")))
_EXTRACT_OUTER = hashlib.sha256(bytes(b ^ 0x5C for b in _HKDF_NO_SALT.ljust(64, b"\0")))
# One immutable mode object for every mask (it only holds the zero IV): building it per
# call was ~2.5 of the ~13 µs a one-word mask costs (a device expands one mask per
# neighbour plus its self mask every round).
_ZERO_IV_CTR = modes.CTR(bytes(16))
# ``algorithms`` is a module wrapped for deprecation warnings: every attribute read runs a
# Python ``__getattr__``; the class is read once here
_AES = algorithms.AES


@dataclass(frozen=True)
class KeyPair:
    """A raw 32-byte private key and its 32-byte public key (X25519 or Ed25519).

    ``private`` is always the raw key (it is what a device Shamir-shares for dropout
    recovery). An X25519 pair may also hold the parsed key object ``x25519`` (not part of
    equality or repr): ``generate_keypair`` sets it because parsing the raw bytes again for
    every agreement cost ~32 µs a call, 67k calls and 20% of a 1,000-device session.
    """

    private: bytes
    public: bytes
    x25519: X25519PrivateKey | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_bytes(self.private, KEY_BYTES, "private")
        _check_bytes(self.public, KEY_BYTES, "public")
        if self.x25519 is not None and (
            not isinstance(self.x25519, X25519PrivateKey)
            or self.x25519.private_bytes_raw() != self.private
        ):
            raise ParameterError(
                "is not the key object of private",
                field="x25519",
                limit="the key object of private (value is its type, never the key)",
                value=type(self.x25519).__name__,
            )

    def agreement_key(self) -> X25519PrivateKey:
        """The X25519 private key object (the cached one, else parsed from ``private``)."""
        return self.x25519 if self.x25519 is not None else x25519_private_key(self.private)

    def __repr__(self) -> str:  # never print a private key into a log
        return f"KeyPair(public={self.public.hex()}, private=<redacted>)"


def _check_bytes(value: object, length: int, field: str) -> bytes:
    if not isinstance(value, bytes) or len(value) != length:
        got = f"{len(value)} bytes" if isinstance(value, bytes) else type(value).__name__
        raise ParameterError(
            f"must be exactly {length} bytes, got {got}",
            field=field,
            limit=f"exactly {length} bytes (value is the length or type, never the bytes)",
            value=got,
        )
    return value


def _draw(random_bytes: RandomBytes, n: int) -> bytes:
    out = random_bytes(n)
    if not isinstance(out, bytes) or len(out) != n:
        raise ParameterError(
            f"must return exactly {n} bytes when asked for {n}",
            field="random_bytes",
            limit=f"exactly {n} bytes (value is the length or type, never the bytes)",
            value=len(out) if isinstance(out, bytes) else type(out).__name__,
        )
    return out


def generate_keypair(random_bytes: RandomBytes = os.urandom) -> KeyPair:
    """A fresh X25519 key pair from 32 bytes of ``random_bytes`` (with its key object)."""
    private = _draw(random_bytes, KEY_BYTES)
    key = x25519_private_key(private)
    return KeyPair(private, key.public_key().public_bytes_raw(), key)


def x25519_private_key(private: bytes) -> X25519PrivateKey:
    """Parse a raw 32-byte X25519 private key (``ParameterError(field="private")`` if not)."""
    return X25519PrivateKey.from_private_bytes(_check_bytes(private, KEY_BYTES, "private"))


def public_from_private(private: bytes | X25519PrivateKey) -> bytes:
    """The raw X25519 public key of a raw private key (or of a parsed key object)."""
    key = private if isinstance(private, X25519PrivateKey) else x25519_private_key(private)
    return key.public_key().public_bytes_raw()


def agree(private: bytes | X25519PrivateKey, peer_public: bytes) -> bytes:
    """The raw X25519 shared secret (32 bytes) of our private key and a peer's public key.

    ``private`` is the raw 32-byte key or its parsed object (``KeyPair.agreement_key()``;
    pass that when agreeing repeatedly: parsing costs as much as the exchange). A peer key
    of the wrong length, or a low-order point (the exchange yields all zeros), raises
    ``ParameterError(field="public_key")``.
    """
    key = private if isinstance(private, X25519PrivateKey) else x25519_private_key(private)
    if not isinstance(peer_public, bytes) or len(peer_public) != KEY_BYTES:
        raise ParameterError(
            f"must be exactly {KEY_BYTES} bytes",
            field="public_key",
            limit=f"exactly {KEY_BYTES} bytes",
            value=peer_public,
        )
    try:
        return key.exchange(X25519PublicKey.from_public_bytes(peer_public))
    except ValueError as exc:  # cryptography refuses an all-zero (low-order) result
        raise ParameterError(
            "invalid X25519 public key (low-order point)",
            field="public_key",
            limit="a valid X25519 public key (not a low-order point)",
            value=peer_public,
        ) from exc


def _check_label(value: object, field: str) -> str:
    if not isinstance(value, str) or not value or "/" in value:
        raise ParameterError(
            f"must be a non-empty string without '/', got {value!r}",
            field=field,
            limit="a non-empty string without '/'",
            value=value,
        )
    return value


def _check_nonneg_int(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ParameterError(
            f"must be a non-negative integer, got {value!r}",
            field=field,
            limit="a non-negative integer",
            value=value,
        )
    return value


def derive_key(
    shared: bytes, *, purpose: str, run: str, session: str, round: int, a: int, b: int
) -> bytes:
    """HKDF-SHA256 (32 bytes, no salt) of a shared secret, bound to purpose/run/session/round/pair.

    The pair ``(a, b)`` is unordered: ``derive_key(..., a=u, b=v) == derive_key(..., a=v, b=u)``.
    """
    _check_bytes(shared, KEY_BYTES, "shared")
    if purpose not in PURPOSES:
        raise ParameterError(
            f"must be one of {sorted(PURPOSES)}, got {purpose!r}",
            field="purpose",
            limit=f"one of {sorted(PURPOSES)}",
            value=purpose,
        )
    _check_label(run, "run")
    _check_label(session, "session")
    _check_nonneg_int(round, "round")
    _check_nonneg_int(a, "a")
    _check_nonneg_int(b, "b")
    lo, hi = min(a, b), max(a, b)
    info = INFO_PREFIX + f"{purpose}/{run}/{session}/{round}/{lo}/{hi}".encode()
    # RFC 5869 written out with the standard library: no salt means a salt of HashLen zero
    # bytes (``_hkdf_extract``: PRK = HMAC(salt, shared)); 32 bytes of output are the
    # first block, T(1) = HMAC(PRK, info || 0x01). Bit for bit ``cryptography``'s HKDF
    # (tested), and cheaper (the ego-Facebook fleet derives ~200,000 keys in its θ search;
    # on 2026-12-05 here: this 6.8 us, two ``hmac.digest`` 9.2 us, ``cryptography`` 8.6 us).
    return hmac.digest(_hkdf_extract(shared), info + b"\x01", "sha256")


def _hkdf_extract(shared: bytes) -> bytes:
    """HKDF-Extract with no salt: PRK = HMAC-SHA256(key = 32 zero bytes, ``shared``),
    from the two SHA-256 states of that public key hashed once at import (RFC 2104:
    H((K ^ opad) || H((K ^ ipad) || m))); bit for bit ``hmac.digest`` (tested), at about
    a third of its cost (OpenSSL's one-shot HMAC sets up its key every call)."""
    inner = _EXTRACT_INNER.copy()
    inner.update(shared)
    outer = _EXTRACT_OUTER.copy()
    outer.update(inner.digest())
    return outer.digest()


def encrypt(
    key: bytes, plaintext: bytes, associated: bytes, random_bytes: RandomBytes = os.urandom
) -> bytes:
    """AES-256-GCM: ``nonce (12 bytes) || ciphertext || tag (16 bytes)``."""
    aead = AESGCM(_check_bytes(key, KEY_BYTES, "key"))
    nonce = _draw(random_bytes, NONCE_BYTES)
    return nonce + aead.encrypt(nonce, plaintext, associated)


def decrypt(key: bytes, ciphertext: bytes, associated: bytes) -> bytes:
    """Open an ``encrypt`` output; ``RemoteProtocolError(field="ciphertext")`` if not authentic."""
    aead = AESGCM(_check_bytes(key, KEY_BYTES, "key"))
    if not isinstance(ciphertext, bytes) or len(ciphertext) < NONCE_BYTES + TAG_BYTES:
        raise RemoteProtocolError(
            f"must be at least {NONCE_BYTES + TAG_BYTES} bytes", field="ciphertext"
        )
    try:
        return aead.decrypt(ciphertext[:NONCE_BYTES], ciphertext[NONCE_BYTES:], associated)
    except InvalidTag as exc:
        raise RemoteProtocolError("authentication failed", field="ciphertext") from exc


def prg_mask(key: bytes, length: int, bits: int) -> np.ndarray:
    """``length`` pseudorandom words mod 2^bits: the AES-256-CTR keystream, little-endian.

    ``bits=64`` gives a ``np.uint64`` array, ``bits=32`` a ``np.uint32`` array. The whole
    32-byte key keys AES-256; the IV is zero because every key masks exactly one vector.
    """
    _check_bytes(key, KEY_BYTES, "key")
    _check_nonneg_int(length, "length")
    if isinstance(bits, bool) or bits not in (32, 64):
        raise ParameterError(
            f"must be 32 or 64, got {bits!r}", field="bits", limit="32 or 64", value=bits
        )
    encryptor = Cipher(_AES(key), _ZERO_IV_CTR).encryptor()
    width = bits // 8
    # The keystream is written straight into the array the caller gets (``update_into``
    # wants block_size - 1 spare bytes: one extra block of words), from a shared zero
    # buffer: no zero ``bytes`` per call and no copy from the keystream's ``bytes`` into
    # the array (~20 of ~77 us for 10,000 words). CTR: finalize() adds nothing.
    words = np.empty(length + 16 // width, dtype=np.dtype("<u8") if bits == 64 else np.dtype("<u4"))
    encryptor.update_into(_zeros(length * width), memoryview(words).cast("B"))
    mask = words[:length]
    native = np.uint64 if bits == 64 else np.uint32
    return mask if mask.dtype == native else mask.astype(native)


_ZEROS = bytes(0)


def _zeros(nbytes: int) -> memoryview:
    """``nbytes`` zero bytes (a view of one shared, immutable buffer grown on demand)."""
    global _ZEROS
    if len(_ZEROS) < nbytes:
        _ZEROS = bytes(nbytes)
    return memoryview(_ZEROS)[:nbytes]


def signing_keypair(random_bytes: RandomBytes = os.urandom) -> KeyPair:
    """A fresh Ed25519 key pair (raw 32-byte seed and public key)."""
    private = _draw(random_bytes, KEY_BYTES)
    return KeyPair(private, signing_public_key(private))


def signing_public_key(private: bytes) -> bytes:
    """The raw Ed25519 public key of a raw 32-byte private key (seed)."""
    key = Ed25519PrivateKey.from_private_bytes(_check_bytes(private, KEY_BYTES, "private"))
    return key.public_key().public_bytes_raw()


def check_signing_public(public: object, field: str) -> bytes:
    """``public`` if it is a valid raw Ed25519 public key, else ``ParameterError(field)``."""
    key = _check_bytes(public, KEY_BYTES, field)
    try:
        Ed25519PublicKey.from_public_bytes(key)
    except ValueError as exc:
        raise ParameterError(
            "invalid Ed25519 public key", field=field, limit="a valid Ed25519 public key", value=key
        ) from exc
    return key


def sign(private: bytes, message: bytes) -> bytes:
    """The 64-byte Ed25519 signature of ``message``."""
    key = Ed25519PrivateKey.from_private_bytes(_check_bytes(private, KEY_BYTES, "private"))
    return key.sign(message)


def verify(public: bytes, message: bytes, signature: bytes) -> None:
    """Check an Ed25519 signature; ``RemoteProtocolError`` if it does not verify.

    A malformed public key is reported with ``field="public_key"``, every other failure
    (wrong length, wrong message, wrong signer) with ``field="signature"``.
    """
    if not isinstance(public, bytes) or len(public) != KEY_BYTES:
        raise RemoteProtocolError(f"must be exactly {KEY_BYTES} bytes", field="public_key")
    try:
        key = Ed25519PublicKey.from_public_bytes(public)
    except ValueError as exc:
        raise RemoteProtocolError("invalid Ed25519 public key", field="public_key") from exc
    if not isinstance(signature, bytes) or len(signature) != SIGNATURE_BYTES:
        raise RemoteProtocolError(f"must be exactly {SIGNATURE_BYTES} bytes", field="signature")
    try:
        key.verify(signature, message)
    except InvalidSignature as exc:
        raise RemoteProtocolError("does not verify", field="signature") from exc


def uniform_below(bound: int, random_bytes: RandomBytes = os.urandom) -> int:
    """A uniform integer in [0, bound) from ``random_bytes`` by rejection sampling: draw
    ceil(bits / 8) bytes, mask to the bit length of ``bound - 1``, retry if too large.
    Used for Shamir coefficients and the SecAgg+ random labelling."""
    if bound == 1:
        return 0
    nbits = (bound - 1).bit_length()
    nbytes = (nbits + 7) // 8
    mask = (1 << nbits) - 1
    while True:
        raw = random_bytes(nbytes)
        if not isinstance(raw, bytes) or len(raw) != nbytes:
            raise ParameterError(
                f"must return exactly {nbytes} bytes when asked for {nbytes}",
                field="random_bytes",
                limit=f"exactly {nbytes} bytes (value is the length or type, never the bytes)",
                value=len(raw) if isinstance(raw, bytes) else type(raw).__name__,
            )
        value = int.from_bytes(raw, "big") & mask
        if value < bound:
            return value
