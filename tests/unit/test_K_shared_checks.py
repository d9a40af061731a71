"""Checks shared between modules (helper K's de-duplication): the degree cap θ of every
LPEA — a device's ``protocol.lpea.LpeaNode`` and the in-process projections of
``collector.projection`` — is checked by ``protocol.lpea.checked_theta`` alone, with one
refusal text (the collector's projections take it from the protocol layer); the θ search's
bucket thresholds, by ``collector.joint_prior.checked_thresholds`` for every reading of
the counts (``degree_postprocess``'s and ``joint_prior``'s)."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import baselines, metrics, projection
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector import joint_prior as jp
from ldpfleet.devices.graphs import Graph
from ldpfleet.protocol import lpea
from ldpfleet.protocol.errors import ParameterError

GRAPH = Graph.from_edges(4, np.array([0, 1, 2]), np.array([1, 2, 3]))
REFUSED = [-1, True, 2.0, "3", None]


def _callers():
    rng = np.random.default_rng(0)
    return {
        "edge_remove": lambda t: projection.edge_remove(GRAPH, t, rng),
        "random_add": lambda t: projection.random_add(GRAPH, t, rng),
        "lpea": lambda t: projection.lpea(GRAPH, t, rng),
        "LpeaNode": lambda t: lpea.LpeaNode("r", "d1", {"d2": 1}, t, 1.0, rng),
    }


@pytest.mark.parametrize("theta", REFUSED)
@pytest.mark.parametrize("caller", sorted(_callers()))
def test_every_lpea_refuses_a_bad_theta_with_the_one_text(caller, theta):
    with pytest.raises(ParameterError) as refused:
        _callers()[caller](theta)
    err = refused.value
    assert (err.field, err.limit, err.value) == ("theta", "a non-negative integer", theta)
    assert str(err) == f"theta: must be a non-negative integer, got {theta!r}"


def test_the_projections_take_the_check_from_the_protocol_layer():
    assert projection.checked_theta is lpea.checked_theta
    assert not hasattr(projection, "_check_theta")
    assert lpea.checked_theta(np.int64(3)) == 3 and type(lpea.checked_theta(np.int64(3))) is int
    node = lpea.LpeaNode("r", "d1", {"d2": 1}, np.int64(2), 1.0, np.random.default_rng(0))
    assert node.theta == 2 and type(node.theta) is int


BAD_THRESHOLDS = [[3, 1], [1, 1, 4], [], [-1, 2], [2, 10]]


@pytest.mark.parametrize("thresholds", BAD_THRESHOLDS)
@pytest.mark.parametrize("reader", ["degree_prior", "search_priors", "joint_prior"])
def test_every_reading_of_the_counts_refuses_bad_thresholds_alike(reader, thresholds):
    sums = [5.0] * (len(thresholds) + 1)
    calls = {
        "degree_prior": lambda: dpp.degree_prior(sums, thresholds, 9, 20),
        "search_priors": lambda: dpp.search_priors(sums, thresholds, 9, 20, 1.0, 5),
        "joint_prior": lambda: jp.joint_prior([1.0, 2.0], 3, 1.0, [0.1] * 10, thresholds, 20, 1.0),
    }
    with pytest.raises(ParameterError) as refused:
        calls[reader]()
    err = refused.value
    limit = "ascending, distinct, within [0, 9]"
    assert (err.field, err.limit, err.value) == ("thresholds", limit, thresholds)
    got = [int(t) for t in thresholds][:5]
    assert str(err) == f"thresholds: must be ascending, distinct and within [0, 9], got {got}..."


def test_good_thresholds_come_back_as_ints():
    assert jp.checked_thresholds([np.int64(1), 4.0, 9], 9) == [1, 4, 9]
    assert dpp.checked_thresholds is jp.checked_thresholds


NON_FINITE = [[0.2, np.nan, 0.5], [np.inf, 0.1], [0.3, 0.4, -np.inf]]


@pytest.mark.parametrize("values", NON_FINITE)
@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda v: metrics.cosine_distance(v, [0.1, 0.2]), "reconstruction"),
        (lambda v: metrics.cosine_distance([0.1, 0.2], v), "truth"),
        (lambda v: baselines.moving_average(v, 3), "x"),
        (lambda v: baselines.laplace_perturb(v, 1.0, np.random.default_rng(0)), "v"),
    ],
)
def test_cpr_series_refuse_their_first_non_finite_value_alike(call, field, values):
    with pytest.raises(ParameterError) as refused:
        call(values)
    err = refused.value
    first = next(v for v in values if not np.isfinite(v))
    assert (err.field, err.limit) == (field, "finite (value: the first non-finite one)")
    assert repr(err.value) == repr(first) and str(err) == f"{field}: must be finite"  # nan
