"""The opt-in per-node reading ``nb-shape`` of the θ search's noisy counts (helper G,
issue 20): a negative binomial fitted to the bucket sums, kept when it fits within the
noise, else the unimodal prior."""

import numpy as np
import pytest
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.protocol.cadr_theta_noise import bucket_grid, noise_parties
from ldpfleet.protocol.errors import ParameterError
from scipy.stats import nbinom


def _sums(degrees, ts):
    return np.bincount(np.searchsorted(ts, degrees, side="left"), minlength=len(ts) + 1)


def _median(prior):
    return int(np.sum(np.cumsum(prior) < 0.5 - 1e-12))


def test_nb_shaped_counts_without_noise_give_the_true_median():
    n, d = 100, 99
    ts = bucket_grid(d, 16)
    degrees = np.array(nbinom.ppf((np.arange(n) + 0.5) / n, 6, 6 / (6 + 7.0)), dtype=int)
    prior = dpp.nb_shape_degree_prior(_sums(degrees, ts), ts, d, n, 0.43, noise_parties(n))
    assert prior.shape == (d + 1,) and np.isclose(prior.sum(), 1.0) and np.all(prior >= 0)
    assert abs(_median(prior) - int(np.floor(np.median(degrees)))) <= 0


def test_counts_the_shape_cannot_fit_fall_back_to_the_unimodal_prior():
    n, d = 120, 119
    ts = bucket_grid(d, 16)
    degrees = np.array([1] * 60 + [40] * 60)  # two far spikes: no negative binomial
    sums = _sums(degrees, ts)
    args = (sums, ts, d, n, 0.43, noise_parties(n))
    assert np.array_equal(dpp.nb_shape_degree_prior(*args), dpp.unimodal_degree_prior(*args))


def test_search_priors_reads_nb_shape_only_when_switched_on_and_counts_are_weak(monkeypatch):
    n, d = 100, 99
    ts = bucket_grid(d, 16)
    degrees = np.array(nbinom.ppf((np.arange(n) + 0.5) / n, 6, 6 / (6 + 7.0)), dtype=int)
    weak = (_sums(degrees, ts), ts, d, n, 0.43, noise_parties(n))
    base = dpp.search_priors(*weak)[0]
    assert np.array_equal(base, dpp.unimodal_degree_prior(*weak))
    monkeypatch.setattr(dpp, "PER_NODE_READING", "nb-shape")
    assert np.array_equal(dpp.search_priors(*weak)[0], dpp.nb_shape_degree_prior(*weak))
    strong = (_sums(degrees, ts), ts, d, n, 50.0, 1)  # count-signal ratio far above 8
    assert dpp.count_signal_ratio(n, len(ts) + 1, 50.0, 1) >= dpp.UNIMODAL_RATIO_MAX
    assert np.array_equal(dpp.search_priors(*strong)[0], dpp.unimodal_degree_prior(*strong))


def test_bad_noise_law_is_refused_naming_the_field():
    ts = bucket_grid(99, 16)
    with pytest.raises(ParameterError) as err:
        dpp.nb_shape_degree_prior(np.zeros(len(ts) + 1), ts, 99, 100, -1.0, 1)
    assert err.value.field == "eps_theta"


def test_unknown_reading_is_refused_naming_the_setting(monkeypatch):
    ts = bucket_grid(99, 16)
    monkeypatch.setattr(dpp, "PER_NODE_READING", "bogus")
    with pytest.raises(ParameterError) as err:
        dpp.search_priors(np.zeros(len(ts) + 1), ts, 99, 100, 0.43, noise_parties(100))
    assert err.value.field == "PER_NODE_READING"
