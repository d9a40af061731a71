"""The odd-graph battery's checks (scripts/N_odd_graphs.py) catch what they claim to:
a release above all zeros, θ outside 1..D, a missing baseline, an overspent ledger, a
traceback, a refusal that came only after the fleet started. A battery whose checks
cannot fail would print "0 with a problem" whatever the pipeline did."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "N_odd_graphs.py"


def _battery():
    spec = importlib.util.spec_from_file_location("N_odd_graphs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("N_odd_graphs", module)  # its dataclasses look themselves up
    spec.loader.exec_module(sys.modules["N_odd_graphs"])
    return sys.modules["N_odd_graphs"]


def _figures(mae=1.0, zeros=2.0, theta=3, bound=10) -> dict:
    return {
        "mae": mae,
        "mse": mae * mae,
        "theta": [theta],
        "degree_bound": bound,
        "baselines": {"constant_median_oracle": {"mae": 0.5}, "all_zero": {"mae": zeros}},
    }


def test_a_good_release_passes_every_check():
    battery = _battery()
    cell = battery.Cell("g", 1.0, "ref")
    battery._common_checks(cell, _figures(), 1.0, 10)
    assert cell.problems == [] and (cell.mae, cell.median, cell.zeros) == (1.0, 0.5, 2.0)


def test_each_broken_promise_is_named():
    battery = _battery()
    cases = {
        "> all-zero": _figures(mae=2.5),
        "outside 1..D": _figures(theta=11),
        "baseline missing": {**_figures(), "baselines": {"all_zero": {"mae": 2.0}}},
        "not finite": _figures(mae=float("nan")),
    }
    for expected, figures in cases.items():
        cell = battery.Cell("g", 1.0, "ref")
        battery._common_checks(cell, figures, 1.0, 10)
        assert any(expected in problem for problem in cell.problems), (expected, cell.problems)


def test_a_ledger_that_did_not_spend_exactly_eps_is_a_problem():
    battery = _battery()
    exact = [{"accounts": {"node": {"spent": 1.0}}}] * 3
    over = [*exact, {"accounts": {"node": {"spent": 1.0 + 1e-6}}}]
    cell = battery.Cell("g", 1.0, "run")
    battery._ledger_spent(exact, cell, 1.0)
    assert cell.problems == []
    battery._ledger_spent(over, cell, 1.0)
    assert cell.problems and "!= eps" in cell.problems[0]


def test_a_traceback_and_a_late_refusal_are_problems_a_quick_refusal_is_not():
    battery = _battery()
    crash = battery.Cell("g", 1.0, "mem")
    assert battery._refusal(crash, 1, "Traceback (most recent call last):\nKeyError: 'x'\n")
    assert crash.status == "TRACEBACK" and crash.problems
    late = battery.Cell("g", 1.0, "mem", seconds=battery.LATE_REFUSAL_SECONDS + 1)
    assert battery._refusal(late, 2, "error: devices: need 2..10000 devices, got 19946\n")
    assert late.status == "refused(2)" and "refused only after" in late.problems[0]
    quick = battery.Cell("g", 1.0, "mem", seconds=2.0)
    assert battery._refusal(quick, 2, "error: --eps must be in [0.001, 50], got 50.5\n")
    assert quick.problems == [] and "--eps" in quick.note
    finished = battery.Cell("g", 1.0, "mem", seconds=2.0)
    assert not battery._refusal(finished, 0, "")
