"""GC-DP private-calibration mode with composed accounting (collector/gcdp/private_calibration.py,
seed 000 Section 4.2)."""

from __future__ import annotations

import math

import ldpfleet.collector.gcdp as gcdp
import ldpfleet.collector.gcdp.private_calibration as pc
import numpy as np
import pytest
from ldpfleet.collector.gcdp.private_calibration import (
    CAL_ACCOUNT,
    MECHANISM_LABELS,
    PrivateCalibration,
    pair_count,
)
from ldpfleet.collector.gcdp.release import laplace_release
from ldpfleet.protocol.errors import BudgetExhausted, LocalProtocolError, ParameterError
from ldpfleet.protocol.ledger import BudgetAccount, PrivacyLedger, WindowAccount

M, D = 4, 3


def _cal(**over) -> PrivateCalibration:
    base = {"eps_G": 0.3, "eps_tau": 0.1, "eps_mu": 0.2, "eps_xi": 0.15, "n_nodes": M, "d": D}
    return PrivateCalibration(**{**base, **over})


def _inputs(m: int = M, d: int = D, grid_size: int = 5):
    rng = np.random.default_rng(7)
    upper = np.triu(rng.uniform(0.0, 1.0, (m, m)), k=1)
    scores = upper + upper.T + np.eye(m)  # diagonal is ignored
    return (
        scores,
        rng.uniform(0.0, 1.0, d),
        rng.uniform(0.0, 1.0, d),
        np.linspace(0.2, 0.9, grid_size),
    )


def _ledger(eps: float, account: str = CAL_ACCOUNT) -> PrivacyLedger:
    ledger = PrivacyLedger("collector")
    ledger.open_account(account, BudgetAccount(eps=eps))
    return ledger


# --- accounting -----------------------------------------------------------------------------


def test_ledger_spends_exactly_eps_cal_with_one_charge_per_mechanism():
    cal = _cal()
    assert cal.eps_cal == ((0.3 + 0.1) + 0.2) + 0.15
    ledger = _ledger(10.0)
    out = cal.release(*_inputs(), ledger=ledger, rng=np.random.default_rng(1))
    acct = ledger.account(CAL_ACCOUNT)
    assert acct.spent == cal.eps_cal  # exact, bit for bit
    assert out.eps_cal == cal.eps_cal
    assert acct.charges == 4
    assert ledger.mechanisms(CAL_ACCOUNT) == {label: 1 for label in MECHANISM_LABELS.values()}


def test_exactly_eps_cal_budget_is_enough_and_then_exhausted():
    cal = _cal()
    ledger = _ledger(cal.eps_cal)
    cal.release(*_inputs(), ledger=ledger, rng=np.random.default_rng(2))
    assert ledger.account(CAL_ACCOUNT).spent == cal.eps_cal
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    with pytest.raises(BudgetExhausted):
        cal.release(*_inputs(), ledger=ledger, rng=rng)
    assert ledger.account(CAL_ACCOUNT).spent == cal.eps_cal
    assert rng.bit_generator.state == state


@pytest.mark.parametrize("room", [0.0, 0.3, 0.7499])  # 0.3 covers eps_G alone; 0.75 is eps_cal
def test_overspend_is_refused_before_anything_is_charged_or_drawn(room):
    cal = _cal()
    ledger = PrivacyLedger("collector")
    ledger.open_account(CAL_ACCOUNT, BudgetAccount(eps=1.0, spent=1.0 - room))
    rng = np.random.default_rng(4)
    state = rng.bit_generator.state
    with pytest.raises(BudgetExhausted) as err:
        cal.release(*_inputs(), ledger=ledger, rng=rng)
    assert err.value.field == "eps_cal"
    acct = ledger.account(CAL_ACCOUNT)
    assert acct.spent == 1.0 - room and acct.charges == 0
    assert ledger.mechanisms(CAL_ACCOUNT) == {}
    assert rng.bit_generator.state == state  # nothing drawn


class _SpyGenerator(np.random.Generator):
    """Records every draw in a shared event log."""

    def __init__(self, seed: int, log: list[str]) -> None:
        super().__init__(np.random.PCG64(seed))
        self.log = log

    def laplace(self, *args, **kwargs):
        self.log.append("draw:exact")
        return super().laplace(*args, **kwargs)

    def integers(self, *args, **kwargs):  # the exact samplers (protocol.samplers)
        self.log.append("draw:exact")
        return super().integers(*args, **kwargs)

    def random(self, *args, **kwargs):
        self.log.append("draw:uniform")
        return super().random(*args, **kwargs)


def test_every_charge_precedes_its_draw():
    log: list[str] = []
    ledger = _ledger(10.0)
    original = ledger.charge

    def charge(name, eps, *, t=None, mechanism=""):
        log.append(f"charge:{mechanism}")
        original(name, eps, t=t, mechanism=mechanism)

    ledger.charge = charge  # type: ignore[method-assign]
    _cal().release(*_inputs(), ledger=ledger, rng=_SpyGenerator(5, log))
    # an exact draw (Laplace, the exponential mechanism) takes several integer draws: one
    # entry per run of them
    log = [entry for i, entry in enumerate(log) if i == 0 or entry != log[i - 1]]
    assert log == [
        f"charge:{MECHANISM_LABELS['S']}",
        "draw:exact",
        f"charge:{MECHANISM_LABELS['tau']}",
        "draw:exact",
        f"charge:{MECHANISM_LABELS['mu']}",
        "draw:exact",
        f"charge:{MECHANISM_LABELS['xi']}",
        "draw:exact",
    ]


def test_window_account_is_charged_at_the_given_step():
    cal = _cal()
    ledger = PrivacyLedger("collector")
    ledger.open_account("cal_w", WindowAccount(eps=1.0, w=3))
    cal.release(*_inputs(), ledger=ledger, rng=np.random.default_rng(6), account="cal_w", t=2)
    assert ledger.account("cal_w").total_spent == pytest.approx(cal.eps_cal, rel=1e-15)
    with pytest.raises(BudgetExhausted):  # the window [0, 2] .. [2, 4] holds 0.75 already
        cal.release(*_inputs(), ledger=ledger, rng=np.random.default_rng(6), account="cal_w", t=4)


def test_missing_account_is_refused_without_drawing():
    rng = np.random.default_rng(8)
    state = rng.bit_generator.state
    with pytest.raises(LocalProtocolError):
        _cal().release(*_inputs(), ledger=PrivacyLedger("collector"), rng=rng)
    assert rng.bit_generator.state == state


# --- the exponential mechanism for tau --------------------------------------------------------


def test_tau_probabilities_exact_two_candidates():
    # eps_tau = 2 ln 3, Delta U = 1: weights exp(ln 3 * U) = 3 and 1 -> 3/4, 1/4.
    cal = _cal(eps_tau=2.0 * math.log(3.0), tau_grid=(0.1, 0.2))
    assert cal.tau_probabilities([1.0, 0.0]) == pytest.approx([0.75, 0.25], abs=1e-15)


def test_tau_probabilities_exact_three_candidates_and_tighter_sensitivity():
    # weights exp(eps U / (2 Delta U)) with eps / (2 Delta U) = 2 ln 2: 4, 2, 1 -> 4/7, 2/7, 1/7.
    grid = (0.1, 0.2, 0.3)
    utilities = [1.0, 0.5, 0.0]
    expected = [4 / 7, 2 / 7, 1 / 7]
    wide = _cal(eps_tau=4.0 * math.log(2.0), tau_grid=grid)
    tight = _cal(eps_tau=2.0 * math.log(2.0), tau_grid=grid, tau_sensitivity=0.5)
    assert wide.tau_probabilities(utilities) == pytest.approx(expected, abs=1e-15)
    assert tight.tau_probabilities(utilities) == pytest.approx(expected, abs=1e-15)
    # Equal utilities: uniform, whatever eps_tau is.
    assert wide.tau_probabilities([0.3, 0.3, 0.3]) == pytest.approx([1 / 3] * 3, abs=1e-15)


def test_released_tau_is_a_grid_value_chosen_by_the_exponential_mechanism():
    grid = (0.1, 0.2, 0.3)
    # A huge eps_tau makes the best candidate certain (its probability is 1 - O(e^-500)).
    cal = _cal(eps_tau=2000.0, tau_grid=grid)
    out = cal.release(
        *_inputs()[:3], [0.0, 0.5, 1.0], ledger=_ledger(3000.0), rng=np.random.default_rng(9)
    )
    assert out.tau_index == 2 and out.tau == 0.3


# --- S~ symmetry, ranges and post-processing --------------------------------------------------


def test_noisy_scores_are_symmetric_zero_diagonal_and_in_unit_interval():
    cal = _cal(n_nodes=6)
    out = cal.release(*_inputs(m=6), ledger=_ledger(10.0), rng=np.random.default_rng(10))
    s = out.scores
    assert s.shape == (6, 6)
    assert np.array_equal(s, s.T)
    assert np.all(np.diag(s) == 0.0)
    assert np.all((s >= 0.0) & (s <= 1.0))
    assert np.all((out.utility >= 0.0) & (out.utility <= 1.0))
    assert np.all((out.influence >= 0.0) & (out.influence <= 1.0))
    assert not s.flags.writeable


def test_pairs_round_trip():
    pairs = np.arange(1, pair_count(5) + 1) / 20.0
    matrix = pc.pairs_to_matrix(pairs, 5)
    assert np.array_equal(pc.upper_pairs(matrix), pairs)
    assert matrix[0, 1] == pairs[0] and matrix[1, 0] == pairs[0] and matrix[3, 4] == pairs[-1]


def test_default_sensitivities_are_the_universal_bounds():
    cal = _cal(n_nodes=5, d=7)
    assert cal.n_pairs == 10
    assert cal.score_sensitivity == 10.0
    assert cal.tau_sensitivity == 1.0
    assert cal.utility_sensitivity == 7.0 and cal.influence_sensitivity == 7.0


def test_theta_post_processing_and_composed_total():
    eps_rel = 1.0
    cal = _cal(eps_G=50.0, eps_mu=30.0, eps_xi=30.0)
    ledger = _ledger(cal.eps_cal)
    ledger.open_account("gcdp_release", BudgetAccount(eps=eps_rel))
    out = cal.release(*_inputs(), ledger=ledger, rng=np.random.default_rng(11))
    bounds = np.array([0.5, 0.2, 0.0])
    theta = out.theta(eps_rel=eps_rel, bounds=bounds, coordinate_map=[[0], [1, 2], [3]])
    assert theta.tau == out.tau
    assert np.array_equal(theta.graph.scores, out.scores)
    assert np.all(theta.graph.edge_counts() <= cal.constants.degree_cap)
    assert np.array_equal(theta.xi_hat, np.minimum(out.influence, cal.constants.g_max))
    assert np.all(theta.scales >= bounds)
    assert math.fsum(theta.budgets) <= eps_rel
    assert ledger.account(CAL_ACCOUNT).spent == cal.eps_cal  # theta charged nothing
    ledger.charge("gcdp_release", eps_rel, mechanism="gcdp_release_laplace")  # the caller's part
    y = laplace_release(
        [0.4, 0.6, 0.0],
        bounds=bounds,
        scales=theta.scales,
        budgets=theta.budgets,
        eps_rel=eps_rel,
        low=0.0,
        high=1.0,
        rng=np.random.default_rng(12),
    )
    assert y.shape == (3,)
    total = ledger.account(CAL_ACCOUNT).spent + ledger.account("gcdp_release").spent
    assert total == cal.eps_cal + eps_rel


def test_g_max_caps_xi_hat():
    cal = _cal(constants=gcdp.GcdpConstants(g_max=0.25), eps_xi=1e6)  # near-noiseless V_xi
    scores, mu, _, u_tau = _inputs()
    out = cal.release(
        scores, mu, [0.9, 0.1, 0.5], u_tau, ledger=_ledger(2e6), rng=np.random.default_rng(13)
    )
    theta = out.theta(eps_rel=1.0, bounds=[0.0, 0.0, 0.0], coordinate_map=[[0], [1], [2]])
    assert np.all(theta.xi_hat <= 0.25)
    assert theta.xi_hat[0] == 0.25


# --- statistical check of the noise scales (with planted bugs) --------------------------------
#
# Every input coordinate is 0.5, so a released coordinate is strictly inside (0, 1) iff its
# noise satisfies |Z| < 0.5, which for Z ~ Laplace(0, b) has probability p(b) = 1 - exp(-0.5/b)
# (projection leaves exactly these untouched). Over n_runs releases each vector yields
# N = n_runs * length independent Bernoulli(p(b)) indicators. Hoeffding's inequality gives
# P(|p_hat - p| >= t) <= 2 exp(-2 N t^2); with t = sqrt(ln(2 / delta) / (2 N)) and
# delta = 1e-6 / 3 per vector (three vectors, union bound) a CORRECT implementation fails
# with probability <= 1e-6 in total. This bound is rigorous (no CLT). The seed is fixed, so
# the test is deterministic as well.
#
# Configuration: M = 11 (P = 55), d = 50, eps_G = 110, eps_mu = 100, eps_xi = 50, so the
# correct scales are b_S = 55 / 110 = 0.5, b_mu = 50 / 100 = 0.5, b_xi = 50 / 50 = 1 and
# p = 0.632, 0.632, 0.393. With n_runs = 200, N = 11000 / 10000 / 10000 and t <= 0.028. A
# planted bug that uses 1.5 eps moves p to 0.777 / 0.777 / 0.528 (shifts >= 0.135 ~ 4.8 t);
# one that drops Delta_1 (scale 1 / eps) moves p to ~1. Either lands > t away from the
# correct p except with probability far below 1e-6 (Hoeffding again, around the buggy p).

STAT_M, STAT_D, STAT_RUNS = 11, 50, 200
DELTA_PER_VECTOR = 1e-6 / 3


def _inside_fraction_deviations(seed: int = 2024) -> dict[str, tuple[float, float]]:
    cal = PrivateCalibration(
        eps_G=110.0, eps_tau=1.0, eps_mu=100.0, eps_xi=50.0, n_nodes=STAT_M, d=STAT_D
    )
    expected_b = {"S": 0.5, "mu": 0.5, "xi": 1.0}
    scores = np.full((STAT_M, STAT_M), 0.5)
    half = np.full(STAT_D, 0.5)
    rng = np.random.default_rng(seed)
    inside = {"S": 0, "mu": 0, "xi": 0}
    count = {"S": 0, "mu": 0, "xi": 0}
    for _ in range(STAT_RUNS):
        out = cal.release(scores, half, half, [0.5] * 5, ledger=_ledger(cal.eps_cal), rng=rng)
        for key, values in (
            ("S", pc.upper_pairs(out.scores)),
            ("mu", out.utility),
            ("xi", out.influence),
        ):
            inside[key] += int(np.count_nonzero((values > 0.0) & (values < 1.0)))
            count[key] += values.size
    result = {}
    for key, b in expected_b.items():
        p = 1.0 - math.exp(-0.5 / b)
        t = math.sqrt(math.log(2.0 / DELTA_PER_VECTOR) / (2.0 * count[key]))
        result[key] = (abs(inside[key] / count[key] - p), t)
    return result


def test_noise_scales_match_sensitivity_over_eps():
    for key, (deviation, threshold) in _inside_fraction_deviations().items():
        assert deviation < threshold, (key, deviation, threshold)


@pytest.mark.parametrize(
    "bug",
    [
        lambda sensitivity, eps: sensitivity / (1.5 * eps),  # wrong eps (1.5x too large)
        lambda sensitivity, eps: 1.0 / eps,  # sensitivity forgotten
    ],
    ids=["eps_times_1.5", "no_sensitivity"],
)
def test_planted_scale_bug_is_caught(monkeypatch, bug):
    monkeypatch.setattr(pc, "laplace_scale", bug)
    deviations = _inside_fraction_deviations()
    assert all(dev > threshold for dev, threshold in deviations.values()), deviations


# --- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"eps_G": 0.0}, "eps_G"),
        ({"eps_tau": -1.0}, "eps_tau"),
        ({"eps_mu": float("nan")}, "eps_mu"),
        ({"eps_xi": "0.1"}, "eps_xi"),
        ({"eps_xi": True}, "eps_xi"),
        ({"n_nodes": 1}, "n_nodes"),
        ({"n_nodes": 2.5}, "n_nodes"),
        ({"d": 0}, "d"),
        ({"tau_grid": ()}, "tau_grid"),
        ({"tau_grid": 0.1}, "tau_grid"),
        ({"tau_grid": (0.1, 1.5)}, "tau_grid[1]"),
        ({"tau_grid": (0.1, 0.1)}, "tau_grid"),
        ({"score_sensitivity": pair_count(M) + 0.5}, "score_sensitivity"),
        ({"score_sensitivity": 0.0}, "score_sensitivity"),
        ({"tau_sensitivity": 1.5}, "tau_sensitivity"),
        ({"utility_sensitivity": D + 1.0}, "utility_sensitivity"),
        ({"influence_sensitivity": -1.0}, "influence_sensitivity"),
        ({"constants": "table5"}, "constants"),
        ({"eps_G": 1e308, "eps_tau": 1e308}, "eps_G"),
    ],
)
def test_bad_construction_parameters_name_the_field(over, field):
    with pytest.raises(ParameterError) as err:
        _cal(**over)
    assert err.value.field == field


def _bad_inputs():
    scores, mu, xi, u_tau = _inputs()
    asym = scores.copy()
    asym[0, 1] = 0.0
    big = scores.copy()
    big[1, 2] = big[2, 1] = 1.5
    return [
        ((scores[:3, :3], mu, xi, u_tau), "scores"),
        ((asym, mu, xi, u_tau), "scores"),
        ((big, mu, xi, u_tau), "scores"),
        ((scores, mu[:2], xi, u_tau), "utility"),
        ((scores, mu, [0.1, 0.2, 1.5], u_tau), "influence[2]"),
        ((scores, mu, xi, u_tau[:4]), "tau_utility"),
        ((scores, mu, xi, [0.1, -0.2, 0.3, 0.4, 0.5]), "tau_utility[1]"),
    ]


@pytest.mark.parametrize(("args", "field"), _bad_inputs())
def test_bad_release_inputs_name_the_field_and_charge_nothing(args, field):
    ledger = _ledger(10.0)
    rng = np.random.default_rng(14)
    state = rng.bit_generator.state
    with pytest.raises(ParameterError) as err:
        _cal().release(*args, ledger=ledger, rng=rng)
    assert err.value.field == field
    assert ledger.account(CAL_ACCOUNT).charges == 0
    assert rng.bit_generator.state == state


def test_bad_ledger_and_rng_are_refused():
    with pytest.raises(ParameterError) as err:
        _cal().release(*_inputs(), ledger={}, rng=np.random.default_rng(0))
    assert err.value.field == "ledger"
    ledger = _ledger(10.0)
    with pytest.raises(ParameterError) as err:
        _cal().release(*_inputs(), ledger=ledger, rng=np.random.RandomState(0))
    assert err.value.field == "rng"
    assert ledger.account(CAL_ACCOUNT).charges == 0
