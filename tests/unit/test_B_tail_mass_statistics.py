"""The capped tail mass (``geometric_tail_counts(fitted_mass=True)``, issue 20, helper B
round 2; docs/preregistration/B-tail-mass-gated.md) on simulated θ-search counts: tier 1
(seeded noise of the secure sum's exact law, no transport).

The two fleets of ``test_B_geometric_tail_statistics`` (n = 3,000, ε_θ = 0.5, 49 buckets;
``count_signal_ratio`` 72, above the gate, so ``histogram_prior`` applies the cap there),
300 noise draws each, the projection's counts read by main's reading (H's g, J's stretch,
B's tail) with and without the cap:

- pure noise above a light bulk: scored by the mass the spread prior puts above twice the
  maximum degree (all of it noise);
- a planted Pareto tail (exponent 2.5): scored by the spread prior's EMD to the true degrees.

Thresholds for a false-failure rate near 1e-6, derived from a pilot of 2,000 draws per
fleet with OTHER noise seeds (2003, 2004; the tests use 13 and 14): pure noise, cap better
in 1,051 draws and worse in 0; planted tail, better in 1,523 and worse in 361. One-sided
99.9 % Clopper-Pearson bounds of the rates: better ≥ 0.4907 / 0.7309, worse ≤ 0.0034 /
0.2084. With 300 draws at those rates (scipy.stats.binom): P(X < 106) = 6.0e-7, P(X < 181)
= 5.9e-7, P(X >= 10) = 1.3e-7, P(X >= 99) = 6.4e-7. Without the cap "better" is 0, so
both tests can fail."""

from __future__ import annotations

from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.bucket_isotonic import TAIL_LEVEL, geometric_tail_counts
from ldpfleet.protocol.cadr_theta_noise import noise_parties

from tests.unit.test_B_geometric_tail_statistics import EPS_THETA, N, _better_and_worse, _fleet


def _uncapped_against_capped(y, counts, widths, sd):
    """(old, new) bucket counts: main's reading without and with the capped tail mass."""
    reading = {"mode_z": dpp.MODE_Z, "gap_corrected": True, "stretch_level": TAIL_LEVEL}
    return tuple(
        geometric_tail_counts(y, counts, widths, sd, fitted_mass=capped, **reading)
        for capped in (False, True)
    )


def _cap_better_and_worse(kind: str, seed: int) -> tuple[int, int]:
    ratio = dpp.count_signal_ratio(N, _fleet(kind)[4].size, EPS_THETA, noise_parties(N))
    assert ratio >= dpp.UNIMODAL_RATIO_MAX
    return _better_and_worse(kind, seed, _uncapped_against_capped)


def test_the_cap_takes_far_noise_mass_out_of_the_tail():
    better, worse = _cap_better_and_worse("noise", 13)
    assert better >= 106 and worse <= 9, (better, worse)


def test_the_cap_places_a_sparse_heavy_tail_closer_more_often_than_not():
    better, worse = _cap_better_and_worse("planted", 14)
    assert better >= 181 and worse <= 98, (better, worse)
