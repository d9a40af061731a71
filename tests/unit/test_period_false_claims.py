"""False claims of ``detect_period`` on strongly red, lightly noised streams (issue 19, helper
F): step 3b (collector/period.py), a claim renamed by step 3 to a multiple with fewer than
``PENALTY_CYCLES`` cycles must pass step 6's masked check at that period's own cycles.

Streams: SW reports (eps0 = 5) of AR(1) phi = 0.9, 0.95, 0.98 and a random walk, n = 1,000,
``trial_rng(5119, "aperiodic", trial, "KIND/1000/5.0")``: seed 5119 is a calibration seed
of this change (with 2031 and 5113), never its evaluation seed (6011, docs/cpr.md)."""

from __future__ import annotations

import pytest
from ldpfleet.app.bench_cpr import aperiodic_stream, trial_rng
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave

RED_KINDS = ("ar1_0.9", "ar1_0.95", "ar1_0.98", "random_walk")


def _reports(kind: str, trial: int, n: int = 1000, eps0: float = 5.0):
    rng = trial_rng(5119, "aperiodic", trial, f"{kind}/{n}/{eps0}")
    return SquareWave(eps0).perturb(aperiodic_stream(kind, n, rng), rng)


@pytest.mark.parametrize(
    ("kind", "trial", "old"),
    [("ar1_0.9", 55, 225), ("ar1_0.9", 104, 139), ("ar1_0.95", 13, 126), ("ar1_0.95", 781, 270)],
)
def test_a_multiple_with_few_cycles_is_gated_at_its_own_cycles(kind, trial, old):
    """The detector before step 3b claimed ``old`` here: a candidate with >= 12 cycles
    passed the unpenalised gate near its threshold, and step 3 moved it to a multiple with
    4-8 cycles (the multiple test reads the raw, red low-frequency power as the multiple's
    extra harmonics). At the multiple's own cycles the masked check fails."""
    estimate = detect_period(_reports(kind, trial))
    assert estimate.period is None
    assert estimate.candidate == old


@pytest.mark.slow
def test_false_claims_on_red_streams_stay_below_half_a_percent():
    """8,000 streams (2,000 per kind). Threshold: the smallest ``k`` with ``P(Bin(8000,
    0.005) >= k) <= 1e-6`` is 74 (``scipy.stats.binom.sf(73, 8000, 0.005) = 9.0e-7``), so
    a detector whose true rate on these families is 0.5 % fails with probability < 1e-6.
    Measured at seed 5119, 2,500 streams per kind (a superset of these): the detector
    before step 3b claimed on 64 of 10,000 (AR(1) 0.9: 24, i.e. 0.96 %), its first version
    (steps 4-6 at the claimed period) on 26 (docs/cpr.md, "False claims on red streams").
    The test does not fail on the old detector: its pooled rate (~0.6-0.7 %) is too close
    to 0.5 % to separate at 1e-6 with a quick-enough test; the streams above pin the
    mechanism instead (they fail on it)."""
    claims = 0
    for kind in RED_KINDS:
        for trial in range(2000):
            claims += detect_period(_reports(kind, trial)).period is not None
    assert claims < 74, claims
