"""collector.bucket_isotonic.geometric_tail_counts(fitted_mass=True): the re-placed tail
keeps at most the mass of the free geometric fit to the noisy sums above g, the surplus
goes back to the buckets up to g in proportion to their counts, and the kept mass is placed
on the ratio fitted with its amplitude tied to that mass (issue 20, helper B round 2;
docs/preregistration/B-tail-mass.md). Tier 1: the pure function on hand-made sums."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.bucket_isotonic import (
    TAIL_DECAY_MAX,
    _fitted_decay,
    _geometric_fit,
    _tied_decay,
    geometric_tail_counts,
)
from ldpfleet.protocol.errors import ParameterError

SD = 2.0  # noise sd of the hand-made sums: a bucket is significant from 3 SD = 6


def _tail(y, x, **kw):
    return geometric_tail_counts(
        np.asarray(y, float), np.asarray(x, float), np.ones(len(y)), SD, mode_z=3.0, **kw
    )


def test_a_far_noise_stretch_no_longer_inflates_the_tail_mass():
    # bulk in buckets 0-4 (bucket 4's 8 >= 6 is the top significant one), a falling tail
    # 4, 2, 1 above it, then a far stretch of noise 5, 5 that the counts kept
    y = [40, 90, 60, 20, 8, 4, 2, 1, 0, 0, 0, 5, 5, 0]
    x = np.maximum(np.asarray(y, float), 0.0)
    out = _tail(y, x, fitted_mass=True)
    top = 4
    rho, amplitude = _geometric_fit(np.asarray(y[top + 1 :], float), TAIL_DECAY_MAX)
    fitted = amplitude * np.sum(rho ** np.arange(len(y) - top - 1))
    boot_mass = x[top + 1 :].sum()  # 4 + 2 + 1 + 5 + 5 = 17
    assert fitted < boot_mass
    assert out[top + 1 :].sum() == pytest.approx(fitted)
    surplus = boot_mass - fitted
    np.testing.assert_allclose(out[: top + 1], x[: top + 1] * (1 + surplus / x[: top + 1].sum()))
    assert out.sum() == pytest.approx(x.sum()) and np.all(out >= 0)
    # without the option the whole boot mass stays above g
    assert _tail(y, x)[top + 1 :].sum() == pytest.approx(boot_mass)


def test_a_tail_lighter_than_its_fit_keeps_its_mass_on_the_tied_ratio():
    # boot holds 3 above g; the sums there are an exact 8 ρ^i, ρ = 0.5 (fit mass ~16)
    y = [40, 90, 60, 20, 8, 4, 2, 1, 0.5, 0.25]
    x = np.asarray([40, 90, 60, 20, 8, 1.5, 1.0, 0.5, 0.0, 0.0])
    out = _tail(y, x, fitted_mass=True)
    np.testing.assert_array_equal(out[:5], x[:5])  # nothing to give back
    tail = out[5:]
    assert tail.sum() == pytest.approx(3.0)
    rho = _tied_decay(np.asarray(y[5:], float), 3.0, TAIL_DECAY_MAX)
    np.testing.assert_allclose(tail[1:] / tail[:-1], rho)
    # a mass of 3 against a first sum of 4: the tied fit keeps the mass compact, more
    # so than the free fit's 0.5 (whose amplitude was free to match the sums)
    assert 0.0 < rho < _fitted_decay(np.asarray(y[5:], float), TAIL_DECAY_MAX)


def test_the_tied_ratio_recovers_an_exact_shape_of_the_same_mass():
    rho = 0.6
    shape = rho ** np.arange(6)
    sums = 30.0 * shape / shape.sum()
    assert _tied_decay(sums, 30.0, TAIL_DECAY_MAX) == pytest.approx(rho)


def test_a_negative_noise_value_does_not_collapse_the_tied_ratio():
    # les misérables ε = 1, seed 92 (in sds): the free fit takes ρ = 0 and puts the whole
    # second mode in the first bucket above g; tied to the boot mass it does not
    sums = np.array([2.03, -3.21, 0.17, 0.84, 0.68, 2.20, 1.86, 2.03, -0.34, 0.34, 0.0])
    assert _fitted_decay(sums, TAIL_DECAY_MAX) == 0.0
    assert _tied_decay(sums, 7.7, TAIL_DECAY_MAX) >= 0.7


def test_nothing_moves_without_a_significant_bucket_or_a_tail():
    y = [1, 2, 1, 0, 1]  # nothing reaches 6
    x = np.asarray(y, float)
    np.testing.assert_array_equal(_tail(y, x, fitted_mass=True), x)
    y2 = [40, 90, 60, 20, 0, 0]
    x2 = np.asarray([40, 90, 60, 20, 0, 0], float)  # no mass above g
    np.testing.assert_array_equal(_tail(y2, x2, fitted_mass=True), x2)


def test_an_empty_head_keeps_the_boot_mass():
    # g = 0 holds no count: the surplus has nowhere to go, the mass above g stays
    y = [9, 1, 0, 0, 4]
    x = np.asarray([0.0, 5.0, 0.0, 0.0, 4.0])
    out = _tail(y, x, fitted_mass=True)
    assert out[0] == 0.0 and out.sum() == pytest.approx(9.0)


@pytest.mark.parametrize("bad", ["yes", 1, None, 0.0])
def test_fitted_mass_must_be_a_bool(bad):
    y = [40, 90, 60, 20, 8, 4]
    with pytest.raises(ParameterError) as err:
        _tail(y, np.asarray(y, float), fitted_mass=bad)
    assert err.value.field == "fitted_mass"
    assert err.value.limit == "True or False" and err.value.value is bad


def _reading(sums, ts, d, n, eps, m, fitted):
    from ldpfleet.collector import degree_postprocess as dpp
    from ldpfleet.collector.bucket_denoise import noise_sd
    from ldpfleet.collector.bucket_isotonic import TAIL_LEVEL, bootstrap_counts

    counts = geometric_tail_counts(
        sums,
        bootstrap_counts(sums, n, eps, m),
        np.diff(np.array([-1, *ts, d])),
        noise_sd(eps, n, m),
        mode_z=dpp.MODE_Z,
        gap_corrected=True,
        stretch_level=TAIL_LEVEL,
        fitted_mass=fitted,
    )
    return dpp._spread(counts, ts, d, True)


def test_histogram_prior_caps_the_tail_mass_where_the_counts_carry_signal():
    # docs/preregistration/B-tail-mass-gated.md: n / (√K σ) = 37.6 >= 8 here; a bulk in
    # buckets 0-3, a falling tail 6, 3, 1 and a far noise spike 8 the boot counts keep
    from ldpfleet.collector import degree_postprocess as dpp

    ts, d, n, eps, m = [1, 3, 6, 10, 20, 40, 80, 120, 160, 240, 320, 400], 500, 400, 1.0, 360
    sums = np.array([90.0, 160.0, 100.0, 30.0, 6.0, 3.0, 1.0, 0.0, -1.0, 1.0, 8.0, 0.0, 0.0])
    assert dpp.count_signal_ratio(n, sums.size, eps, m) >= dpp.UNIMODAL_RATIO_MAX
    got = dpp.histogram_prior(sums, ts, d, n, eps, m)
    want = _reading(sums, ts, d, n, eps, m, True)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
    uncapped = _reading(sums, ts, d, n, eps, m, False)
    # the tail above degree 10 holds 12.1 devices against 17.1 uncapped
    assert n * got[11:].sum() < n * uncapped[11:].sum() - 4.0


def test_histogram_prior_keeps_the_boot_tail_mass_below_the_gate():
    # a fleet of 60 at ε_θ = 0.5: n / (√K σ) below 8, main's reading unchanged
    from ldpfleet.collector import degree_postprocess as dpp

    ts, d, n, eps, m = [1, 2, 4, 8, 16, 32], 59, 60, 0.5, 60
    sums = np.array([30.0, 20.0, 6.0, -4.0, 9.0, 2.0, 7.0])
    assert dpp.count_signal_ratio(n, sums.size, eps, m) < dpp.UNIMODAL_RATIO_MAX
    got = dpp.histogram_prior(sums, ts, d, n, eps, m)
    np.testing.assert_allclose(got, _reading(sums, ts, d, n, eps, m, False), rtol=0, atol=1e-15)
