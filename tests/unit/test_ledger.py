"""Tests of the per-device privacy ledger (protocol/ledger.py): w-event accounting."""

from __future__ import annotations

import contextlib
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ldpfleet.protocol.errors import BudgetExhausted, LocalProtocolError, ParameterError
from ldpfleet.protocol.ledger import BudgetAccount, PrivacyLedger, WindowAccount

# --- WindowAccount -------------------------------------------------------------------------


def test_uniform_allocation_fills_every_window_exactly():
    acct = WindowAccount(eps=2.0, w=5)
    for t in range(200):
        assert acct.can_charge(t, 0.4)
        acct.charge(t, 0.4)
    spent = acct.window_spent()
    assert len(spent) == 196
    assert all(x == pytest.approx(2.0, rel=1e-12) for x in spent)
    assert acct.max_window_spent() == pytest.approx(2.0, rel=1e-12)
    assert acct.total_spent == pytest.approx(80.0)
    assert acct.refusals == 0
    assert acct.charges == 200


@pytest.mark.parametrize(("eps", "w"), [(1.0, 3), (0.3, 7), (5.0, 25), (0.1, 10), (1.0, 1)])
def test_eps_over_w_fits_despite_rounding(eps, w):
    acct = WindowAccount(eps=eps, w=w)
    for t in range(3 * w):
        acct.charge(t, eps / w)
    assert acct.max_window_spent() == pytest.approx(eps, rel=1e-12)


def test_extra_charge_in_full_window_refused_and_records_nothing():
    acct = WindowAccount(eps=2.0, w=5)
    for t in range(5):
        acct.charge(t, 0.4)
    before = acct.to_dict()
    assert not acct.can_charge(3, 0.4)
    with pytest.raises(BudgetExhausted) as info:
        acct.charge(3, 0.4)
    assert info.value.field == "eps0"
    assert "[0, 4]" in info.value.reason
    assert "2.4" in info.value.reason
    after = acct.to_dict()
    assert after["refusals"] == 1
    after["refusals"] = 0
    assert after == before
    # even a tiny extra amount is refused, and refusals accumulate
    with pytest.raises(BudgetExhausted):
        acct.charge(0, 1e-6)
    assert acct.refusals == 2
    assert acct.charges == 5
    # the next step is fine: window [1, 5] holds 4 * 0.4 + 0.4
    acct.charge(5, 0.4)
    assert acct.max_window_spent() == pytest.approx(2.0)


def test_slightly_more_than_eps_over_w_fails_on_the_wth_step():
    eps, w = 2.0, 5
    acct = WindowAccount(eps=eps, w=w)
    eps0 = eps / w + 1e-6
    for t in range(w - 1):
        acct.charge(t, eps0)
    assert not acct.can_charge(w - 1, eps0)
    with pytest.raises(BudgetExhausted):
        acct.charge(w - 1, eps0)
    assert acct.refusals == 1
    assert acct.total_spent == pytest.approx((w - 1) * eps0)


def test_windows_on_both_sides_of_a_step_are_checked():
    acct = WindowAccount(eps=2.0, w=5)
    acct.charge(10, 2.0)
    # every window containing step 10 is full: [6, 10] .. [10, 14]
    for t in range(6, 15):
        assert not acct.can_charge(t, 1e-3), t
        with pytest.raises(BudgetExhausted):
            acct.charge(t, 1e-3)
    assert acct.refusals == 9
    # steps 5 and 15 share no window with 10
    acct.charge(5, 2.0)
    acct.charge(15, 2.0)
    acct.charge(0, 2.0)
    assert acct.max_window_spent() == pytest.approx(2.0)


def test_window_spent_hand_example():
    acct = WindowAccount(eps=10.0, w=3)
    acct.charge(0, 1.0)
    acct.charge(2, 2.0)
    acct.charge(3, 0.5)
    acct.charge(5, 1.0)
    acct.charge(2, 0.25)  # same step twice accumulates
    # per step: [1, 0, 2.25, 0.5, 0, 1]; windows of 3 start at s = 0..3
    assert acct.window_spent() == pytest.approx([3.25, 2.75, 2.75, 1.5])
    assert acct.max_window_spent() == pytest.approx(3.25)
    assert acct.total_spent == pytest.approx(4.75)


def test_window_spent_with_fewer_than_w_steps():
    acct = WindowAccount(eps=2.0, w=5)
    assert acct.window_spent() == [0.0]
    acct.charge(0, 0.4)
    acct.charge(3, 0.7)
    assert acct.window_spent() == pytest.approx([1.1])
    acct.charge(4, 0.1)
    assert acct.window_spent() == pytest.approx([1.2])


def test_long_stream_is_fast_and_correct():
    acct = WindowAccount(eps=1.0, w=25)
    for t in range(10_000):
        acct.charge(t, 1.0 / 25)
    assert acct.max_window_spent() == pytest.approx(1.0, rel=1e-9)
    assert len(acct.to_dict()["window_spent"]) == 10_000 - 25 + 1
    with pytest.raises(BudgetExhausted):
        acct.charge(5_000, 1e-6)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"eps": 0.0, "w": 5}, "eps"),
        ({"eps": -1.0, "w": 5}, "eps"),
        ({"eps": math.nan, "w": 5}, "eps"),
        ({"eps": math.inf, "w": 5}, "eps"),
        ({"eps": 1.0, "w": 0}, "w"),
        ({"eps": 1.0, "w": -3}, "w"),
        ({"eps": 1.0, "w": 2.5}, "w"),
        ({"eps": 1.0, "w": True}, "w"),
    ],
)
def test_window_account_validation(kwargs, field):
    with pytest.raises(ParameterError) as info:
        WindowAccount(**kwargs)
    assert info.value.field == field


@pytest.mark.parametrize(
    ("t", "eps0", "field"),
    [
        (-1, 0.1, "t"),
        (1.0, 0.1, "t"),
        (None, 0.1, "t"),
        (0, 0.0, "eps0"),
        (0, -0.1, "eps0"),
        (0, math.nan, "eps0"),
        (0, math.inf, "eps0"),
    ],
)
def test_charge_validation(t, eps0, field):
    acct = WindowAccount(eps=1.0, w=2)
    with pytest.raises(ParameterError) as info:
        acct.charge(t, eps0)
    assert info.value.field == field
    assert acct.refusals == 0
    assert acct.charges == 0


def test_window_account_to_dict():
    acct = WindowAccount(eps=2.0, w=2)
    acct.charge(0, 0.1)
    acct.charge(1, 0.2)
    acct.charge(2, 1.0 / 3)
    with pytest.raises(BudgetExhausted):
        acct.charge(2, 2.0)
    d = json.loads(json.dumps(acct.to_dict()))
    assert d["kind"] == "w-event"
    assert (d["eps"], d["w"], d["charges"], d["refusals"]) == (2.0, 2, 3, 1)
    assert d["total_spent"] == pytest.approx(0.1 + 0.2 + 1 / 3)
    assert d["window_spent"] == [round(0.1 + 0.2, 12), round(0.2 + 1 / 3, 12)]
    assert d["max_window_spent"] == pytest.approx(0.2 + 1 / 3)


# --- BudgetAccount -------------------------------------------------------------------------


def test_budget_account_boundary():
    acct = BudgetAccount(eps=1.0)
    acct.charge(0.5)
    acct.charge(0.5, t=3)
    assert acct.spent == pytest.approx(1.0)
    with pytest.raises(BudgetExhausted) as info:
        acct.charge(1e-6)
    assert info.value.field == "eps"
    assert acct.refusals == 1
    assert acct.spent == pytest.approx(1.0)
    assert acct.charges == 2

    fresh = BudgetAccount(eps=1.0)
    with pytest.raises(BudgetExhausted):
        fresh.charge(1.0 + 1e-6)
    assert fresh.spent == 0.0
    fresh.charge(1.0 + 1e-10)  # within the 1e-9 relative tolerance
    assert not fresh.can_charge(1e-6)

    thirds = BudgetAccount(eps=1.0)
    for _ in range(3):
        thirds.charge(1 / 3)
    d = json.loads(json.dumps(thirds.to_dict()))
    assert d["kind"] == "total"
    assert d["spent"] == pytest.approx(1.0)
    assert d["refusals"] == 0


def test_budget_account_validation():
    with pytest.raises(ParameterError) as info:
        BudgetAccount(eps=0.0)
    assert info.value.field == "eps"
    with pytest.raises(ParameterError) as info:
        BudgetAccount(eps=1.0, spent=2.0)
    assert info.value.field == "spent"
    with pytest.raises(ParameterError):
        BudgetAccount(eps=1.0, spent=-0.1)
    acct = BudgetAccount(eps=1.0, spent=0.25)
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ParameterError):
            acct.charge(bad)
    assert acct.spent == 0.25 and acct.refusals == 0


# --- PrivacyLedger -------------------------------------------------------------------------


def test_ledger_dispatch_and_errors():
    ledger = PrivacyLedger("device-7")
    ledger.open_account("temp", WindowAccount(eps=2.0, w=5))
    ledger.open_account("once", BudgetAccount(eps=1.0))
    with pytest.raises(LocalProtocolError) as info:
        ledger.open_account("temp", WindowAccount(eps=1.0, w=2))
    assert info.value.field == "name"
    assert ledger.account("temp").eps == 2.0  # the original survives

    with pytest.raises(LocalProtocolError):
        ledger.charge("humidity", 0.4, t=0)
    with pytest.raises(LocalProtocolError):
        ledger.account("humidity")
    with pytest.raises(LocalProtocolError) as info:
        ledger.charge("temp", 0.4)  # a w-event account needs t
    assert info.value.field == "t"
    for bad in (0.0, -0.4, math.nan, math.inf):
        with pytest.raises(ParameterError) as info:
            ledger.charge("temp", bad, t=0)
        assert info.value.field == "eps"

    for t in range(5):
        ledger.charge("temp", 0.4, t=t, mechanism="sw")
    with pytest.raises(BudgetExhausted):
        ledger.charge("temp", 0.4, t=4, mechanism="sw")
    ledger.charge("once", 1.0, mechanism="laplace")
    with pytest.raises(BudgetExhausted):
        ledger.charge("once", 0.1)
    assert ledger.mechanisms("temp") == {"sw": 5}
    assert ledger.mechanisms("once") == {"laplace": 1}

    d = json.loads(json.dumps(ledger.to_dict()))
    assert d["owner"] == "device-7"
    assert set(d["accounts"]) == {"temp", "once"}
    assert d["accounts"]["temp"]["charges"] == 5
    assert d["accounts"]["temp"]["refusals"] == 1
    assert d["accounts"]["once"]["refusals"] == 1
    assert d["accounts"]["once"]["spent"] == 1.0


def test_ledger_validation():
    with pytest.raises(ParameterError):
        PrivacyLedger("")
    ledger = PrivacyLedger("d")
    with pytest.raises(ParameterError):
        ledger.open_account("x", object())  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        ledger.open_account("", BudgetAccount(eps=1.0))


# --- charge_run: the vectorised path must equal step-by-step charging ---------------------


@settings(max_examples=300, deadline=None)
@given(
    w=st.integers(1, 8),
    eps=st.sampled_from([1.0, 2.0, 0.7]),
    pre=st.lists(st.tuples(st.integers(0, 40), st.sampled_from([0.1, 0.25, 0.5])), max_size=12),
    t0=st.integers(0, 40),
    count=st.integers(0, 30),
    eps0=st.sampled_from([0.05, 0.125, 0.25, 0.5, 1.0]),
)
def test_charge_run_equals_sequential_charges(w, eps, pre, t0, count, eps0):
    fast, slow = WindowAccount(eps, w), WindowAccount(eps, w)
    for t, e in pre:
        for account in (fast, slow):
            with contextlib.suppress(BudgetExhausted):
                account.charge(t, e)
    granted, refusal = fast.charge_run(t0, eps0, count)
    expected = 0
    for offset in range(count):
        try:
            slow.charge(t0 + offset, eps0)
        except BudgetExhausted:
            break
        expected += 1
    assert granted == expected
    assert (refusal is None) == (expected == count)
    assert fast.window_spent() == slow.window_spent()
    assert fast.charges == slow.charges and fast.refusals == slow.refusals


def test_charge_run_exact_fit_and_first_refused_step():
    account = WindowAccount(2.0, 5)
    assert account.charge_run(0, 0.4, 200) == (200, None)
    assert account.max_window_spent() == pytest.approx(2.0)
    granted, refusal = WindowAccount(2.0, 5).charge_run(0, 0.4 + 1e-6, 10)
    assert granted == 4  # the 5th step would overspend the first window
    assert isinstance(refusal, BudgetExhausted) and "[0, 4]" in refusal.reason


def test_ledger_charge_run_counts_mechanism_and_refuses_total_accounts():
    ledger = PrivacyLedger("d0")
    ledger.open_account("stream", WindowAccount(1.0, 4))
    ledger.open_account("node", BudgetAccount(1.0))
    assert ledger.charge_run("stream", 0.25, t0=0, count=8, mechanism="sw") == (8, None)
    assert ledger.mechanisms("stream") == {"sw": 8}
    with pytest.raises(LocalProtocolError):
        ledger.charge_run("node", 0.1, t0=0, count=1)
