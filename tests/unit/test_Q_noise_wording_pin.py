"""A pin of the stream claim's device-noise sentence (``collector.analytics.privacy_entry``),
written before helper Q routes it through the one seeded / os / unknown wording helper
(``protocol.device_noise.by_device_noise``) that the CADR claim uses: the same entries for
every noise value a run can state ("seeded", "os", None, a "mixed" fleet, the default),
with a local mechanism and the central release's ("raw"), and a ledger or none."""

from __future__ import annotations

import hashlib
import json

from ldpfleet.collector.analytics import privacy_entry
from ldpfleet.protocol.stream import StreamConfig

NOISES = ("seeded", "os", None, "mixed", "default")
LEDGERS = (
    {},
    {"max_window_spent": 2.0000000000000018, "devices": {"d0": {}, "d1": {}}},
    {"collector": {"accounts": {"a": {"max_window_spent": 0.5, "eps": 1.0}}}},
)
# sha256 of the entries below, before the refactor (main a4dee010); since privacy review V2
# (2026-12-07) each entry also states ``public``, ``seen_in_clear`` (raw) and ``caveats``
# (noise the seed cannot replay): the claims' wording itself unchanged
ENTRIES_DIGEST = "d6abc30b96126f2c5dcbe3b75c5ff332b2551e522b539012df1140ef556f544f"


def _entries():
    for mechanism in ("sw", "raw"):
        config = StreamConfig(run="r", mechanism=mechanism, eps=2.0, w=5, steps=20,
                              batch_steps=5, lo=0.0, hi=1.0)  # fmt: skip
        for ledger in LEDGERS:
            for noise in NOISES:
                args = (ledger, config) if noise == "default" else (ledger, config, noise)
                yield [mechanism, ledger, noise], privacy_entry(*args)


def _digest() -> str:
    return hashlib.sha256(json.dumps(list(_entries()), ensure_ascii=False).encode()).hexdigest()


def test_every_stream_claim_is_the_pinned_one():
    assert _digest() == ENTRIES_DIGEST
