"""Same-draws pins of the heaviest audit samplers (helper A, 2026-12-07, claim A6).

The speed-ups of ``protocol.validate`` (fast paths for plain floats and ints), of the LPEA
machine (``protocol.lpea``: the refusal checks and the invariant in their common case, one
``WarnerRR`` per float budget) and of the graph canaries' delivery loop must not change a
single draw: these digests (the sampled outputs and the generator state after) were
computed on main at 4cc93040, before the changes (``/tmp/A/pin_values.py``)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from ldpfleet.collector.audit import cadr_count_canary as count
from ldpfleet.collector.audit import graph_canaries as graph

GRAPH_DIGESTS = {
    "star-d": "31276ca9052c03d66338a428",
    "star-dprime": "c5fe484c6b2c6646c7817071",
    "star-edge-d": "fbe3d781c1d20b84217b75c5",
    "star-edge-dprime": "55e39483a2f5838c364f596d",
    "er-d": "87354e6cabe234a84d9dee2b",
    "er-dprime": "f8bb2eb4d772b0007514d9e9",
    "connected-d": "a48a8b4d5b70a33f45cae4ed",
    "connected-dprime": "9cd7a557f64029903bc317fc",
}
COUNT_DIGESTS = {
    "dropout-0.5": "72dba28ad3ec340c09d8e093",
    "count-0.5": "afbf59424f4b21270a09f7e1",
    "dropout-2.0": "d2f74753e55b04beed2a3780",
    "count-2.0": "908d4323b92ebcc5cc35421c",
}


def _digest(arr: np.ndarray, rng: np.random.Generator) -> str:
    h = hashlib.sha256(np.ascontiguousarray(arr).tobytes())
    h.update(repr(rng.bit_generator.state).encode())
    return h.hexdigest()[:24]


@pytest.mark.parametrize("kind", ["star", "star-edge", "er", "connected"])
def test_graph_canary_runs_are_the_same_draws(kind: str) -> None:
    canary = graph.graph_audit_canary(graph.construction(kind), graph.THETA, 1.0)
    for world, sample in (("d", canary.sample_d), ("dprime", canary.sample_dprime)):
        rng = np.random.default_rng(20261207)
        assert _digest(sample(rng, 12), rng) == GRAPH_DIGESTS[f"{kind}-{world}"]


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_count_canary_runs_are_the_same_draws(eps: float) -> None:
    rng = np.random.default_rng(7)
    assert _digest(count._dropout_releases(eps, 8, rng, 40), rng) == COUNT_DIGESTS[f"dropout-{eps}"]
    rng = np.random.default_rng(8)
    assert _digest(count._count_batch(eps, 0, rng, 40), rng) == COUNT_DIGESTS[f"count-{eps}"]
