"""The opt-in per-node reading ``projection`` of the θ search's noisy counts (helper H,
issue 20, docs/preregistration/H-projection.md): the plain projection where the
count-signal ratio is in [PROJECTION_RATIO_MIN, UNIMODAL_RATIO_MAX), else the unimodal
prior."""

import numpy as np
import pytest
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.bucket_denoise import simplex_projection
from ldpfleet.protocol.cadr_theta_noise import bucket_grid, noise_parties
from ldpfleet.protocol.errors import ParameterError

N, D = 100, 99
TS = bucket_grid(D, 16)
# a far bump of 8 devices, within ~2 noise sds at ε_θ = 0.7: the unimodal tail flattens it
TWO_SPIKES = np.array([5] * 92 + [60] * 8)


def _sums(degrees):
    return np.bincount(np.searchsorted(TS, degrees, side="left"), minlength=len(TS) + 1)


def _args(eps_theta, parties=None):
    return (_sums(TWO_SPIKES), TS, D, N, eps_theta, parties or noise_parties(N))


def _ratio(eps_theta, parties=None):
    return dpp.count_signal_ratio(N, len(TS) + 1, eps_theta, parties or noise_parties(N))


def test_moderately_weak_counts_are_read_by_the_plain_projection():
    assert dpp.PROJECTION_RATIO_MIN <= _ratio(0.7) < dpp.UNIMODAL_RATIO_MAX
    prior = dpp.projection_degree_prior(*_args(0.7))
    projected = dpp._spread(simplex_projection(_sums(TWO_SPIKES), N), TS, D, True)
    assert np.array_equal(prior, projected)
    # the reading is a different one from today's on these counts (else the switch is void)
    assert not np.allclose(prior, dpp.unimodal_degree_prior(*_args(0.7)))


def test_very_weak_and_strong_counts_keep_the_unimodal_prior():
    assert _ratio(0.1) < dpp.PROJECTION_RATIO_MIN
    assert np.array_equal(
        dpp.projection_degree_prior(*_args(0.1)), dpp.unimodal_degree_prior(*_args(0.1))
    )
    assert _ratio(50.0, 1) >= dpp.UNIMODAL_RATIO_MAX  # large fleets: unchanged
    assert np.array_equal(
        dpp.projection_degree_prior(*_args(50.0, 1)), dpp.unimodal_degree_prior(*_args(50.0, 1))
    )


def test_search_priors_reads_projection_only_when_switched_on(monkeypatch):
    assert np.array_equal(dpp.search_priors(*_args(0.7))[0], dpp.unimodal_degree_prior(*_args(0.7)))
    monkeypatch.setattr(dpp, "PER_NODE_READING", "projection")
    per_node, histogram = dpp.search_priors(*_args(0.7))
    assert np.array_equal(per_node, dpp.projection_degree_prior(*_args(0.7)))
    assert np.array_equal(histogram, dpp.histogram_prior(*_args(0.7)))  # histogram unchanged


def test_bad_noise_law_is_refused_naming_the_field():
    with pytest.raises(ParameterError) as err:
        dpp.projection_degree_prior(np.zeros(len(TS) + 1), TS, D, N, 0.7, 0)
    assert err.value.field == "parties"
