"""Gaps found by helper T4's planted-bug hunt in ``trace verify``'s step 5
(app/trace_verify_results.py): results.json's privacy figures recomputed from the ledgers
where the spend is OVER the budget (every end-to-end run is within it, so a check that
always said "within budget" passed them all). ``verify_results`` called directly with
hand-made figures; each test names the mutants it kills."""

from __future__ import annotations

from ldpfleet.app.trace_verify import VerifyReport
from ldpfleet.app.trace_verify_results import verify_results

STREAM = {"mechanism": "sw", "eps": 1.0, "w": 4, "eps0": 0.25, "steps": 8, "batch_steps": 4}


def _results(**privacy) -> dict:
    figures = {"mechanism": "sw", "eps": 1.0, "w": 4, "eps0": 0.25, "devices": 2, **privacy}
    return {"devices": 2, "stream": dict(STREAM), "privacy": figures}


def _differs(results: dict, **kwargs) -> list[str]:
    report = VerifyReport()
    arguments = {"devices": 2, "stream": STREAM, "rows": 10, "stored": None,
                 "ledger_spends": None} | kwargs  # fmt: skip
    verify_results(results, report=report, **arguments)
    return [m.detail for m in report.mismatches if m.reason == "results_differs"]


def test_an_overspent_ledger_is_not_within_budget():
    """Kills VR1: ``within_budget`` recomputed with a tolerance of 2 ε: a ledger whose
    worst window spent 1.5 at ε = 1 let results.json say ``within_budget: true``."""
    results = _results(max_window_spent=1.5, within_budget=True)
    said = _differs(results, ledger_spends=[0.5, 1.5])
    assert said == [
        "results.json privacy.within_budget is True; recomputed from the ledgers: False"
    ]
    assert _differs(_results(max_window_spent=1.5, within_budget=False),
                    ledger_spends=[0.5, 1.5]) == []  # fmt: skip


def test_the_worst_spend_is_the_largest_devices():
    """Kills VR9: ``privacy.max_window_spent`` recomputed as the smallest account's."""
    said = _differs(_results(max_window_spent=0.5), ledger_spends=[0.5, 1.0])
    assert said == ["results.json privacy.max_window_spent is 0.5; recomputed from the "
                    "ledgers: 1.0"]  # fmt: skip


def test_a_central_release_over_its_budget_in_one_account_is_not_within_budget():
    """Kills VR2: a raw stream's claim (the central release's accounts) within budget when
    ANY account was, not every one."""
    privacy = {"max_window_spent": 1.5, "within_budget": True, "devices": 2}
    results = {"devices": 2, "stream": {**STREAM, "mechanism": "raw"}, "privacy": privacy}
    said = _differs(results, stream={**STREAM, "mechanism": "raw"},
                    central=([(0.5, 1.0), (1.5, 1.0)], 2))  # fmt: skip
    assert said == [
        "results.json privacy.within_budget is True; recomputed from the ledgers: False"
    ]


def test_the_counts_recomputed_from_the_batches_and_the_device_states():
    """Kills VR3 (``reports_lost`` recomputed as the number of devices with a missing
    batch, not the number of batches) and VR4 (``devices_complete`` as every device,
    whatever its state)."""
    results = {
        **_results(),
        "missing_batches": {"d0001": [1, 2], "d0002": [0]},
        "reports_lost": 3,
        "per_device": {"d0001": {"state": "done"}, "d0002": {"state": "stopped"}},
        "devices_complete": 1,
    }
    assert _differs(results) == []
    said = _differs({**results, "reports_lost": 2, "devices_complete": 2})
    assert len(said) == 2, said


def test_a_figure_off_by_a_few_percent_differs():
    """Kills VR8: numbers compared within 20 % instead of REL_TOL (an edited
    ``privacy.max_window_spent`` 5 % low passed)."""
    said = _differs(_results(max_window_spent=0.95), ledger_spends=[0.5, 1.0])
    assert said == ["results.json privacy.max_window_spent is 0.95; recomputed from the "
                    "ledgers: 1.0"]  # fmt: skip


def test_the_device_count_is_checked():
    """Kills VR12: results.json ``devices`` not compared with the scenario's fleet."""
    said = _differs({**_results(), "devices": 3})
    assert said == ["results.json devices is 3; recomputed from the scenario: 2"]
