"""The CADR-LDP run summary's dropout row counts the devices that released (reviewer R).

When every device that did not drop out refused its budget, ``released`` is an empty
mapping: the row said "errors over the N released devices" with N = devices − dropped
(the fallback for results without ``released``) instead of 0.
"""

from ldpfleet.app.cli_run import _dropped_rows


def _row(results: dict) -> str:
    ((_label, value),) = _dropped_rows(results)
    return value


def test_no_device_released_says_zero():
    results = {"devices": 10, "dropped": {"count": 3, "stage": "dsr"}, "released": {}}
    assert _row(results) == "3 at dsr (errors over the 0 released devices)"


def test_released_devices_are_counted():
    released = {f"d{i}": 1.0 for i in range(6)}
    results = {"devices": 10, "dropped": {"count": 3, "stage": "dsr"}, "released": released}
    assert _row(results) == "3 at dsr (errors over the 6 released devices)"


def test_results_without_released_fall_back_to_devices_not_dropped():
    results = {"devices": 10, "dropped": {"count": 3, "stage": "dsr"}}
    assert _row(results) == "3 at dsr (errors over the 7 released devices)"
