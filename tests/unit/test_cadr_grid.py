"""app.cadr_grid: the wide grid's graphs and its table (the runs themselves are
collector.cadr_reference.private_run, tested there)."""

from __future__ import annotations

import numpy as np
from ldpfleet.app.cadr_grid import ALL_GRAPHS, GRID, HELD_OUT, _cells, grid_graph, markdown


def test_the_grid_builds_its_special_graphs_and_tabulates_runs_beside_the_baselines():
    regular = grid_graph("rr-1000-d3")
    assert regular.n == 1000 and set(regular.degrees().tolist()) == {3}
    stars = grid_graph("stars-3000")
    d = stars.degrees()
    assert stars.n == 3000 and np.median(d) == 1 and d.max() >= 50  # mostly leaves, hubs
    assert len(GRID) == 19 and {"facebook", "wiki-vote", "sbm-3000"} <= set(GRID)
    rows = [
        {"graph": "rr-1000-d3", "n": 1000, "eps": 0.5, "seed": s, "mae": m, "theta": 3,
         "eps_theta": 0.25, "median": 0.0, "zero": 3.0, "seconds": 0.1}
        for s, m in enumerate((0.0, 0.0, 0.3))
    ]  # fmt: skip
    (cell,) = _cells(rows)
    assert abs(cell["mae_mean"] - 0.1) < 1e-12 and cell["worst_minus_median"] == 0.3
    table = markdown([cell])
    row = "| rr-1000-d3 | 1,000 | 0.5 | 0.25 | 0.100 (0.000–0.300) | 0.000 | 3.000 | +0.300 |"
    assert row in table


def test_the_held_out_graphs_are_new_simple_and_reachable_by_name():
    # issue 20, third step: families and seeds the grid never used, kept out of GRID
    assert not set(HELD_OUT) & set(GRID) and set(ALL_GRAPHS) == set(GRID) | set(HELD_OUT)
    lognormal = grid_graph("lognormal-3000")
    d = lognormal.degrees()
    assert lognormal.n == 3000 and d.max() > 5 * np.median(d)  # skewed
    geometric = grid_graph("rgg-2000-r0.05")
    assert geometric.n == 2000 and 10 < geometric.degrees().mean() < 20
