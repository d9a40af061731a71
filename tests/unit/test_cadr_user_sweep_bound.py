"""`bench cadr-sweep`'s θ grid on a user's small graph (helper B, 2026-12-05, issue 20).

The default grid is 1..100; on a graph of maximum degree 1 (one edge) the θ sweep ran
θ = 2..100 too, thetas the devices refuse (a fleet run with θ above the degree bound D is
refused before any device starts), and its table showed MAEs up to 55 for them. Fails on
the old code: the grid kept every θ.
"""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.app.cadr_sweep import sweep_theta
from ldpfleet.devices.graphs import Graph
from ldpfleet.protocol.errors import ParameterError


def _path3() -> Graph:
    return Graph.from_edges(3, np.array([0, 1]), np.array([1, 2]))


def test_thetas_above_the_degree_bound_are_not_run_and_are_named():
    sweep = sweep_theta(_path3(), ["ll"], [1, 2, 3, 4, 50], 3.0, 0.1, runs=1)
    assert sweep["grid"] == [1, 2]
    assert max(sweep["thetas"]) <= 2
    assert sweep["degree_bound"] == 2
    assert sweep["dropped_above_bound"] == [3, 4, 50]


def test_a_grid_entirely_above_the_bound_is_refused_naming_field_limit_and_value():
    with pytest.raises(ParameterError) as caught:
        sweep_theta(_path3(), ["ll"], [5, 9], 3.0, 0.1, runs=1)
    message = str(caught.value)
    assert caught.value.field == "thetas"
    assert "D = 2" in message and "[5, 9]" in message
