"""The DP θ search's pieces (protocol.cadr_theta_noise), its budget part
(protocol.cadr_budget) and the device's bucket answer (protocol.cadr_device).

Statistical tests: a chi-square goodness-of-fit statistic against the exact pmf over the
bins where the expected count is >= 5 (the two tails merged into one bin each) is, under
the null, asymptotically chi-square with (bins - 1) degrees of freedom; the threshold is
its 1 - 1e-6 quantile (``chi2.isf(1e-6, df)``), so a correct sampler fails a test with
probability ~1e-6 (fixed seeds: the outcome is in fact deterministic)."""

from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_budget import (
    CADR_EPS_MAX,
    CADR_EPS_MIN,
    THETA_EPS_MIN,
    THETA_FRACTION,
    THETA_LABEL,
    CadrBudget,
    check_run_eps,
)
from ldpfleet.protocol.cadr_device import CadrDevice
from ldpfleet.protocol.cadr_messages import CadrPlan, CadrQuery
from ldpfleet.protocol.cadr_theta_noise import (
    bucket_grid,
    bucket_vector,
    counts_above,
    noise_parties,
    noise_sum,
    polya_share,
    share_ratio,
    theta_from_counts,
)
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from scipy.stats import chi2

FALSE_FAILURE = 1e-6


def _chi_square_vs_two_sided_geometric(samples: np.ndarray, a: float) -> tuple[float, int]:
    """The statistic and its degrees of freedom against P(z) = (1-a)/(1+a) a^|z|."""
    n = samples.size
    pmf = lambda z: (1 - a) / (1 + a) * a ** np.abs(z)  # noqa: E731
    k = 0
    while n * pmf(k + 1) >= 5:
        k += 1
    inner = np.arange(-k, k + 1)
    expected = n * pmf(inner)
    tail = n * (1.0 - pmf(inner).sum()) / 2  # P(z > k) = P(z < -k)
    observed = np.array([np.sum(samples == z) for z in inner])
    obs_tails = np.array([np.sum(samples < -k), np.sum(samples > k)])
    stat = float(np.sum((observed - expected) ** 2 / expected))
    stat += float(np.sum((obs_tails - tail) ** 2 / tail))
    return stat, inner.size + 2 - 1


@pytest.mark.parametrize(("parties", "eps"), [(1, 1.0), (7, 1.0), (40, 0.5)])
def test_any_m_shares_sum_to_the_two_sided_geometric(parties, eps):
    rng = np.random.default_rng(parties)
    draws = 20_000
    # row j: the m devices' shares of draw j, summed (one entry each)
    sums = sum(polya_share(rng, parties, eps, draws) for _ in range(parties))
    stat, df = _chi_square_vs_two_sided_geometric(sums, float(share_ratio(eps)))
    assert stat < chi2.isf(FALSE_FAILURE, df), (stat, df)


def test_the_simulated_sum_of_shares_has_the_same_law():
    rng = np.random.default_rng(11)
    samples = noise_sum(rng, 9, 9, 0.8, 20_000)  # 9 survivors, noise for 9: exactly DLap
    stat, df = _chi_square_vs_two_sided_geometric(samples, float(share_ratio(0.8)))
    assert stat < chi2.isf(FALSE_FAILURE, df), (stat, df)


def test_more_survivors_than_parties_only_add_noise():
    # s = 2m survivors: NB(2) - NB(2) per entry, variance 2 * 2 a / (1 - a)^2 (twice the
    # mechanism's). Sample variance of 40,000 draws: relative sd sqrt((kurt - 1) / n) with
    # kurtosis < 10 here -> < 0.015; 0.1 is > 6.6 sd (two-sided ~4e-11).
    a = float(share_ratio(1.0))
    samples = noise_sum(np.random.default_rng(5), 20, 10, 1.0, 40_000)
    assert np.var(samples) == pytest.approx(4 * a / (1 - a) ** 2, rel=0.1)


def test_bucket_helpers():
    # threshold 0 first: degree 0 has a bucket of its own (not shared with degree 1)
    assert bucket_grid(2) == [0, 1] and bucket_grid(10, 48) == list(range(0, 10))
    grid = bucket_grid(1045)
    assert grid[:5] == [0, 1, 2, 3, 4] and grid[-1] < 1045 and grid == sorted(set(grid))
    assert bucket_vector(0, grid)[0] == 1 and bucket_vector(1, grid)[1] == 1
    assert grid[-1] == 1044 and bucket_grid(20, 19)[-1] == 19  # the bound D has its own bucket
    assert theta_from_counts([0, 1], np.array([0, 0]), 1.0, 9) == 1  # θ >= 1, never 0
    t = [1, 3, 7]
    assert bucket_vector(0, t).tolist() == [1, 0, 0, 0]
    assert bucket_vector(3, t).tolist() == [0, 1, 0, 0]  # 1 < 3 <= 3
    assert bucket_vector(8, t).tolist() == [0, 0, 0, 1]
    # degrees 0, 2, 2, 9 -> buckets [1, 2, 0, 1]; above 1: 3, above 3: 1, above 7: 1
    assert counts_above([1, 2, 0, 1]).tolist() == [3, 1, 1]
    assert theta_from_counts(t, np.array([3, 1, 1]), 1.0, 50) == 3
    assert theta_from_counts(t, np.array([3, 2, 2]), 1.0, 50) == 50
    assert noise_parties(4039) == 3636 and noise_parties(1) == 1
    with pytest.raises(ParameterError) as err:
        noise_parties(10, 1.5)
    assert err.value.field == "survival"


@pytest.mark.parametrize("bound", [1, 2, 3, 17, 18, 49, 50, 153, 1045, 1999, 4038, 10**6])
@pytest.mark.parametrize("buckets", [1, 2, 16, 17, 30, 48])
def test_bucket_grid_is_ascending_distinct_and_in_range(bound, buckets):
    grid = bucket_grid(bound, buckets)
    assert grid == sorted(set(grid)) and grid[0] == 0
    assert all(isinstance(t, int) for t in grid)
    assert grid[-1] == max(bound - 1, 1)  # the bound D has a bucket of its own
    assert len(grid) <= buckets + 2


def test_bucket_grid_is_a_function_of_the_public_bound_and_bucket_count_only():
    # no graph argument, deterministic: every device and the collector compute the same
    assert list(inspect.signature(bucket_grid).parameters) == ["degree_bound", "buckets"]
    assert bucket_grid(1999, 48) == bucket_grid(1999, 48)


def test_bucket_grid_keeps_every_small_degree_and_uses_all_its_buckets_at_d_n_minus_1():
    # D = n - 1 (the public bound): degrees 0..16 each get a bucket (the grid of before,
    # floor(D^(j/48)), lacked 8, 11, 13, 15, 16 at D = 1999 and had 43 distinct thresholds:
    # a Watts-Strogatz graph of degrees 4-10 had its histogram L1 at 0.033, 0.023 now)
    for bound in (1999, 4038, 10_000):
        grid = bucket_grid(bound, 48)
        assert grid[:17] == list(range(17)) and len(grid) == 48
        # above 16: one constant ratio r = ((D - 1) / 16)^(1/31), up to rounding down
        r = ((bound - 1) / 16) ** (1 / 31)
        ratios = [b / a for a, b in itertools.pairwise(grid[16:])]
        assert max(ratios) <= r * (1 + 1 / 16) and min(ratios) >= r * (1 - 1 / 16)
    assert bucket_grid(40, 48) == list(range(40))  # D - 1 <= B: every integer


def test_bucket_grid_has_no_wide_bucket_at_the_smallest_bucket_count():
    # Small graphs get the smallest bucket count (bucket_count's floor, 16, for n <= 128 at
    # any eps: eps_theta <= 0.5). The integer part was min(16, B - 1) = 15 thresholds, so
    # the grid was 0..15 and D - 1: five cliques of 20 (n = 100, every degree 19) had one
    # bucket 16..98 and a release MAE of 35.7 (constant median: 0). Now the integer part
    # is at most B // 3 and every bucket above it spans a ratio of at most ~2.
    grid = bucket_grid(99, 16)
    assert grid[:6] == list(range(6)) and len(grid) == 16
    assert 16 in grid and 22 in grid  # degree 19 in the bucket 17..22, not 16..98
    for bound in range(20, 6000, 7):
        for buckets in (16, 20, 25, 32, 40, 48):
            grid = bucket_grid(bound, buckets)
            if bound - 1 > buckets:
                assert max(b / max(a, 1) for a, b in itertools.pairwise(grid)) <= 2.2


def test_the_budget_split_names_the_theta_part_and_sums_to_eps():
    paper = CadrBudget(3.0, 0.1)
    assert paper.theta == 0 and paper.parts()[0][0] == "exponential"
    dp = CadrBudget.for_pipeline(3.0, 0.1, "dp", searched=True, devices=10_000)
    assert dp.theta_fraction == THETA_FRACTION and dp.parts()[0] == (THETA_LABEL, dp.theta)
    assert sum(e for _, e in dp.parts()) == pytest.approx(3.0, abs=1e-12)
    assert dp.dsr == paper.dsr  # 10,000 devices at ε = 3: no extra, DSR keeps (1 - α) ε
    small = CadrBudget.for_pipeline(0.5, 0.1, "dp", searched=True, devices=4039)
    assert small.theta == pytest.approx(0.43) and small.dsr < CadrBudget(0.5, 0.1).dsr
    assert set(dp.as_dict()) == {"theta", "ndoe", "lpea", "dsr"}
    assert CadrBudget.for_pipeline(3.0, 0.1, "dp", False, 4039).theta == 0  # θ given
    with pytest.raises(ParameterError) as err:
        CadrBudget(3.0, 0.1, 1.0)
    assert err.value.field == "theta_fraction"


def test_the_dp_theta_search_refuses_an_eps_too_small_for_its_exact_noise():
    # eps = 1e-4 (ε_θ = 8.6e-5): each device's exact Pólya share costs O(1/ε_θ²) coins;
    # `ldpfleet run` on a 31-node path did not finish in 5 minutes. Refused up front,
    # naming the field, the limit and the value (and the smallest eps that works). Since
    # the run range (eps >= CADR_EPS_MIN = 0.001) 1e-4 is refused by that; 0.005 (ε_θ =
    # 0.0043) by this floor.
    with pytest.raises(ParameterError) as err:
        CadrBudget.for_pipeline(0.005, 0.1, "dp", searched=True, devices=31)
    assert err.value.field == "eps"
    assert "0.005" in str(err.value) and f"{THETA_EPS_MIN}" in str(err.value)
    assert "0.005814" in str(err.value)  # THETA_EPS_MIN / 0.86, rounded up
    lowest = CadrBudget.for_pipeline(0.005814, 0.1, "dp", searched=True, devices=31)
    assert lowest.theta >= THETA_EPS_MIN
    # no θ search, or the paper's exact one: no Pólya noise, nothing to refuse
    assert CadrBudget.for_pipeline(0.005, 0.1, "dp", searched=False, devices=31).theta == 0
    assert CadrBudget.for_pipeline(0.005, 0.1, "paper", searched=True, devices=31).theta == 0


RUN = "r1"
C = {"run": RUN, "sender": topics.COLLECTOR_ID}
PLAN_T = topics.parse(topics.ctl(RUN, "cadr_plan"))
QUERY_T = topics.parse(topics.ctl(RUN, "cadr_query"))


def _plan(**extra) -> CadrPlan:
    fields = {"theta_fraction": THETA_FRACTION, "noise_parties": 3, **extra}
    return CadrPlan(**C, seq=1, eps=3.0, alpha=0.1, method="ll", degree_bound=10,
                    ndoe_parts=4, **fields)  # fmt: skip


def _query(measure: str = "bucket", seq: int = 2) -> CadrQuery:
    return CadrQuery(**C, seq=seq, session=f"s{seq}", measure=measure, thresholds=[1, 2, 5])


def test_the_device_charges_theta_and_answers_bucket_plus_share():
    device = CadrDevice(RUN, "n0001", ["n0002", "n0003"], np.random.default_rng(0))
    device.receive(PLAN_T, _plan(), 0.0)
    device.receive(QUERY_T, _query(), 0.0)
    answer = device.theta_answer
    assert answer is not None and answer.shape == (4,)
    share = polya_share(np.random.default_rng(0), 3, device.budget.theta, 4)  # same draws
    assert (answer - share).tolist() == [0, 1, 0, 0]  # degree 2: 1 < 2 <= 2
    account = device.ledger.to_dict()["accounts"]["node"]
    assert account["spent"] == pytest.approx(device.budget.theta) and account["charges"] == 1
    with pytest.raises(RemoteProtocolError) as err:  # one bucket query per run
        device.receive(QUERY_T, _query(seq=3), 0.0)
    assert err.value.field == "session"


def test_the_device_refuses_queries_of_the_other_search_and_a_plan_without_parties():
    device = CadrDevice(RUN, "n0001", ["n0002"], np.random.default_rng(0))
    device.receive(PLAN_T, _plan(), 0.0)
    with pytest.raises(RemoteProtocolError) as err:
        device.receive(QUERY_T, _query("above"), 0.0)
    assert err.value.field == "measure"
    paper = CadrDevice(RUN, "n0001", ["n0002"], np.random.default_rng(0))
    paper.receive(PLAN_T, _plan(theta_fraction=0.0, noise_parties=0), 0.0)
    with pytest.raises(RemoteProtocolError) as err:
        paper.receive(QUERY_T, _query("bucket"), 0.0)
    assert err.value.field == "measure"
    bad = CadrDevice(RUN, "n0001", ["n0002"], np.random.default_rng(0))
    with pytest.raises(RemoteProtocolError) as err:
        bad.receive(PLAN_T, _plan(noise_parties=0), 0.0)
    assert err.value.field == "noise_parties"


def test_a_device_over_budget_answers_only_its_share():
    device = CadrDevice(RUN, "n0001", ["n0002"], np.random.default_rng(4), max_eps=3.0)
    device.receive(PLAN_T, _plan(), 0.0)
    device.ledger.charge("node", 2.95, mechanism="elsewhere")  # leaves less than θ's part
    device.receive(QUERY_T, _query(), 0.0)
    share = polya_share(np.random.default_rng(4), 3, device.budget.theta, 4)
    assert (device.theta_answer - share).tolist() == [0, 0, 0, 0]  # data-independent
    assert device.refusal is not None and device.refusal.request == "theta"


def test_the_share_ratio_is_rational_and_never_spends_more_than_eps():
    import math

    for eps in (0.03, 0.18, 0.8, 3.0):
        a = share_ratio(eps)
        assert a.denominator <= 2**30 and a >= math.exp(-eps / 2) - 1e-15
        assert 2 * math.log(1 / float(a)) <= eps * (1 + 1e-12)  # eps' <= eps


def test_bucket_count_is_coarser_when_the_noise_is_large_for_n():
    from ldpfleet.protocol.cadr_theta_noise import BUCKETS, MIN_BUCKETS, bucket_count

    assert bucket_count(4039, 0.03) == MIN_BUCKETS  # round(15.1) = 15 < 16
    assert bucket_count(4039, 0.18) == BUCKETS and bucket_count(40, 0.18) == MIN_BUCKETS
    assert bucket_count(7115, 0.03) == round(7115 * 0.03 / 8) == 27
    with pytest.raises(ParameterError) as info:
        bucket_count(0, 0.1)
    assert info.value.field == "devices"


# --- the range of a run's eps (QA: 1e-300 died in thm35_bound, 1e-308 in noise_weight) -----


@pytest.mark.parametrize("eps", [1e-310, 1e-308, 1e-300, 1e-4, 0.000999, 50.5])
@pytest.mark.parametrize(
    ("pipeline", "searched"), [("dp", False), ("dp", True), ("paper", False), ("paper", True)]
)
def test_every_pipeline_refuses_an_eps_outside_the_run_range(eps, pipeline, searched):
    with pytest.raises(ParameterError) as err:
        CadrBudget.for_pipeline(eps, 0.1, pipeline, searched=searched, devices=31)
    assert err.value.field == "eps"
    assert f"[{CADR_EPS_MIN:g}, {CADR_EPS_MAX:g}]" in str(err.value) and repr(eps) in str(err.value)


def test_the_run_range_keeps_ordinary_budgets():
    assert (CADR_EPS_MIN, CADR_EPS_MAX) == (0.001, 50.0)
    for eps in (CADR_EPS_MIN, 0.1, 3.0, 10.0, CADR_EPS_MAX):
        assert check_run_eps(eps) == eps
        assert CadrBudget.for_pipeline(eps, 0.1, "paper", True, 31) == CadrBudget(eps, 0.1)


def test_a_fixed_theta_fraction_takes_the_same_checks():
    # bench cadr-sweep's θ-search rows built CadrBudget(eps, alpha, f) directly: no floor
    with pytest.raises(ParameterError) as err:
        CadrBudget.with_fraction(0.01, 0.1, 1.0 / 3.0)  # ε_θ = 3.3e-4 < THETA_EPS_MIN
    assert err.value.field == "eps" and f"{THETA_EPS_MIN}" in str(err.value)
    with pytest.raises(ParameterError) as err:
        CadrBudget.with_fraction(1e-300, 0.1, 0.0)
    assert err.value.field == "eps"
    assert CadrBudget.with_fraction(3.0, 0.1, 0.6) == CadrBudget(3.0, 0.1, 0.6)
