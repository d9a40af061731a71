"""Tests written by helper T's hand mutation hunt (review T, 2026-12-07): each kills one
planted bug ("mutant") that the rest of the suite let pass. The docstring of every test names
the mutant: the file, the original code and the planted change.

Several of them drive a mechanism with a scripted generator (``Scripted``): an object with
an ``integers`` method returning chosen words (``mechanism_contract.checked_rng`` accepts any
object that draws as a ``numpy.random.Generator`` does). A statistical test cannot see these
bugs: each moves a probability of at most ``2**-20`` (one output cell of ``2**20``) or
``2**-62`` (one 62-bit word), so the test picks the very words that reach the code path and
checks the output exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.protocol.errors import BudgetExhausted, ParameterError, RemoteProtocolError
from ldpfleet.protocol.ledger import PrivacyLedger, WindowAccount
from ldpfleet.protocol.sw import _WORD, GRID, SquareWave
from ldpfleet.protocol.validate import integer_in

from tests.unit.test_cadr_device import ctl, plan, theta_msg
from tests.unit.test_V_noise_parties import _setup_after_plan


class Scripted:
    """A generator whose ``integers`` calls return the scripted answers in order (each a
    callable of ``(low, high, size)``) and are recorded in ``calls``."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls: list[tuple[object, object, object]] = []

    def integers(self, low, high=None, size=None, **_):
        self.calls.append((low, high, size))
        if not self.answers:
            raise AssertionError(f"unscripted draw integers({low}, {high}, size={size})")
        return self.answers.pop(0)(low, high, size)


# -- ledger ----------------------------------------------------------------------------------


def test_a_partly_refused_charge_run_counts_only_the_granted_steps_per_mechanism():
    """Kills ``protocol/ledger.py`` PrivacyLedger.charge_run
    ``self._mechanisms[name][mechanism] += granted`` -> ``+= count``: ledger.json's
    ``mechanisms`` then counted the refused steps of a run as spent."""
    ledger = PrivacyLedger("d0")
    ledger.open_account("stream", WindowAccount(eps=1.0, w=2))
    granted, refusal = ledger.charge_run("stream", 0.6, t0=0, count=3, mechanism="m:A")
    assert granted == 1 and isinstance(refusal, BudgetExhausted)  # window [0, 1]: 1.2 > 1
    account = ledger.to_dict()["accounts"]["stream"]
    assert account["charges"] == 1
    assert account["mechanisms"] == {"m:A": 1}


# -- validate --------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [np.int64(11), np.int32(-1)])
def test_integer_in_refuses_a_numpy_integer_just_outside_the_range(value):
    """Kills ``protocol/validate.py`` integer_in ``not low <= value <= high`` ->
    ``not low <= value <= high + 1`` (and the symmetric ``low - 1``): the fast path takes
    only Python ints, so a numpy integer (a count read from an array) goes through the
    general check, which no test reached at its edges."""
    with pytest.raises(ParameterError) as caught:
        integer_in(value, "n", 0, 10)
    assert caught.value.field == "n"
    assert integer_in(np.int64(10), "n", 0, 10) == 10
    assert integer_in(np.int64(0), "n", 0, 10) == 0


# -- Square Wave: the far branch and the uniform-cell rejection -----------------------------


def _sw_window_cells(mech: SquareWave, v: float) -> tuple[int, int, int]:
    """(start, near_cells, far_cells) as ``SquareWave.perturb`` computes them for ``v``."""
    start = round(v / GRID)  # "sw": the window starts at v (on the output_low + ... grid)
    near = 2 * round(mech.b / GRID)
    far = round((mech.output_high - mech.output_low) / GRID) - near
    return start, near, far


@pytest.mark.parametrize("scalar", [True, False])
def test_a_far_report_whose_offset_equals_the_window_start_lands_above_the_window(scalar):
    """Kills ``protocol/sw.py`` SquareWave.perturb ``offset + near_cells * (offset >=
    start)`` -> ``(offset > start)`` (vector path) and the same in ``_perturb_one`` (scalar
    path): a far report whose uniform offset is exactly the window's first cell landed on
    that cell, INSIDE the window (density p), and the first cell above the window could
    never be reported for this input (density q > 0 for every other input): an unbounded
    density ratio on one cell, far below what a statistical audit resolves. Scripted
    words: the far coin's word 0 (< P(far)'s first 62 bits: far) and the cell word equal to
    the window's start cell."""
    mech = SquareWave(1.0)
    v = 0.5
    start, near, far = _sw_window_cells(mech, v)
    assert 0 < start < far
    if scalar:
        rng = Scripted(lambda lo, hi, size: np.array([0, start], dtype=np.int64))
        y = mech.perturb(v, rng)
    else:
        rng = Scripted(lambda lo, hi, size: np.array([[0, start], [0, start]], dtype=np.int64))
        y = mech.perturb(np.array([v, v]), rng)[0]
    assert len(rng.calls) == 1
    _, hi = mech.window(v)
    assert y == mech.output_low + (start + near + 0.5) * GRID
    assert y > hi  # outside the window: the far density q
    assert mech.density(np.array([y]), v)[0] == mech.q


@pytest.mark.parametrize("scalar", [True, False])
def test_the_cell_word_at_the_rejection_edge_is_drawn_again(scalar):
    """Kills ``protocol/sw.py`` ``words[:, 1] >= (_WORD // span) * span`` -> ``>`` (vector
    path) and ``pick >= (_WORD // span) * span`` -> ``>`` (``_perturb_one``): the first word
    of the incomplete last block of ``span`` values must be rejected (else cell 0 of the
    span is ``2**-62`` more likely than the others: the "exactly uniform" cell of the
    module docstring). Scripted: a near report (coin word 2**62 - 1 >= every P(far) chunk)
    whose cell word is exactly the rejection edge; the redraw returns cell 3."""
    mech = SquareWave(1.0)
    v = 0.25
    start, near, _ = _sw_window_cells(mech, v)
    edge = (_WORD // near) * near
    assert edge < _WORD  # near is not a power of two: there is an incomplete block
    if scalar:
        rng = Scripted(
            lambda lo, hi, size: np.array([_WORD - 1, edge], dtype=np.int64),
            lambda lo, hi, size: 3,
        )
        y = mech.perturb(v, rng)
    else:
        rng = Scripted(
            lambda lo, hi, size: np.array([[_WORD - 1, edge]], dtype=np.int64),
            lambda lo, hi, size: np.full(np.shape(hi), 3, dtype=np.int64),
        )
        y = mech.perturb(np.array([v]), rng)[0]
    assert len(rng.calls) == 2, "the edge word was not rejected"
    assert y == mech.output_low + (start + 3 + 0.5) * GRID


# -- CADR-LDP device: the θ-bucket session checks at their edges ----------------------------


def test_a_session_one_participant_short_of_the_noise_parties_is_refused():
    """Kills ``protocol/cadr_device.py`` _check_theta_session ``plan.noise_parties >
    setup.participants`` -> ``> setup.participants + 1``: the existing test asks for 10**6
    parties, so any slack in the comparison passed. 5 noise parties in a session of 4: the
    opened sum carries 4/5 of the noise the ledgers are charged for."""
    with pytest.raises(RemoteProtocolError, match="noise_parties"):
        _setup_after_plan(5)
    _setup_after_plan(4)  # the edge itself is honest


@pytest.mark.parametrize(
    "session",
    [
        {"clip_high": 2.0**24},  # one short of SHARE_BOUND + 1
        {"clip_low": -(2.0**24) + 1},  # one short of -SHARE_BOUND
        {"scale": 1.5},  # >= 1 but not an integer: each share rounded
    ],
)
def test_a_session_just_short_of_holding_a_share_is_refused(session):
    """Kills ``protocol/cadr_device.py`` _check_theta_session ``setup.clip_high >=
    SHARE_BOUND + 1`` -> ``>= SHARE_BOUND``, ``setup.clip_low <= -SHARE_BOUND`` -> ``<=
    -SHARE_BOUND + 1`` and ``setup.scale >= 1 and float(setup.scale).is_integer()`` ->
    ``setup.scale >= 1``: the existing cases ([0, 1], clip_high 2, scale 0.5) are far
    from the edges, so a check off by one (or without its integer test) passed them."""
    with pytest.raises(RemoteProtocolError, match="θ-bucket session encodes"):
        _setup_after_plan(4, **session)
    _setup_after_plan(4, scale=2.0)  # an integer scale above 1 is honest


# -- Shamir: threshold - 1 shares say nothing --------------------------------------------------


def _shake_stream(seed: int):
    """A deterministic ``random_bytes`` (SHAKE-256 of seed and call counter)."""
    import hashlib

    calls = [0]

    def random_bytes(n: int) -> bytes:
        calls[0] += 1
        return hashlib.shake_256(f"{seed}/{calls[0]}".encode()).digest(n)

    return random_bytes


@pytest.mark.parametrize("threshold", [2, 4, 7])
def test_threshold_minus_one_shares_do_not_recover_the_secret(threshold):
    """Kills ``protocol/secagg/shamir.py`` split ``range(threshold - 1)`` coefficients ->
    ``range(threshold - 2)``: a polynomial of degree t - 2, so that t - 1 shares (one
    colluder short of the threshold) recover the secret, and every t shares still do (what
    the existing tests check; the mutant is caught today only by a test that counts the bytes
    ``split`` draws). Each (t - 1)-subset interpolated at 0 must miss the secret."""
    import itertools

    from ldpfleet.protocol.secagg import shamir

    secret = bytes(range(32))
    shares = shamir.split(secret, range(1, 9), threshold, _shake_stream(threshold))
    for subset in itertools.combinations(shares, threshold):
        assert shamir.combine({x: shares[x] for x in subset}, threshold) == secret
    for subset in itertools.combinations(shares, threshold - 1):
        # interpolated at 0, t - 1 shares give a uniform value mod p = 2**521 - 1: combine
        # refuses it (above 2**256: not 32 bytes) or returns another value, but never the
        # secret (probability 2**-521 per subset)
        try:
            opened = shamir.combine({x: shares[x] for x in subset}, threshold - 1)
        except ParameterError as refused:
            assert refused.field == "shares"
            continue
        assert opened != secret


# -- Piecewise: the far branch -----------------------------------------------------------------


def test_a_piecewise_far_report_whose_offset_equals_the_piece_start_lands_above_it():
    """Kills ``protocol/piecewise.py`` PiecewiseMechanism.perturb ``offset + near * (offset
    >= start)`` -> ``(offset > start)``: a far report whose uniform offset is the centre
    piece's first cell landed on it (inside the piece), and the first cell above the piece
    could never be reported for this input: as the Square Wave bug above, one cell in
    ``N`` (~2**21 cells at eps = 1), invisible to a statistical test. Scripted words: the
    far coin's word 0 (far) and the far offset equal to the piece's start cell."""
    from ldpfleet.protocol.piecewise import PiecewiseMechanism

    mech = PiecewiseMechanism(1.0)
    x = 0.5
    near = mech.centre_cells
    start = round(x * (mech.cells - near))
    rng = Scripted(
        lambda lo, hi, size: np.zeros(size, dtype=np.int64),  # the far coins' words
        lambda lo, hi, size: np.full(np.shape(hi), start, dtype=np.int64),  # the far offset
    )
    y = float(mech.perturb(np.array([x]), rng)[0])
    assert len(rng.calls) == 2
    _, right = mech.centre(np.array(x))
    assert y == mech.output_low + (start + near + 0.5) * mech.cell
    assert y > right
    assert mech.density(np.array([y]), x)[0] == mech.q


def test_the_piecewise_centre_piece_starts_at_the_rounded_cell():
    """Kills ``protocol/piecewise.py`` PiecewiseMechanism.centre ``np.rint(x * far)`` ->
    ``np.floor(x * far)``: the piece's first cell ``a`` must be the NEAREST cell to ``x M``
    (module docstring: ``a = rint(x M)``): the estimate is unbiased for ``a / M``, within
    ``1 / (2 M)`` of ``x``; ``floor`` put it up to ``1 / M`` below ``x``, a bias of the
    same sign for every report. Inputs whose ``x M`` has fractional part 3/4."""
    from ldpfleet.protocol.piecewise import PiecewiseMechanism

    for eps in (0.5, 1.0, 4.0):
        mech = PiecewiseMechanism(eps)
        far = mech.cells - mech.centre_cells
        x = np.array([(k + 0.75) / far for k in (0, 1, far // 3, far - 2)])
        left, right = mech.centre(x)
        a = (left - mech.output_low) / mech.cell
        assert np.all(np.abs(a / far - x) <= 0.5 / far)
        assert np.all(right - left == mech.centre_cells * mech.cell)


# -- Duchi: only +-C is a report ---------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_a_duchi_value_strictly_between_minus_c_and_c_is_not_a_report(eps):
    """Kills ``protocol/duchi.py`` DuchiMechanism.in_domain ``np.abs(np.abs(yy) -
    self.bound) <= tol`` -> ``(np.abs(yy) - self.bound) <= tol``: every value of modulus
    below ``C`` then passed as a report (the collector's intake check), so a device could
    send any value in (-C, C), e.g. 0, and move the mean estimate without the noise of a
    +-C answer."""
    from ldpfleet.protocol.duchi import DuchiMechanism

    mech = DuchiMechanism(eps)
    c = mech.bound
    y = np.array([c, -c, 0.0, 0.5 * c, -0.999 * c, 1.001 * c])
    assert mech.in_domain(y).tolist() == [True, True, False, False, False, False]
    with pytest.raises(ParameterError):
        mech.estimate_mean(np.array([c, 0.0]))


# -- samplers: the upper bound of exp(-gamma) ----------------------------------------------------


def _exp_neg_lower(gamma) -> object:
    """A rational LOWER bound of ``exp(-gamma)`` good to ~1e-90: ``decimal`` at 100 digits,
    ``-gamma`` rounded toward -inf (``ROUND_FLOOR``), its ``exp`` (correctly rounded, half
    even, whatever the context's rounding) stepped one unit down."""
    import decimal
    from fractions import Fraction

    g = Fraction(gamma)
    with decimal.localcontext() as ctx:
        ctx.prec = 100
        ctx.rounding = decimal.ROUND_FLOOR
        neg = decimal.Decimal(-g.numerator) / decimal.Decimal(g.denominator)  # <= -gamma
        return Fraction(neg.exp().next_minus())


@pytest.mark.parametrize("gamma", [1, 0.5, 0.75, 1.0 / 3.0, 2.5, 10.0, 50.0])
def test_exp_neg_upper_is_an_upper_bound_of_exp_minus_gamma(gamma):
    """Kills ``protocol/samplers.py`` _exp_neg_upper ``for k in range(1, 25)`` -> ``range(1,
    24)``: the Taylor partial sum then ends on a NEGATIVE term, a lower bound of
    ``exp(-x)`` (by ~x**24 / 24! = 1.6e-24 at x = 1), so ``exp_lower_bound``'s ratio R and
    ``geometric_ratio_bound``'s ``a`` lose the one-sided guarantee their privacy proofs
    rest on (``R <= e^eps``, ``a >= exp(-gamma)``); the 2**-60 / 2**-30 roundings after it
    hide the error from every float comparison, so the bound is compared here with
    100-digit decimal arithmetic."""
    from fractions import Fraction

    from ldpfleet.protocol.samplers import _exp_neg_upper

    g = Fraction(gamma)
    upper = _exp_neg_upper(g)
    lower = _exp_neg_lower(g)
    assert upper >= lower
    assert upper - lower < Fraction(1, 2**60)  # and within its stated 2**-60


@pytest.mark.parametrize("eps", [1e-6, 1e-3, 0.5, 1.0, 2.0, 10.0, 50.0])
def test_exp_lower_bound_is_at_most_e_to_the_eps_and_within_its_precision(eps):
    """Kills ``protocol/samplers.py`` exp_lower_bound rounding ``R - 1`` UP to 60 bits
    instead of down (``-((-(n << shift)) // d)`` for ``(n << shift) // d``): Square Wave's
    and Piecewise's density ratio R then exceeds ``e^eps`` by up to ``2**-60`` relative: a
    privacy loss ``ln R > eps`` (module docstrings: "R <= e^eps, exactly"). No test called
    ``exp_lower_bound`` directly, and no float comparison resolves ``2**-60``: compared with
    a 100-digit decimal upper bound of ``e^eps``."""
    import decimal
    from fractions import Fraction

    from ldpfleet.protocol.samplers import exp_lower_bound

    ratio = exp_lower_bound(eps)
    with decimal.localcontext() as ctx:
        ctx.prec = 100
        exact = decimal.Decimal(eps).exp()  # eps (a double) is exact in decimal
        upper = Fraction(exact.next_plus())
        lower = Fraction(exact.next_minus())
    assert ratio <= upper
    assert (lower - ratio) <= (lower - 1) * Fraction(1, 2**57)  # R - 1 kept to ~2**-58


# -- CADR-LDP device: queries and θ ---------------------------------------------------------------


def _cadr_device(neighbours: int, bound: int):
    """A device of ``neighbours`` neighbours given the plan of ``tests/unit/test_cadr_device``
    (eps 3, alpha 0.1, method ll) with degree bound ``bound``."""
    from ldpfleet.protocol.cadr_device import CadrDevice

    device = CadrDevice(
        "cadr-unit", "a", [f"n{i:02d}" for i in range(neighbours)], np.random.default_rng(0)
    )
    device.receive(ctl("cadr_plan"), plan(bound=bound), 0.0)
    return device


def _query(session: str, measure: str, thresholds: list[int]):
    from ldpfleet.protocol import topics
    from ldpfleet.protocol.cadr_messages import CadrQuery

    message = CadrQuery(
        run="cadr-unit", sender=topics.COLLECTOR_ID, session=session, measure=measure,
        thresholds=thresholds,
    )  # fmt: skip
    return topics.parse(topics.ctl("cadr-unit", "cadr_query")), message


def test_a_device_above_the_degree_bound_answers_the_error_query_as_one_at_the_bound():
    """Kills ``protocol/cadr_device.py`` _on_query ``d = float(min(self.degree,
    plan.degree_bound))`` -> ``float(self.degree)``: a device with more neighbours than
    the plan's degree bound D answered the local-error query with its own degree, so the
    exact (uncharged) θ-search sums moved with a degree above the public bound. Degree 12,
    D = 10: the answers of a degree-10 device."""
    device = _cadr_device(12, 10)
    device.receive(*_query("s1", "error", [1, 5]), 0.0)
    eps_dsr = 0.9 * 3.0
    assert device._client._x.tolist() == pytest.approx([9 + 1 / eps_dsr, 5 + 5 / eps_dsr])


def test_a_query_threshold_one_above_the_degree_bound_is_refused():
    """Kills ``protocol/cadr_device.py`` _on_query ``t > plan.degree_bound`` -> ``t >
    plan.degree_bound + 1``: no test sent a threshold above the bound."""
    device = _cadr_device(3, 10)
    with pytest.raises(RemoteProtocolError) as refused:
        device.receive(*_query("s1", "above", [1, 11]), 0.0)
    assert refused.value.field == "thresholds"
    device.receive(*_query("s2", "above", [1, 10]), 0.0)  # the bound itself is a threshold


def test_the_same_query_session_asked_twice_is_refused():
    """Kills ``protocol/cadr_device.py`` _on_query's ``session ... asked twice`` check
    (removed): a replayed query replaced the session's secure-aggregation client, so the
    device answered the same session twice."""
    device = _cadr_device(3, 10)
    device.receive(*_query("s1", "above", [1, 3]), 0.0)
    with pytest.raises(RemoteProtocolError) as refused:
        device.receive(*_query("s1", "above", [1, 3]), 0.0)
    assert refused.value.field == "session"


def test_theta_cannot_change_during_a_run():
    """Kills ``protocol/cadr_device.py`` _on_theta ``if self.theta is not None and
    message.theta != self.theta: raise`` (removed): a second ``cadr_theta`` with another θ
    was taken, so LPEA's cap and DSR's clip (and its Laplace scale θ / ε) could change
    between the projection and the release; the same θ again is harmless."""
    device = _cadr_device(3, 10)
    device.receive(ctl("cadr_theta"), theta_msg(3), 0.0)
    device.receive(ctl("cadr_theta"), theta_msg(3), 0.0)
    with pytest.raises(RemoteProtocolError) as refused:
        device.receive(ctl("cadr_theta"), theta_msg(4), 0.0)
    assert refused.value.field == "theta"
    assert device.theta == 3


# -- stream collector: a batch at the device's budget refusal ------------------------------------


def test_the_batch_holding_the_refused_step_is_out_of_range():
    """Kills ``protocol/stream.py`` StreamCollector._check_report_order ``report.seq >=
    state.expected`` -> ``>``: after a device's ``BudgetRefused`` at step 12 (batches of 5
    steps: batches 0 and 1 are all it may send), its batch 2 — the one holding the refused
    step, never privatised in full — must be refused as past the refusal (``out_of_range``);
    with the mutant it reached the credit check and was refused for another reason
    (``no_credit``), or accepted once credit allowed it."""
    from ldpfleet.protocol.events import Rejected
    from ldpfleet.protocol.messages import BudgetRefused
    from ldpfleet.protocol.stream import StreamCollector

    from tests.unit.test_stream_machines import RUN, _hello, _report, _up, make_config

    config = make_config()
    collector = StreamCollector(config, ["d0"])
    collector.receive(_up("d0", "hello"), _hello(config), 0.0)
    refusal = BudgetRefused(
        run=RUN, sender="d0", account="stream", request="sw_report", round=12,
        requested=config.eps0, remaining=0.0,
    )  # fmt: skip
    collector.receive(_up("d0", "budget_refused"), refusal, 0.5)
    collector.pop_events()
    collector.receive(_up("d0", "sw_report"), _report(config, seq=2), 1.0)
    [rejected] = [e for e in collector.pop_events() if isinstance(e, Rejected)]
    assert (rejected.field, rejected.code) == ("seq", "out_of_range")


# -- SecAgg client: the survivors' total below the threshold --------------------------------------


def test_a_client_refuses_to_unmask_when_the_survivors_total_is_below_the_threshold():
    """Kills ``protocol/secagg/client.py`` _on_unmask_request ``request.survivor_total <
    max(setup.threshold, len(survivors))`` -> ``< len(survivors)``: the existing case
    claims fewer survivors in total than the request itself lists (refused by both
    forms). Here the request is consistent (t - 1 survivors among this device's nodes, the
    total says t - 1) but below the threshold t: unmasking would open the sum of fewer
    than t inputs, so the client must refuse and reveal nothing."""
    from tests.unit.test_secagg_machines import _client_awaiting_unmask, _deliver_to, _request

    _, _, client = _client_awaiting_unmask(seed=6)
    me = client.label
    assert me is not None and client.setup is not None
    t = client.setup.threshold
    others = sorted(set(range(1, 7)) - {me})
    assert 2 <= t <= len(others)
    survivors = [me, *others[: t - 2]]  # t - 1 nodes
    request = _request(client, survivors, others[t - 2 :], total=t - 1)
    with pytest.raises(RemoteProtocolError, match="below the threshold"):
        _deliver_to(client, request)
    assert [o.message.type_name() for o in client.pop_outbound()] == ["sa_abort"]
