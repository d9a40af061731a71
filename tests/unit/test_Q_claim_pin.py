"""A pin of every privacy claim ``protocol.cadr_budget`` builds (helper Q, a pure refactor:
the claim is now built once with its device-noise row and clip caveat instead of being
built "seeded" and restated). Written and committed BEFORE the refactor; the digest must
not move.

The grid: both pipelines, searched or a given θ, every run method (ll, lh, ra, er, clip),
two ε and two fleet sizes (the split differs), the small-fleet rule on and off, no degree
bound and each of its three sources, no deadline / a held deadline / an overrun, and every
device-noise value a claim can state ("seeded", "os", None, a "mixed" fleet, and the
default). Each claim is then restated to each noise value (``restate_device_noise``, a
split run's merge). The serialisation keeps key order (results.json is written without
``sort_keys``) and floats by ``repr`` (exact)."""

from __future__ import annotations

import hashlib
import itertools
import json

from ldpfleet.protocol.cadr_budget import CadrBudget, privacy_claim, restate_device_noise
from ldpfleet.protocol.errors import ParameterError

METHODS = ("ll", "lh", "ra", "er", "clip")
NOISES = ("seeded", "os", None, "mixed")
DEFAULT = "default"  # privacy_claim called without device_noise
DEADLINES = ((0.0, None), (60.0, {}), (60.0, {"lpea": 12.5, "ndoe": 1.0}))

# sha256 of the serialised grid below, before the refactor (main a4dee010:
# b52f55813b71ca9bcf05c820e9b8c0c65b11af0ee2337b52d5393bda70c5312b); moved on purpose by
# privacy review V2 (2026-12-07, commit 4ef9c5d6): the negotiated methods' peer-graph row is
# covered "no" and NDOE/LPEA name who sees them (tests/unit/test_V2_peer_graph_claim.py)
CLAIMS_DIGEST = "f881a10db24205ef2550de9be69a9b61ff3c88314210723078f7fe454b879777"
CLAIMS_COUNT = 51000


def _bounds(n: int) -> tuple:
    return (None, (n - 1, "devices"), (5, "configured"), (9, "graph-max"))


def _budgets():
    """(id, budget) for every split the claim reads: for_pipeline's, plus the paper's raw
    split (f = 0) under a searched θ."""
    for pipeline, searched, method, eps, n in itertools.product(
        ("dp", "paper"), (True, False), METHODS, (0.5, 3.0), (20, 4039)
    ):
        try:
            budget = CadrBudget.for_pipeline(eps, 0.1, pipeline, searched, n, method)
        except ParameterError:
            continue
        yield (pipeline, searched, method, eps, n), searched, method, n, budget
    for method in METHODS:
        budget = CadrBudget(3.0, 0.1, 0.0, negotiation=method != "clip")
        yield ("raw", True, method, 3.0, 4039), True, method, 4039, budget


def _claims():
    for key, searched, method, n, budget in _budgets():
        for small, bound, (deadline, overrun), noise in itertools.product(
            (False, True), _bounds(n), DEADLINES, (*NOISES, DEFAULT)
        ):
            kwargs = dict(
                deadline=deadline,
                overrun=overrun,
                theta_searched=searched,
                degree_bound=bound,
                small_fleet=small,
            )
            if noise != DEFAULT:
                kwargs["device_noise"] = noise
            claim = privacy_claim(budget, method, **kwargs)
            yield [list(key), small, bound, deadline, overrun, noise], claim
            for after in NOISES:
                yield (
                    [list(key), small, bound, deadline, overrun, noise, "restated", after],
                    (restate_device_noise(claim, after)),
                )


def _digest() -> tuple[str, int]:
    h = hashlib.sha256()
    count = 0
    for case, claim in _claims():
        h.update(json.dumps([case, claim], ensure_ascii=False).encode())
        h.update(b"\n")
        count += 1
    return h.hexdigest(), count


def test_every_claim_is_the_pinned_one():
    digest, count = _digest()
    assert count == CLAIMS_COUNT
    assert digest == CLAIMS_DIGEST
