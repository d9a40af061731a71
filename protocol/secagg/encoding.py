"""Fixed-point encoding of real inputs into Z_R (R = 2^32 or 2^64) for secure aggregation.

Theory of operation (Bonawitz et al., CCS 2017, section 3: inputs are vectors over Z_R and
the server learns their sum mod R; Bell et al., CCS 2020, keep the same model):

- ``FixedPoint.encode`` clips each input to [clip_low, clip_high] (infinities clip to the
  bounds, NaN is refused), shifts it by -clip_low and scales it: e = rint((x - clip_low) *
  scale) (round half to even), an integer in [0, max_encoded] with max_encoded =
  round((clip_high - clip_low) * scale). Each element is off by at most 1/(2 scale).
- Masks cancel mod R, so the unmasked total is sum(e_u) mod R. That equals the true integer
  sum only if it cannot wrap: ``check_capacity`` refuses every configuration with
  n * max_encoded >= R instead of wrapping silently, and names the largest n that fits.
- ``decode_sum`` maps the total back: sum(x_u) ~ total / scale + n * clip_low (within
  n / (2 scale) per element). A total above n * max_encoded is impossible for honest
  inputs and is refused (it means a wrap, a wrong survivor count or a corrupted unmasking).
- ``add_mod``/``sub_mod`` do vectorised arithmetic mod 2^bits on uint64 arrays (numpy's
  uint64 arithmetic wraps mod 2^64; for 32 bits the result is masked to the low 32 bits).

The encoded width is also kept <= 2^53 so every encoded integer is exact in a float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from ldpfleet.protocol.errors import ParameterError

BITS = (32, 64)
MAX_FLOAT_EXACT = 2**53


def _check_real(value: object, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ParameterError(
            f"must be a finite real number, got {value!r}",
            field=field,
            limit="a finite real number",
            value=value,
        )
    return float(value)


def _check_n(n_clients: object) -> int:
    if isinstance(n_clients, bool) or not isinstance(n_clients, int) or n_clients < 1:
        raise ParameterError(
            f"must be an integer >= 1, got {n_clients!r}",
            field="n_clients",
            limit="an integer >= 1",
            value=n_clients,
        )
    return n_clients


def _check_bits(bits: int) -> int:
    if isinstance(bits, bool) or bits not in BITS:
        raise ParameterError(
            f"must be 32 or 64, got {bits!r}", field="bits", limit="32 or 64", value=bits
        )
    return int(bits)


def _index_field(name: str, index: tuple[int, ...]) -> str:
    return f"{name}[{', '.join(str(int(i)) for i in index)}]" if index else name


@dataclass(frozen=True)
class FixedPoint:
    """Clip to [clip_low, clip_high], scale by ``scale``, work mod R = 2**bits."""

    clip_low: float
    clip_high: float
    scale: float
    bits: int = 64

    def __post_init__(self) -> None:
        low = _check_real(self.clip_low, "clip_low")
        high = _check_real(self.clip_high, "clip_high")
        scale = _check_real(self.scale, "scale")
        bits = _check_bits(self.bits)
        if not low < high:
            raise ParameterError(
                f"must exceed clip_low={low!r}, got {high!r}",
                field="clip_high",
                limit=f"> clip_low={low!r}",
                value=high,
            )
        if not scale > 0:
            raise ParameterError(
                f"must be > 0, got {scale!r}", field="scale", limit="> 0", value=scale
            )
        width = (high - low) * scale
        if not math.isfinite(width) or round(width) < 1 or round(width) > MAX_FLOAT_EXACT:
            raise ParameterError(
                f"(clip_high - clip_low) * scale must round to an integer in [1, 2^53], "
                f"got {width!r}",
                field="scale",
                limit="(clip_high - clip_low) * scale rounds to an integer in [1, 2^53]",
                value=width,
            )
        for name, value in (("clip_low", low), ("clip_high", high), ("scale", scale)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "bits", bits)
        if round(width) >= 2**bits:
            raise ParameterError(
                f"one encoded value {round(width)} does not fit below 2^{bits}",
                field="scale",
                limit=f"one encoded value below 2^{bits}",
                value=round(width),
            )

    def max_encoded(self) -> int:
        """The largest encoded value, round((clip_high - clip_low) * scale)."""
        return round((self.clip_high - self.clip_low) * self.scale)

    def check_capacity(self, n_clients: int) -> None:
        """Refuse configurations that can wrap: require n_clients * max_encoded < 2**bits."""
        n = _check_n(n_clients)
        top = self.max_encoded()
        if n * top < 2**self.bits:
            return
        largest = (2**self.bits - 1) // top
        if self.bits == 32 and n * top < 2**64:
            field, hint = "bits", "use bits=64"
        else:
            field, hint = "scale", "lower the scale or narrow the clip range"
        raise ParameterError(
            f"{n} clients * max_encoded {top} >= 2^{self.bits} would wrap; at most {largest} "
            f"clients fit ({hint})",
            field=field,
            limit=f"n clients * max_encoded < 2^{self.bits}: at most {largest} clients (value: n)",
            value=n,
        )

    def encode(self, x: np.ndarray) -> np.ndarray:
        """Clip, shift, scale and round to uint64 values in [0, max_encoded]; NaN is refused."""
        arr = np.asarray(x, dtype=np.float64)
        nan = np.isnan(arr)
        if nan.any():
            index = tuple(np.argwhere(nan)[0])
            raise ParameterError(
                "must not be NaN",
                field=_index_field("x", index),
                limit="not NaN",
                value=float(arr[index]),
            )
        clipped = np.clip(arr, self.clip_low, self.clip_high)
        scaled = np.rint((clipped - self.clip_low) * self.scale)
        return np.minimum(scaled, float(self.max_encoded())).astype(np.uint64)

    def decode_sum(self, total: np.ndarray, n_clients: int) -> np.ndarray:
        """The float sum of n clients' clipped inputs from their total mod R."""
        n = _check_n(n_clients)
        self.check_capacity(n)
        arr = np.asarray(total)
        if arr.dtype.kind not in "ui":
            raise ParameterError(
                f"must be an integer array, got dtype {arr.dtype}",
                field="total",
                limit="an integer array (value is the dtype)",
                value=arr.dtype,
            )
        if arr.dtype.kind == "i" and (arr < 0).any():
            index = tuple(np.argwhere(arr < 0)[0])
            raise ParameterError(
                "must be non-negative",
                field=_index_field("total", index),
                limit="non-negative",
                value=int(arr[index]),
            )
        arr = arr.astype(np.uint64)
        bound = n * self.max_encoded()  # < 2**bits <= 2**64 after check_capacity
        over = arr > np.uint64(bound)
        if over.any():
            index = tuple(np.argwhere(over)[0])
            raise ParameterError(
                f"exceeds n_clients * max_encoded = {bound}: the sum wrapped or is corrupt",
                field=_index_field("total", index),
                limit=f"<= n_clients * max_encoded = {bound}",
                value=int(arr[index]),
            )
        return arr.astype(np.float64) / self.scale + n * self.clip_low


def _as_u64(a: object, field: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.dtype.kind == "u":
        return arr.astype(np.uint64, copy=False)
    if arr.dtype.kind == "i" and not (arr < 0).any():
        return arr.astype(np.uint64)
    raise ParameterError(
        f"must be an unsigned (or non-negative integer) array, got dtype {arr.dtype}",
        field=field,
        limit="an unsigned (or non-negative integer) array (value is the dtype)",
        value=arr.dtype,
    )


def low_bits(total: np.ndarray, bits: int) -> np.ndarray:
    """A uint64 array taken mod 2^bits (``bits`` 32 or 64, already checked): what every
    modular sum here ends with, and what a sum accumulated in place mod 2^64 is reduced by
    once at the end (reducing after every step gives the same)."""
    return total if bits == 64 else total & np.uint64(0xFFFFFFFF)


def add_mod(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    """(a + b) mod 2**bits, elementwise, as uint64."""
    bits = _check_bits(bits)
    x, y = _as_u64(a, "a"), _as_u64(b, "b")
    with np.errstate(over="ignore"):
        out = np.add(x, y, dtype=np.uint64)
    return low_bits(out, bits)


def sub_mod(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    """(a - b) mod 2**bits, elementwise, as uint64."""
    bits = _check_bits(bits)
    x, y = _as_u64(a, "a"), _as_u64(b, "b")
    with np.errstate(over="ignore"):
        out = np.subtract(x, y, dtype=np.uint64)
    return low_bits(out, bits)
