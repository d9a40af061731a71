"""Where a device's privacy noise comes from: the run's seed, or the device's own entropy.

``[privacy] device_noise`` (and ``--device-noise`` on ``ldpfleet run`` / ``ldpfleet
fleet``) picks one of ``DEVICE_NOISE``:

* ``"seeded"`` (the default): each device's noise generator is derived from the run's seed
  and the device's index, so a seed gives the same reports and release on every transport
  and in every process — the reproducibility the figures in docs/ rely on. Whoever holds
  the seed (it is in the scenario and results.json) can replay every device's noise and
  remove it: the privacy claims say so (a ``covered = "trust"`` row).
* ``"os"``: each device's noise generator is seeded from operating-system entropy
  (``numpy.random.SeedSequence()`` with no entropy reads 128 bits from ``secrets``, i.e.
  ``os.urandom``), per device, kept in the device's memory (and its own state file, so a
  crashed device resumes its stream) and never written to results, ledgers or traces. No
  one can replay it, so the claims hold without trust in the seed's holder.

Only the privatisation draws take this generator: the stream's mechanism (SW and the
other per-device mechanisms), the bulk gateways' SW words (an AES-256 keyed PRF whose
256-bit key is, in "os" mode, drawn from ``os.urandom`` per gateway: protocol/bulk.py,
"Randomness", says why per gateway keeps the devices' noise independent), and a CADR-LDP device's
randomness (Pólya θ-search shares, NDOE's exponential mechanism, LPEA's randomised
response and shuffle, DSR's Laplace). The synthetic data, the graph, the dropout choosers
and the fault plan stay seeded in both modes, so two "os" runs of one seed see the same
data and differ only in the noise.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Callable, Iterator

import numpy as np
from ldpfleet.protocol.errors import ParameterError

__all__ = [
    "DEFAULT_DEVICE_NOISE",
    "DEVICE_NOISE",
    "bulk_noise_key",
    "cadr_noise_rng",
    "check_device_noise",
    "noise_rng",
    "stand_in_entropy",
]

DEVICE_NOISE = ("seeded", "os")
DEFAULT_DEVICE_NOISE = "seeded"


def check_device_noise(mode: object) -> str:
    """``mode`` if it is one of ``DEVICE_NOISE``, else a ``ParameterError`` naming the
    field, the allowed values and the value."""
    if mode not in DEVICE_NOISE:
        raise ParameterError(
            f"must be one of {', '.join(repr(m) for m in DEVICE_NOISE)}, got {mode!r}",
            field="device_noise",
            limit=f"one of {list(DEVICE_NOISE)}",
            value=mode,
        )
    return str(mode)


# the audits' stand-in for OS entropy (``stand_in_entropy``), None everywhere else
_STAND_IN: contextvars.ContextVar[Callable[[], np.random.Generator] | None] = (
    contextvars.ContextVar("ldpfleet_stand_in_entropy", default=None)
)


@contextlib.contextmanager
def stand_in_entropy(factory: Callable[[], np.random.Generator]) -> Iterator[None]:
    """Inside the block (this thread or task only), "os" mode's generators come from
    ``factory()`` instead of the operating system: for an audit that runs the "os" path
    many times and must be a fixed outcome of its own seed (collector/audit's
    ``gcdp-partitioned``: an independent stream per run, unknown to the observer it
    models). Never used by a run."""
    token = _STAND_IN.set(factory)
    try:
        yield
    finally:
        _STAND_IN.reset(token)


def _own_entropy() -> np.random.Generator:
    """A generator seeded from the operating system's entropy (never stored), or the
    audit's stand-in inside ``stand_in_entropy``."""
    factory = _STAND_IN.get()
    if factory is not None:
        return factory()
    return np.random.default_rng(np.random.SeedSequence())


def noise_rng(mode: str, seeded: Callable[[], np.random.Generator]) -> np.random.Generator:
    """A device's noise generator: ``seeded()`` when ``mode`` is "seeded", a generator
    from the device's own entropy when "os" (``seeded`` is then not called)."""
    if check_device_noise(mode) == "os":
        return _own_entropy()
    return seeded()


def cadr_noise_rng(mode: str, seed: int, index: int) -> np.random.Generator:
    """CADR-LDP device ``index``'s generator (all its draws are privatisation):
    ``default_rng([seed, index])`` when ``mode`` is "seeded", its own entropy when "os"."""
    return noise_rng(mode, lambda: np.random.default_rng([seed, index]))


def bulk_noise_key(mode: str) -> bytes | None:
    """A bulk gateway's 256-bit SW noise key (the key of its devices' PRF,
    ``protocol.bulk.NoisePrf``): ``None`` when ``mode`` is "seeded" (the gateway derives
    the run's key from the seed, ``protocol.bulk.seeded_noise_key``), 32 bytes of
    ``os.urandom`` when "os" (kept in the gateway's memory, never written)."""
    if check_device_noise(mode) == "seeded":
        return None
    return os.urandom(32)
