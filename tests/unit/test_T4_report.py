"""Gaps found by helper T4's planted-bug hunt in report.html (app/report.py): the privacy
figures of the headline and the ledger section, the outcome line and what-ran line read
the right keys and compare the spend with the budget the right way. Hand-made results and
ledgers with a different figure in every field; each test names the mutants it kills."""

from __future__ import annotations

import re

from ldpfleet.app import report


def _account(worst: float, total: float, refusals: int, eps: float = 2.0) -> dict:
    return {"kind": "w-event", "eps": eps, "w": 4, "max_window_spent": worst,
            "total_spent": total, "refusals": refusals}  # fmt: skip


def _ledger(**top) -> dict:
    """Two devices with different worst-window and total spends and refusals."""
    devices = {
        "d0001": {"accounts": {"stream": _account(1.5, 6.0, 1)}},
        "d0002": {"accounts": {"stream": _account(2.0, 7.5, 2)}},
    }
    return {"w": 4, **top, "devices": devices}


def _rows(page: str) -> dict[str, str]:
    return dict(re.findall(r"<tr><td>([^<]*)</td><td[^>]*>([^<]*)</td></tr>", page))


def test_the_spending_per_device_and_the_refusals_summed():
    """Kills R3 (the total charged per device read from ``max_window_spent``: the "total
    ε charged" histogram drew the worst windows), R4 (the devices' refusals not summed
    when the ledger has no run-level count: "0 refusals")."""
    worst, total, eps, refusals = report._spending(_ledger())
    assert worst == [1.5, 2.0] and total == [6.0, 7.5] and eps == 2.0 and refusals == 3


def test_devices_of_different_budgets_give_no_budget():
    """Kills R20: with accounts of two budgets and no run-level ε, one of them was taken
    as the run's budget (the other's devices then read "over" or "under" it)."""
    ledger = {
        "devices": {
            "d1": {"accounts": {"stream": _account(1.0, 1.0, 0, eps=1.0)}},
            "d2": {"accounts": {"stream": _account(1.0, 1.0, 0, eps=3.0)}},
        }
    }
    assert report._spending(ledger)[2] is None


def test_a_spend_just_over_the_budget_is_over_it():
    """Kills R5 (the float tolerance of "= the budget" 1e-3 instead of 1e-9: a spend of
    2.001 against ε = 2 said "(= the budget)") and R6 (OVER said only past twice the
    budget), and R7 (the worst spend taken from the devices' accounts instead of the
    ledger's run-level figure, which covers every account)."""
    results = {"stream": {"mechanism": "sw", "eps": 2.0, "w": 4}}
    text = report._privacy_text(results, _ledger(eps=2.0, max_window_spent=2.001))
    assert text == "ε = 2 per 4-step window; worst spend 2.001: OVER the budget; 3 refusals"
    exact = report._privacy_text(results, _ledger(eps=2.0, max_window_spent=2.0000000000000284))
    assert "worst spend 2 (= the budget)" in exact


def test_the_ledger_table_judges_the_budget_when_the_ledger_does_not():
    """Kills R13: a ledger.json without ``within_budget`` (a CADR-LDP run's) got
    "within budget True" whatever its worst spend."""
    rows = report._ledger_rows(_ledger(eps=2.0, max_window_spent=2.5), False, [1.5, 2.5],
                               2.0, 3)  # fmt: skip
    assert dict(rows)["within budget"] is False
    rows = report._ledger_rows(_ledger(eps=2.0, max_window_spent=2.0), False, [1.5, 2.0],
                               2.0, 3)  # fmt: skip
    assert dict(rows)["within budget"] is True


def test_only_when_every_device_spent_the_budget_is_it_said():
    """Kills R15: "every one of the devices spent exactly its budget" said when ANY device
    had (one of two here)."""
    text = report._worst_spend_part([2.0, 1.0], 2.0, False)
    assert "spent exactly" not in text and "<img" in text
    assert "Every one of the 2 devices spent exactly its budget ε = 2" in (
        report._worst_spend_part([2.0, 2.0000000000000284], 2.0, False)
    )


def test_the_outcome_line():
    """Kills R8 (lost reports not making the outcome "incomplete") and R9 (devices that
    did not finish not said)."""
    assert report._status({"reports_lost": 3}) == ("bad", "incomplete: 3 reports lost")
    assert report._status({"reports_lost": 0, "devices": 7, "devices_complete": 6}) == (
        "warn",
        "1 devices did not finish",
    )


def test_a_bulk_runs_worst_spend_includes_the_rebuilt_accounts():
    """Kills R10: the accounts rebuilt from the store for a shard that left no ledgers
    (``fleet.reconstructed_accounts``) were left out of the bulk run's worst spend."""
    results = {"kind": "bulk-stream", "plan": {"w": 4},
               "fleet": {"eps": 2.0, "max_window_spent": 1.5, "ledger_refusals": 0,
                         "reconstructed_accounts": {"max_window_spent": 1.9}}}  # fmt: skip
    assert report._bulk_ledger(results)["max_window_spent"] == 1.9


def test_a_coordinators_own_keys_win_over_its_counters():
    """Kills R11: the counters of a partitioned run's coordinator overrode its own
    results.json keys instead of only filling the missing ones."""
    merged = report._with_counters({"counters": {"devices": 5, "reports_lost": 2}, "devices": 6})
    assert merged["devices"] == 6 and merged["reports_lost"] == 2


def test_what_ran_gives_the_window_budget_not_the_per_report_one():
    """Kills R12: "ε = ... over any w steps" printed ``eps0`` (ε / w, each report's)."""
    results = {"devices": 3, "stream": {"mechanism": "sw", "eps": 2.0, "eps0": 0.5, "w": 4,
                                        "steps": 100}}  # fmt: skip
    assert "sw, ε = 2 over any 4 steps" in report._what_ran(results)


def test_the_central_release_rows():
    """Kills R16 (the per-record loss row showing ε_rel), R17 (the collector's worst
    window showing its total spent) and R19 (the ε_rel row showing ε_cal): the existing
    test's ε_cal is 0 and its per-record loss equals ε_rel."""
    release = {"kind": "w-event", "eps": 1.0, "w": 1, "charges": 4, "total_spent": 3.0,
               "max_window_spent": 0.75, "refusals": 0}  # fmt: skip
    ledger = {"w": 30, "within_budget": True, "devices": {},
              "collector": {"accounts": {"gcdp_release": release}, "eps_rel": 1.0,
                            "eps_cal": 0.5, "per_record_loss": 1.5}}  # fmt: skip
    rows = dict(report._central_rows(ledger))
    assert rows["central release ε_rel per window"] == 1.0
    assert rows["calibration ε_cal"] == 0.5
    assert rows["per-record loss (ε_cal + ε_rel)"] == 1.5
    assert rows["worst spent per window (collector)"] == 0.75
    assert rows["windows released (charges)"] == 4
