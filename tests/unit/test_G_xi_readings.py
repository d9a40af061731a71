"""``bench gcdp``'s masking readings (helper G, 2026-12-05; needs /tmp/G-gcdp_datasets.diff):
``xi_mask``, ``xi_aggregate``, ``xi_mask_value`` (Occupancy) and ``xi_neighbours``. No
statistics: deterministic calibration on synthetic Occupancy-format frames."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.app import bench_gcdp as bench
from ldpfleet.app.gcdp_datasets import READINGS, occupancy_masking, parse_readings, prepare
from ldpfleet.collector.gcdp import masking_deltas, mean_bound, window_masking_deltas
from ldpfleet.protocol.errors import ParameterError

WINDOW = 30


def _nodes(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(rng.random((10 * WINDOW + 4, 5)) * np.array([0.4, 0.6, 1.0, 0.8, 0.5]), 0, 1)


def test_default_masks_one_occurrence_as_the_fleet_path_and_node_is_a_reading():
    # the lead's decision (docs/gcdp.md "Masking-delta scale"): the default stays what
    # collector.gcdp.fleet_calibration runs; "node" is the literal reading of seed §4.3
    assert READINGS.xi_mask == "occurrence"
    x = _nodes()
    kept = occupancy_masking(x, WINDOW, READINGS)
    assert np.array_equal(kept, masking_deltas(lambda a: a.mean(axis=0) / WINDOW, x, 0, 1))
    node = occupancy_masking(x, WINDOW, parse_readings("xi_mask=node"))
    assert np.array_equal(node, window_masking_deltas(x, WINDOW))
    # the node reading puts delta above the certificate B = 1/30; the kept one never does
    assert np.all(np.diag(node) > mean_bound(0, 1, WINDOW))
    assert np.all(kept <= mean_bound(0, 1, WINDOW))


def test_aggregate_and_mask_value_readings():
    x = _nodes(1)
    peak = occupancy_masking(x, WINDOW, parse_readings("xi_mask=node,xi_aggregate=max"))
    assert np.array_equal(peak, window_masking_deltas(x, WINDOW, aggregate="max"))
    centred = occupancy_masking(x, WINDOW, parse_readings("xi_mask=node,xi_mask_value=mean"))
    assert np.array_equal(centred, window_masking_deltas(x, WINDOW, mask_values=x.mean(axis=0)))


def test_occurrence_with_max_is_refused_naming_the_reading():
    with pytest.raises(ParameterError) as info:
        parse_readings("xi_mask=occurrence,xi_aggregate=max")
    assert info.value.field == "readings.xi_aggregate"


@pytest.mark.parametrize(
    "name", ["xi_mask=node", "xi_mask=node,xi_aggregate=max", "xi_mask=node,xi_mask_value=mean"]
)
def test_occupancy_only_masking_readings_are_refused_elsewhere(name):
    with pytest.raises(ParameterError) as info:
        prepare("wisdm", None, 30, parse_readings(name))
    assert info.value.field == f"readings.{name.split('=')[0]}"


def test_neighbour_reading_reaches_the_calibration():
    """``xi_neighbours=own`` changes xi through the expansion term only, never below B."""
    x = _nodes(2)
    x[:, 3] = np.clip(0.7 * x[:, 2] + 0.1, 0, 1)  # a correlated pair, so the graph has edges
    bounds = np.full(5, mean_bound(0, 1, WINDOW))

    def calibration(readings):
        return bench._calibration(
            x, lambda: occupancy_masking(x, WINDOW, readings), None, bounds, np.ones(5), 0.15,
            neighbour_delta=readings.xi_neighbours,
        )  # fmt: skip

    literal = calibration(READINGS)
    own = calibration(parse_readings("xi_neighbours=own"))
    assert np.all(literal["scales"] >= bounds) and np.all(own["scales"] >= literal["scales"])
    assert np.any(own["scales"] > literal["scales"])
    assert np.array_equal(own["direct_scales"], literal["direct_scales"])  # gamma = 0
