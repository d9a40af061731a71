"""The CADR budget, θ-noise and θ-search refusals carry ``limit`` and ``value`` (claim R6)."""

from __future__ import annotations

import pytest
from ldpfleet.collector.theta_search import DeviationSearch, theta_by_sum
from ldpfleet.protocol.cadr_budget import (
    CadrBudget,
    check_run_eps,
    check_theta_within_bound,
    resolve_degree_bound,
    theta_extra,
)
from ldpfleet.protocol.cadr_theta_noise import counts_above, noise_parties, theta_from_counts
from ldpfleet.protocol.errors import ParameterError


@pytest.mark.parametrize(
    ("call", "field", "value"),
    [
        (lambda: check_run_eps(100.0), "eps", 100.0),
        (lambda: resolve_degree_bound(0, "dp", 10, 5), "degree_bound", 0),
        (lambda: resolve_degree_bound("max", "dp", 10, 5), "degree_bound", "max"),
        (lambda: check_theta_within_bound(12, (9, "devices")), "theta", 12),
        (lambda: theta_extra(1.0, 0.1, 0), "devices", 0),
        (lambda: CadrBudget(1.0, 1.5), "alpha", 1.5),
        (lambda: CadrBudget(1.0, 0.1, 1.2), "theta_fraction", 1.2),
        (lambda: CadrBudget(1.0, 0.1, 0.6, 0.95), "theta_extra", 0.95),
        (lambda: CadrBudget.for_pipeline(1.0, 0.1, "fast", True, 50), "pipeline", "fast"),
        (lambda: CadrBudget.for_pipeline(0.002, 0.1, "dp", True, 50), "eps", 0.002),
        (lambda: noise_parties(10, 1.5), "survival", 1.5),
        (lambda: counts_above([3]), "bucket_sums", "shape (1,)"),
        (lambda: theta_from_counts([0, 1], [3], 1.0, 5), "counts_above", 1),
        (lambda: theta_by_sum([], lambda t: 0.0), "candidates", []),
        (lambda: DeviationSearch(1, 5, 10, 1.0, spacing="log"), "spacing", "log"),
    ],
)
def test_refusal_names_field_limit_and_value(call, field, value):
    with pytest.raises(ParameterError) as caught:
        call()
    assert caught.value.field == field
    assert caught.value.value == value
    assert isinstance(caught.value.limit, str) and caught.value.limit
