"""Helper R (review): LPEA's shared Warner coin (protocol.lpea._warner, an lru_cache keyed by
(WarnerRR, eps)) must not outlive a planted mutant that patches WarnerRR itself
("rr eps off by 2x" patches WarnerRR.__post_init__, so the key is the same class object)."""

from __future__ import annotations

import math

import numpy as np
from ldpfleet.collector.audit.mutants import mutant_named, planted
from ldpfleet.protocol.lpea import LpeaNode

EPS = 0.731  # a budget no other test is likely to have cached


def _node(eps: float) -> LpeaNode:
    return LpeaNode("r1", "a", {"b": 1}, 1, eps, np.random.default_rng(0))


def test_a_node_built_under_the_rr_mutant_answers_at_the_mutant_p() -> None:
    _node(EPS)  # an earlier (honest) run in the same process fills the cache
    with planted(mutant_named("rr eps off by 2x")):
        node = _node(EPS)
        # without the cache: WarnerRR(EPS) built under the mutant has p for 2 EPS
        assert math.isclose(node.rr.p, 1.0 / (1.0 + math.exp(-2.0 * EPS)))


def test_a_coin_built_under_the_rr_mutant_does_not_outlive_it() -> None:
    eps = EPS + 0.001
    with planted(mutant_named("rr eps off by 2x")):
        _node(eps)  # fills the cache with the mutant's coin
    node = _node(eps)  # mutant undone: an honest node must answer at eps
    assert math.isclose(node.rr.p, 1.0 / (1.0 + math.exp(-eps)))
