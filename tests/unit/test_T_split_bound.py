"""``bench secagg``'s ``abort_probability_at_most`` covers a split survivors' graph.

Held-out QA (helper T, 2026-12-06): ``ldpfleet bench secagg --devices 20 --dim 1
--neighbors 2 --dropout 0.1`` reported ``abort_probability_at_most`` 0.316 (the holder
rule's bound alone) while every seed aborted: two dropouts cut the ring and the server
refuses to unmask a split graph. ``split_probability_bound`` adds that cause; here it is
checked against every dropped set of small graphs (exhaustive, no sampling).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from ldpfleet.app.bench_secagg import abort_risk, bench_secagg
from ldpfleet.protocol.secagg import graph as graphs
from ldpfleet.protocol.secagg.graph import split_probability_bound


def _fixed_bytes(seed: int):
    rng = np.random.default_rng(seed)
    return lambda n: rng.bytes(n)


def _split_share(n: int, k: int, dropping: int) -> float:
    """The exact share of dropped sets (all of them, equally likely) that split the
    survivors' Harary graph: the dropped set is uniform, so one labelling serves all."""
    ids = list(range(1, n + 1))
    neighbours = graphs.harary_graph(ids, k, random_bytes=_fixed_bytes(n * 100 + k))
    sets = list(itertools.combinations(ids, dropping))
    split = sum(
        len(graphs.components(neighbours, frozenset(ids) - frozenset(dropped))) > 1
        for dropped in sets
    )
    return split / len(sets)


def test_the_ring_is_exact() -> None:
    # any two non-adjacent dropouts cut a ring of 20: 170 of the 190 pairs
    assert _split_share(20, 2, 2) == pytest.approx(170 / 190)
    assert split_probability_bound(20, 2, 2) == pytest.approx(170 / 190)


@pytest.mark.parametrize(
    ("n", "k", "dropping"),
    [(12, 2, 3), (12, 3, 2), (12, 3, 4), (11, 3, 4), (12, 4, 4), (12, 4, 5), (13, 5, 6),
     (14, 6, 6), (10, 9, 4), (12, 4, 1)],
)  # fmt: skip
def test_bound_holds_on_every_dropped_set(n: int, k: int, dropping: int) -> None:
    # exhaustive: the bound may be loose, never below the exact share
    assert split_probability_bound(n, k, dropping) >= _split_share(n, k, dropping) - 1e-12


def test_default_degrees_are_unchanged() -> None:
    # at the default degree the split term is negligible: the documented figures stand
    assert split_probability_bound(200, 11, 20) < 1e-6
    assert abort_risk(200, 0.1, 11, False)["abort_probability_at_most"] == pytest.approx(0.0591)
    assert split_probability_bound(100, 99, 40) == 0.0  # the full graph never splits


def test_risk_names_the_split_and_not_after_masked() -> None:
    risk = abort_risk(20, 0.1, 2, False)
    assert risk["abort_probability_at_most"] >= 170 / 190
    (sentence,) = risk["warnings"]
    assert "split" in sentence
    # a device that leaves after its masked input stays in U3: no split term
    masked = abort_risk(20, 0.1, 2, False, "after_masked")
    assert masked["abort_probability_at_most"] < risk["abort_probability_at_most"]


@pytest.mark.parametrize("seed", [0, 3])
def test_bench_reports_a_bound_above_what_happens(seed: int) -> None:
    import asyncio

    result = asyncio.run(bench_secagg(20, 1, neighbors=2, dropout=0.1, seed=seed))
    assert "splits into 2 parts" in (result["aborted"] or "")
    assert result["abort_probability_at_most"] >= 0.89
