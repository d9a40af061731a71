"""Gaps found by helper T3's planted-bug hunt (round 3): each test names the mutant it
kills."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import period_search
from ldpfleet.collector.period_search import _Search
from ldpfleet.collector.period_stats import few_cycles_penalty
from ldpfleet.protocol.errors import ParameterError


def _gate(monkeypatch, n: int, threshold: float, exact: float, segment: float) -> _Search:
    """A ``_Search`` with only what ``passes`` reads, its two folds' log p fixed."""
    search = object.__new__(_Search)
    search.n, search.threshold, search.xw = n, threshold, np.zeros(n)
    monkeypatch.setattr(_Search, "exact_logp", lambda self, q: (exact, 1))
    monkeypatch.setattr(period_search, "segment_logp", lambda xw, q: segment)
    return search


def test_the_claim_gate_charges_a_period_with_few_cycles_its_penalty(monkeypatch):
    """Kills PG2 (``passes`` without ``few_cycles_penalty``): a period with 3 cycles of a
    240-sample stream must beat the threshold by ``6 log 4`` (8.3 nats), so a log p of -15
    at a threshold of -10 fails the gate (step 7 could rename a claim to such a lag); 12
    cycles or more pay nothing."""
    n, threshold = 240, -10.0
    penalty = few_cycles_penalty(n / 80, n)
    assert penalty == pytest.approx(-6.0 * np.log(4.0))
    assert not _gate(monkeypatch, n, threshold, -15.0, 0.0).passes(80)
    assert _gate(monkeypatch, n, threshold, -19.0, 0.0).passes(80)
    assert _gate(monkeypatch, n, threshold, 0.0, -19.0).passes(80)  # the segment-wise fold
    assert _gate(monkeypatch, n, threshold, -10.5, 0.0).passes(20)  # 12 cycles: no penalty


def test_a_reading_with_a_negative_mass_is_refused():
    """Kills JP1 (``_reading`` refusing only entries below -1): a "distribution" with a
    negative entry that still sums to 1 went into the EM as the count term's centre."""
    from ldpfleet.collector.joint_prior import joint_prior

    with pytest.raises(ParameterError) as error:
        joint_prior([0.5, 1.0], 2, 1.0, [0.6, 0.6, -0.2], [0, 1], 10, 1.0)
    assert error.value.field == "reading"


def _stationarity(released, theta, eps_dsr, reading, thresholds, devices, sigma, p):
    """``A_g / X_g + 2 c_g (R_g - X_g)`` per group at ``p`` (joint_prior's module docstring:
    equal across the groups, = lambda, at the maximum), computed here from the definitions:
    atoms 0..theta-1 and ">= theta"; groups the buckets below theta's and the cell U of
    theta's bucket and every one above; ``c_g = n^2 / (2 sigma^2)``, times ``sum W_j^2``
    (the reading's shares of U per bucket) for U."""
    y, r = np.asarray(released, float), np.asarray(reading, float)
    t, b = theta, theta / eps_dsr
    bucket = np.searchsorted(np.array(thresholds), np.arange(r.size), side="left")
    groups = np.minimum(np.append(bucket[:t], bucket[t]), bucket[t])
    atoms = np.append(p[:t], p[t:].sum())
    post = np.exp(-np.abs(y[:, None] - np.arange(t + 1)[None, :]) / b) * atoms
    post /= post.sum(axis=1, keepdims=True)
    big_a = np.bincount(groups, weights=post.sum(axis=0))
    x = np.bincount(groups, weights=atoms)
    in_u = np.arange(r.size) >= np.flatnonzero(bucket == bucket[t])[0]
    centre = np.append(np.bincount(bucket[~in_u], weights=r[~in_u]), r[in_u].sum())
    shares = np.bincount(bucket[in_u], weights=r[in_u])[bucket[t] :] / r[in_u].sum()
    c = np.full(x.size, devices**2 / (2.0 * sigma**2))
    c[-1] *= np.sum(shares**2)
    return big_a / x + 2.0 * c * (centre - x)


def test_the_joint_prior_maximises_the_penalised_likelihood_of_its_group_masses():
    """Kills JP6 (the count term of the cell ``U`` without its factor ``sum W_j^2``, the
    reading's shares of ``U`` per bucket): at the EM's fixed point the group masses satisfy
    the documented M-step condition, the same multiplier for every group. Here ``U``
    spreads over three buckets (``sum W_j^2`` ~ 0.37), the count term is as strong as the
    releases' (``n = 200``, ``sigma = 10``)."""
    from ldpfleet.collector.joint_prior import joint_prior

    rng = np.random.default_rng(3301)
    degrees = rng.integers(0, 11, 200)
    theta, eps_dsr = 4, 2.0
    released = np.minimum(degrees, theta) + rng.laplace(0.0, theta / eps_dsr, 200)
    reading = np.full(11, 1.0 / 11)
    thresholds = [1, 3, 6, 8]
    args = (released, theta, eps_dsr, reading, thresholds, 200, 10.0)
    p = joint_prior(*args, iterations=3000)
    multipliers = _stationarity(*args, p)
    assert np.ptp(multipliers) < 1e-3 * np.abs(multipliers).max()


def test_a_theta_above_the_degree_bound_reads_as_the_bound():
    """Kills JP8 (θ not clamped to the reading's degree bound ``D``): a θ search may end
    above ``D``, and ``min(d, θ) = d`` for every degree then, the same releases' model as
    ``θ = D``; unclamped, the atoms ran past the reading."""
    from ldpfleet.collector.joint_prior import joint_prior, median_group_tilt

    rng = np.random.default_rng(3302)
    released = rng.integers(0, 6, 50) + rng.laplace(0.0, 3.0, 50)
    reading = np.full(6, 1.0 / 6)
    above = joint_prior(released, 9, 3.0, reading, [1, 3], 50, 5.0)
    at = joint_prior(released, 5, 3.0, reading, [1, 3], 50, 5.0)
    np.testing.assert_allclose(above, at, rtol=0, atol=1e-12)
    tilted = median_group_tilt(released, 9, 3.0, reading, [1, 3], 0.05)
    np.testing.assert_allclose(tilted, median_group_tilt(released, 5, 3.0, reading, [1, 3], 0.05))


def test_the_median_tilt_is_kept_only_past_the_upper_quantile():
    """Kills JP11 (the tilt kept when its statistic exceeds the LOWER ``level`` quantile of
    chi2_1, ``chi2.ppf(level, 1)`` ~ 0, i.e. almost always): releases drawn from the
    prior itself (lambda = 0 true) keep the prior at ``level = 1e-6``: the statistic passes
    ``chi2.ppf(1 - 1e-6, 1)`` = 23.9 with probability 1e-6 (its chi2_1 law under the null,
    the docstring's one-parameter check), so this fixed seed fails falsely at that rate."""
    from ldpfleet.collector.joint_prior import median_group_tilt

    rng = np.random.default_rng(3303)
    prior = np.full(11, 1.0 / 11)
    degrees = rng.integers(0, 11, 400)
    released = np.minimum(degrees, 8) + rng.laplace(0.0, 8 / 4.0, 400)
    out = median_group_tilt(released, 8, 4.0, prior, [2, 6], 1e-6)
    np.testing.assert_array_equal(out, prior)


def test_the_unpack_cap_must_fit_a_signed_64_bit_count(monkeypatch):
    """Kills CP1 (``size > 2**63`` refused instead of ``>=``): 2**63 bytes does not fit
    the signed 64-bit count the limit states (``< 2**63``); 2**63 - 1 does."""
    from ldpfleet.devices.compressed import MAX_UNPACKED_ENV, max_unpacked

    monkeypatch.setenv(MAX_UNPACKED_ENV, str(2**63))
    with pytest.raises(ParameterError) as error:
        max_unpacked()
    assert error.value.field == MAX_UNPACKED_ENV
    monkeypatch.setenv(MAX_UNPACKED_ENV, str(2**63 - 1))
    assert max_unpacked() == 2**63 - 1


def test_a_zip_declaring_one_byte_over_the_cap_is_refused():
    """Kills CP6 (``total > limit + 1``): members declaring ``limit + 1`` bytes in all are
    refused before any is read; exactly ``limit`` passes."""
    import io
    import zipfile

    from ldpfleet.devices.compressed import UnpackedTooLarge, check_zip_size

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.npy", b"x" * 60)
        archive.writestr("b.npy", b"y" * 41)
    raw = buffer.getvalue()
    check_zip_size(raw, 101)
    with pytest.raises(UnpackedTooLarge):
        check_zip_size(raw, 100)


def test_em_owners_refuses_owners_out_of_order():
    """Kills EM9 (only negative owners refused): ``em_owners`` documents each owner's rows
    contiguous and refuses owners not sorted, naming the first out of order."""
    from ldpfleet.collector.sw_em import em_owners

    counts = np.ones((3, 4))
    matrix = np.full((4, 2), 0.25)
    em_owners(counts, matrix, [0, 0, 1])
    with pytest.raises(ParameterError) as error:
        em_owners(counts, matrix, [1, 0, 1])
    assert (error.value.field, error.value.value) == ("owners", 0)


def test_the_baselines_refuse_a_value_below_zero():
    """Kills BL3 (``_unit_series`` refusing values above 1 only): the Laplace baseline's
    and LBD's privacy rests on sensitivity 1, i.e. every value in ``[0, 1]``; -0.5 is
    refused and named."""
    from ldpfleet.collector.baselines import laplace_perturb, lbd

    rng = np.random.default_rng(0)
    for release in (lambda v: laplace_perturb(v, 1.0, rng), lambda v: lbd(v, 1.0, 2, rng)):
        with pytest.raises(ParameterError) as error:
            release(np.array([0.5, -0.5, 0.25]))
        assert (error.value.field, error.value.value) == ("v", -0.5)


class _Draws:
    """An ``rng`` whose ``laplace`` returns the given values in turn (LBD needs only it)."""

    def __init__(self, *values: float) -> None:
        self.values = iter(values)

    def laplace(self, loc: float, scale: float) -> float:
        return next(self.values)


@pytest.mark.parametrize(("noise", "publishes"), [(6.2, False), (6.4, True)])
def test_lbd_publishes_when_the_debiased_dissimilarity_beats_the_publication_error(
    noise, publishes
):
    """Kills BL8 (the debiasing ``2 / eps1^2`` halved; also BL10, the publication error
    ``2 / eps2^2`` halved, which tests/unit/test_cpr.py catches too): with eps = 1, w = 1,
    ``eps1 = 0.5`` (bias 8) and ``eps2 = 0.25`` (error 32), a step whose value equals the
    last release publishes iff the dissimilarity draw ``dis`` has ``dis^2 - 8 > 32``,
    i.e. ``dis > 6.32``."""
    from ldpfleet.collector.baselines import lbd

    result = lbd(np.array([0.5]), 1.0, 1, _Draws(noise, 0.0))
    assert bool(result.published[0]) is publishes
    assert result.eps_spent[0] == pytest.approx(0.75 if publishes else 0.5)


def test_the_filter_baseline_of_an_empty_stream_is_empty():
    """Kills BL13 (``sw_filter`` without its short-stream branch): an empty stream's
    ``sosfiltfilt`` raised a bare numpy ValueError (shapes (2,2) (0,)); it is empty."""
    from ldpfleet.collector.baselines import sw_filter
    from ldpfleet.protocol.sw import SquareWave

    assert sw_filter(np.array([]), SquareWave(1.0)).size == 0


def test_the_moving_baseline_averages_before_it_clips():
    """Kills BL14 (``sw_moving`` clipping the SW estimates before averaging them): the
    module smooths the unbiased estimates first, so the average stays unbiased, and clips
    the result."""
    from ldpfleet.collector.baselines import moving_average, sw_moving
    from ldpfleet.protocol.sw import SquareWave

    mechanism = SquareWave(1.0)
    y = np.array([mechanism.output_high, mechanism.output_low, mechanism.output_high] * 3)
    estimates = np.asarray(mechanism.estimate(y), dtype=float)
    assert estimates.max() > 1.0 and estimates.min() < 0.0
    np.testing.assert_array_equal(
        sw_moving(y, mechanism, 3), np.clip(moving_average(estimates, 3), 0.0, 1.0)
    )


def test_data_compressed_more_than_max_layers_is_refused_as_such():
    """Kills CP7 (no check after the last layer: the still-compressed bytes went on to
    the text reader, refused as "not UTF-8 text (byte 0x8b ...)")."""
    import gzip

    from ldpfleet.devices.compressed import MAX_LAYERS, TooManyLayers, unpack

    raw = b"a,b\n1,2\n"
    for _ in range(MAX_LAYERS):
        raw = gzip.compress(raw)
    assert unpack(raw) == b"a,b\n1,2\n"
    with pytest.raises(TooManyLayers):
        unpack(gzip.compress(raw))


def test_plain_data_ignores_the_unpack_cap_variable(monkeypatch):
    """Kills CP8 (the cap read for data that is not compressed): a malformed
    ``$LDPFLEET_MAX_UNPACKED`` refuses only what it would cap."""
    from ldpfleet.devices.compressed import MAX_UNPACKED_ENV, unpack

    monkeypatch.setenv(MAX_UNPACKED_ENV, "lots")
    assert unpack(b"a,b\n") == b"a,b\n"


def test_a_cap_of_a_whole_unit_is_named_in_that_unit():
    """Kills CP9 (``size > scale``): a cap of exactly 1 GiB reads "1 GiB", not "1,024
    MiB", in the refusal's rule."""
    from ldpfleet.devices.compressed import UnpackedTooLarge

    assert "at most 1 GiB unpacked" in UnpackedTooLarge("gzip", 1024**3, 1024**3 + 1).rule
