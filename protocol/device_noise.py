"""Which wording a privacy claim takes for the devices' noise source — theory of operation.

A device draws its privatising noise either from a generator seeded by the run's seed
("seeded": results.json holds the seed, so its holder can replay the noise) or from its own
OS entropy ("os": nobody can replay it); devices.noise_entropy makes that choice. A claim
that covers device noise states which: the CADR-LDP claim's noise row and clip caveat
(``protocol.cadr_budget``) and the stream claim's sentence
(``collector.analytics.privacy_entry``). A split run's collector side cannot tell (None,
"unknown" wording); a merged split run whose shards differ is "mixed", which keeps the
seeded caveat because some shards seeded. This module is that one three-way choice, so
every claim reads the mode the same way.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["by_device_noise"]

T = TypeVar("T")


def by_device_noise(device_noise: str | None, *, seeded: T, os: T, unknown: T) -> T:
    """The wording for the devices' noise source ``device_noise``: ``os`` for "os",
    ``unknown`` for None (a split run's collector, which cannot tell), ``seeded`` for
    anything else — "seeded", and a "mixed" fleet (some shards seeded, so the seeded caveat
    applies)."""
    if device_noise == "os":
        return os
    if device_noise is None:
        return unknown
    return seeded
