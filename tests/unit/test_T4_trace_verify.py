"""Gaps found by helper T4's planted-bug hunt in ``trace verify``'s privacy checks
(app/trace_verify.py): the w-window check against ε and the ledger's charges, called
directly on hand-made reported steps and ledger accounts. Every end-to-end run the suite
verifies is within its budget, so a window check that never fired passed them all. Each
test names the mutants it kills."""

from __future__ import annotations

from types import SimpleNamespace

from ldpfleet.app.trace_verify import VerifyReport, _check_windows

HELLO = SimpleNamespace(w=4, eps=1.0)


def _account(window: float, steps: int = 8, charges: int = 8) -> dict:
    windows = steps - HELLO.w + 1
    return {"kind": "w-event", "eps": 1.0, "w": 4, "charges": charges,
            "window_spent": [window] * windows, "total_spent": window * steps / HELLO.w,
            "max_window_spent": window}  # fmt: skip


def _reasons(eps0: float, account: dict, steps: int = 8) -> list[str]:
    report = VerifyReport()
    _check_windows("d0001", set(range(steps)), eps0, HELLO, account, report)
    return [m.reason for m in report.mismatches]


def test_reports_spending_more_than_eps_in_a_window_are_overspent():
    """Kills V1: the window check against 2 ε (reports of ε0 = 0.3 spend 1.2 in every 4
    steps, over ε = 1, with a ledger that charged it all)."""
    assert _reasons(0.3, _account(1.2)) == ["window_overspent"]
    assert _reasons(0.25, _account(1.0)) == []


def test_a_ledger_charging_fewer_steps_than_reported_is_undercharged():
    """Kills V2: the ledger's charge count not compared with the steps the trace reports."""
    assert _reasons(0.25, _account(1.0, charges=6)) == ["ledger_undercharged"]


def test_a_ledger_of_another_eps_than_the_hello_is_ledger_params():
    """Kills V6: a device's ledger account at ε = 2 under a hello that declared ε = 1
    (its windows then judged against the hello's ε only) was not named; the window check
    passes here, so only this comparison says it."""
    from ldpfleet.app.trace_verify import _stream_ledger

    hello = SimpleNamespace(mechanism="sw", w=4, eps=1.0)
    account = {**_account(1.0), "eps": 2.0}
    report = VerifyReport()
    ledgers = {"d0001": {"accounts": {"stream": account}}}
    _stream_ledger("d0001", hello, set(range(8)), 0.25, ledgers, report)
    assert [m.reason for m in report.mismatches] == ["ledger_params"]
