"""Helper R's review (round 3): ``ledger_exact`` covered only the released devices, so in a
run without dropouts a device that refused its budget (BudgetRefused: its ledger below ε,
nothing released) left it true. It covers every device that did not drop out; a dropped
device's ledger (ε_θ only) does not make it false."""

from ldpfleet.scenarios.cadr_run import DeviceStats, complete_results

EPS = 3.0


def _stats(spent: float, dropped: str | None = None) -> DeviceStats:
    ledger = {"spent": spent}
    return DeviceStats(2, 2, spent, ledger, 3, 3, 0, dropped)


def _partial(per_device: dict, released: dict) -> dict:
    return {
        "eps": EPS, "alpha": 0.1, "method": "clip", "theta": 4, "budget": {"dsr": 2.0},
        "per_device": per_device, "released": released,
    }  # fmt: skip


def test_a_device_that_refused_its_budget_makes_the_ledger_inexact():
    per_device = {"n0000": {"degree": 2}, "n0001": {"degree": 3}}
    stats = {"n0000": _stats(EPS), "n0001": _stats(0.5)}  # n0001 refused: spent 0.5 of 3
    results = complete_results(_partial(per_device, {"n0000": 2.0}), stats)
    assert results["ledger_exact"] is False
    assert results["ledger_min"] == 0.5


def test_a_dropped_device_does_not():
    per_device = {"n0000": {"degree": 2}, "n0001": {"degree": 3, "dropped": "after_shares"}}
    stats = {"n0000": _stats(EPS), "n0001": _stats(0.5, "after_shares")}
    results = complete_results(_partial(per_device, {"n0000": 2.0}), stats)
    assert results["ledger_exact"] is True
    # and when every device spent its ε, it is exact
    stats["n0001"] = _stats(EPS)
    per_device["n0001"] = {"degree": 3}
    both = complete_results(_partial(per_device, {"n0000": 2.0, "n0001": 3.0}), stats)
    assert both["ledger_exact"] is True
