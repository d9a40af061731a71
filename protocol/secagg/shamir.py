"""Shamir t-of-n secret sharing over the Mersenne prime field GF(2^521 - 1).

Theory of operation (Shamir 1979; used by Bonawitz et al., CCS 2017, and Bell et al.,
CCS 2020, to recover a dropped device's mask key and a survivor's self-mask seed):

- ``split`` reads the secret (at most 64 bytes, big-endian, so always < p = 2^521 - 1) as
  the constant term of a polynomial f of degree t - 1 whose other t - 1 coefficients are
  uniform in [0, p) (rejection sampling: 66 random bytes masked to 521 bits, redrawn in
  the 2^-521 event that the value equals p). Share x is (x, f(x)) for distinct x in
  [1, p - 1].
- ``combine`` interpolates f(0) from exactly t shares (the t smallest x when more are
  given) with the Lagrange coefficients l_j = prod_{m != j} x_m / (x_m - x_j). The
  coefficients depend only on the x set; they are computed with one modular inversion
  (Montgomery's batch-inversion trick) and cached, because the collector reconstructs many
  secrets from the same responders.
- Privacy: any t - 1 shares are consistent with every secret (for each candidate secret
  there is exactly one polynomial of degree t - 1 through it and the t - 1 points), so they
  reveal nothing. Integrity: Shamir has none by itself. A share set containing a garbage
  share (random bytes, a share decrypted under the wrong key) interpolates to an
  essentially uniform field element, which exceeds 32 bytes with probability 1 - 2^-265,
  and ``combine`` refuses such a result instead of returning garbage. A deliberately
  chosen share (e.g. the true value plus a small offset) is NOT detected: it shifts the
  secret by offset * l_j. Against an active adversary the shares' integrity comes from the
  authenticated encryption between devices (AES-GCM), not from this check.

Shares travel as 66-byte big-endian integers (``share_to_bytes``/``share_from_bytes``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.secagg.crypto import uniform_below

RandomBytes = Callable[[int], bytes]

PRIME = 2**521 - 1
SHARE_BYTES = 66
MAX_SECRET_BYTES = 64
# Polynomial evaluation (``split``) and the Lagrange denominators reduce mod p only once a
# value passes 2^1100: the abscissae are device labels (< 2^14), so a Horner step grows y
# by at most 14 bits and a share needs one reduction instead of one per coefficient (a
# split over 26 holders went from ~90 µs to ~57 µs; every device splits twice a session).
# Large abscissae are still reduced (almost) every step.
_LAZY_BOUND = 1 << 1100


def _check_x(x: object, field: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or not 1 <= x < PRIME:
        raise ParameterError(
            f"share abscissa must be an integer in [1, p - 1], got {x!r}",
            field=field,
            limit="an integer in [1, p - 1]",
            value=x,
        )
    return x


def _check_threshold(threshold: object) -> int:
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        raise ParameterError(
            f"must be an integer >= 1, got {threshold!r}",
            field="threshold",
            limit="an integer >= 1",
            value=threshold,
        )
    return threshold


def split(
    secret: bytes, xs: Sequence[int], threshold: int, random_bytes: RandomBytes = os.urandom
) -> dict[int, int]:
    """Shares ``{x: f(x)}`` of ``secret`` for each x in ``xs``; any ``threshold`` recover it."""
    if not isinstance(secret, bytes) or len(secret) > MAX_SECRET_BYTES:
        raise ParameterError(
            f"must be at most {MAX_SECRET_BYTES} bytes",
            field="secret",
            limit=f"bytes, at most {MAX_SECRET_BYTES} (value: its length or type)",
            value=len(secret) if isinstance(secret, bytes) else type(secret).__name__,
        )
    points = [_check_x(x, f"xs[{i}]") for i, x in enumerate(xs)]
    if len(set(points)) != len(points):
        raise ParameterError(
            "share abscissae must be distinct",
            field="xs",
            limit="distinct abscissae (value is the first repeated one)",
            value=next(x for x in points if points.count(x) > 1),
        )
    threshold = _check_threshold(threshold)
    if threshold > len(points):
        raise ParameterError(
            f"must be at most the number of shares {len(points)}, got {threshold}",
            field="threshold",
            limit=f"<= the number of shares {len(points)}",
            value=threshold,
        )
    # Coefficients from the highest degree down to the constant term, for Horner's rule.
    # uniform in [0, p): p = 2^521 - 1 is all ones, so 66 bytes masked to 521 bits
    coefficients = [uniform_below(PRIME, random_bytes) for _ in range(threshold - 1)]
    coefficients.append(int.from_bytes(secret, "big"))
    shares: dict[int, int] = {}
    for x in points:
        y = 0
        for c in coefficients:
            y = y * x + c
            if y >= _LAZY_BOUND:
                y %= PRIME
        shares[x] = y % PRIME
    return shares


@lru_cache(maxsize=4096)
def _lagrange_at_zero(xs: tuple[int, ...]) -> tuple[int, ...]:
    """l_j = prod_{m != j} x_m / (x_m - x_j) mod p, with a single modular inversion.

    Written as l_j = X / (x_j * prod_{m != j} (x_m - x_j)) with X = prod_m x_m, so the
    numerator is computed once; the denominators are reduced lazily like ``split``'s
    Horner steps (for small labels they are products of small integers)."""
    numerator = 1
    for x in xs:
        numerator = numerator * x % PRIME
    denominators: list[int] = []
    for j, xj in enumerate(xs):
        den = xj
        for m, xm in enumerate(xs):
            if m != j:
                den *= xm - xj
                if abs(den) >= _LAZY_BOUND:
                    den %= PRIME
        denominators.append(den % PRIME)
    # Batch inversion: prefix products, one pow(-1), then walk back.
    prefix = [1]
    for d in denominators:
        prefix.append(prefix[-1] * d % PRIME)
    inverse = pow(prefix[-1], -1, PRIME)
    coefficients = [0] * len(xs)
    for j in range(len(xs) - 1, -1, -1):
        inv_dj = inverse * prefix[j] % PRIME
        inverse = inverse * denominators[j] % PRIME
        coefficients[j] = numerator * inv_dj % PRIME
    return tuple(coefficients)


def combine(shares: Mapping[int, int], threshold: int, length: int = 32) -> bytes:
    """Recover the secret from exactly ``threshold`` shares (the smallest x if more are given).

    Returns ``length`` big-endian bytes; ``ParameterError(field="shares")`` if fewer than
    ``threshold`` shares are given or the interpolated value does not fit in ``length``
    bytes (a wrong or corrupted share set).
    """
    threshold = _check_threshold(threshold)
    if (
        isinstance(length, bool)
        or not isinstance(length, int)
        or not 1 <= length <= MAX_SECRET_BYTES
    ):
        raise ParameterError(
            f"must be an integer in [1, {MAX_SECRET_BYTES}], got {length!r}",
            field="length",
            limit=f"an integer in [1, {MAX_SECRET_BYTES}]",
            value=length,
        )
    if len(shares) < threshold:
        raise ParameterError(
            f"need {threshold} shares to reconstruct, got {len(shares)}",
            field="shares",
            limit=f"at least {threshold} shares (value is the count)",
            value=len(shares),
        )
    for x, y in shares.items():
        _check_x(x, "shares")
        if isinstance(y, bool) or not isinstance(y, int) or not 0 <= y < PRIME:
            raise ParameterError(
                f"share value at x={x} must be an integer in [0, p)",
                field="shares",
                limit="an integer in [0, p) (value: its type, never the share)",
                value=type(y).__name__,
            )
    xs = tuple(sorted(shares)[:threshold])
    secret = sum(lj * shares[x] for lj, x in zip(_lagrange_at_zero(xs), xs, strict=True)) % PRIME
    if secret >= 1 << (8 * length):
        raise ParameterError(
            f"reconstructed value does not fit in {length} bytes: wrong or corrupted shares",
            field="shares",
            limit=f"fits in {length} bytes (value: its bit length, never the value)",
            value=secret.bit_length(),
        )
    return secret.to_bytes(length, "big")


def share_to_bytes(y: int) -> bytes:
    """A share value as 66 big-endian bytes."""
    if isinstance(y, bool) or not isinstance(y, int) or not 0 <= y < PRIME:
        raise ParameterError(
            "must be an integer in [0, p)",
            field="share",
            limit="an integer in [0, p) (value: its type, never the share)",
            value=type(y).__name__,
        )
    return y.to_bytes(SHARE_BYTES, "big")


def share_from_bytes(b: bytes) -> int:
    """Parse a peer's 66-byte share; ``RemoteProtocolError(field="share")`` if malformed."""
    if not isinstance(b, bytes) or len(b) != SHARE_BYTES:
        raise RemoteProtocolError(f"must be exactly {SHARE_BYTES} bytes", field="share")
    y = int.from_bytes(b, "big")
    if y >= PRIME:
        raise RemoteProtocolError("share value is not below the field prime", field="share")
    return y
