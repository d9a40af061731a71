"""``protocol.secagg.graph.abort_probability_bound``: the share of SecAgg+ sessions that
abort before unmasking for want of live share holders, when devices drop after sharing.

The event (as the server decides it, tests/unit/test_secagg_machines.py ``_harary_clean``
for ``after_shares``): some survivor has fewer than t live holders among its neighbours and
itself, or some dropped device fewer than t live neighbours."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.secagg import graph as graphs


def _adjacency(n: int, degree: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    neighbours = graphs.harary_graph(list(range(n)), degree, lambda k: rng.bytes(k))
    matrix = np.zeros((n, n), dtype=np.int64)
    for u, vs in neighbours.items():
        matrix[u, list(vs)] = 1
    return matrix


def _aborts(matrix: np.ndarray, dropped: np.ndarray, degree: int, t: int) -> np.ndarray:
    """Per row of ``dropped`` (0/1 per device): does the session abort?"""
    gone = dropped @ matrix  # dropped neighbours per device
    survivor_short = (dropped == 0) & (gone > degree + 1 - t)
    dropped_short = (dropped == 1) & (gone > degree - t)
    return (survivor_short | dropped_short).any(axis=1)


def test_the_bound_is_above_the_exact_probability_on_a_small_graph() -> None:
    """Every dropped set of 3 of 10 devices on a degree-5 graph (t = 4), enumerated: no
    statistics; the union bound is at least the exact share and not far above it."""
    n, degree, t, dropping = 10, 5, 4, 3
    matrix = _adjacency(n, degree, seed=1)
    sets = np.zeros((math.comb(n, dropping), n), dtype=np.int64)
    for row, chosen in enumerate(itertools.combinations(range(n), dropping)):
        sets[row, list(chosen)] = 1
    exact = _aborts(matrix, sets, degree, t).mean()
    bound = graphs.abort_probability_bound(n, degree, t, dropping)
    assert 0 < exact <= bound <= 3 * exact


def test_the_bound_on_the_bench_headline_configuration() -> None:
    """200 devices, K = 11, t = 7, 20 dropping after sharing (the README's SecAgg+ bench):
    20,000 random dropped sets. The union bound B = 0.0591 is an upper bound on the true p
    (a theorem); the sample share exceeds B by more than 4.9 sd (sd = sqrt(B(1-B)/N) =
    0.00167) with probability below 1e-6. It is not far above p: one cluster of dropped
    devices fails a dropped device and a survivor at once (the union counts both), p ≈ 0.035
    here (sampled: 693 of 20,000); a share below B / 3 = 0.0197 would be more than 11 sd
    (sd at p = 0.035: 0.0013) below it."""
    n, degree, t, dropping, trials = 200, 11, 7, 20, 20_000
    bound = graphs.abort_probability_bound(n, degree, t, dropping)
    assert bound == pytest.approx(0.05907, abs=1e-4)
    matrix = _adjacency(n, degree, seed=2)
    rng = np.random.default_rng(3)
    share = 0.0
    for _ in range(trials // 2_000):
        keys = rng.random((2_000, n))
        dropped = (keys < np.sort(keys, axis=1)[:, [dropping]]).astype(np.int64)
        assert (dropped.sum(axis=1) == dropping).all()
        share += _aborts(matrix, dropped, degree, t).sum() / trials
    sd = math.sqrt(bound * (1 - bound) / trials)
    assert share <= bound + 4.9 * sd
    assert share >= bound / 3


def test_no_dropout_and_the_full_graph() -> None:
    assert graphs.abort_probability_bound(200, 11, 7, 0) == 0.0
    # full graph: every device holds every share; t = 51 of 100 holders, 10 dropping
    assert graphs.abort_probability_bound(100, 99, 51, 10) == 0.0
    assert graphs.abort_probability_bound(100, 99, 51, 50) == 1.0
    # a larger degree helps: the default degree for 200 devices is 17
    assert graphs.abort_probability_bound(200, 17, 9, 20) < 1e-4


@pytest.mark.parametrize(
    "args, field",
    [
        ((200, 200, 7, 20), "degree"),
        ((200, 11, 7, 201), "dropping"),
        ((200, 11, 0, 2), "threshold"),
    ],
)
def test_bad_arguments_name_their_field(args, field) -> None:
    with pytest.raises(ParameterError) as error:
        graphs.abort_probability_bound(*args)
    assert error.value.field == field


def test_bench_secagg_reports_the_risk_and_names_a_degree_that_lowers_it() -> None:
    from ldpfleet.app.bench_secagg import abort_risk

    risk = abort_risk(200, 0.1, 11, False)
    assert risk["abort_probability_at_most"] == pytest.approx(0.0591)
    (sentence,) = risk["warnings"]
    assert "with 11 neighbours (t = 7) and 20 of 200 devices dropping, up to 5.9%" in sentence
    larger = int(sentence.rsplit("--neighbors ", 1)[1].split()[0])
    assert (
        graphs.abort_probability_bound(200, larger, graphs.default_threshold(larger + 1), 20)
        <= 0.01
    )
    smaller = larger - 2
    assert (
        graphs.abort_probability_bound(200, smaller, graphs.default_threshold(smaller + 1), 20)
        > 0.01
    )
    # the default degree (17 for 200 devices) and no dropout: no warning
    assert abort_risk(200, 0.1, None, False)["warnings"] == []
    assert abort_risk(200, 0.0, 11, False) == {"abort_probability_at_most": 0.0, "warnings": []}


def test_bench_secagg_seed_decides_the_graph(monkeypatch) -> None:
    """The bench's seed draws the server's SecAgg+ labelling too (before: os.urandom, so one
    seed's K = 11 session aborted in some runs and not in others)."""
    from ldpfleet.app.bench_secagg import bench_secagg
    from ldpfleet.scenarios.loop import run as run_loop

    graphs_built = []
    harary = graphs.harary_graph

    def recorded(ids, k, random_bytes):
        graphs_built.append(harary(ids, k, random_bytes))
        return graphs_built[-1]

    monkeypatch.setattr(graphs, "harary_graph", recorded)
    for seed in (3, 3, 4):
        result = run_loop(bench_secagg(30, 2, neighbors=5, dropout=0.1, seed=seed))
        assert result["exact"] is True
    first, again, other = graphs_built
    assert first == again
    assert first != other
