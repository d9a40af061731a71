"""A new user's first day with their own Occupancy files and graphs (helper B2): each
refusal names the field, the limit and the value, and a file a user writes by hand reads."""

from __future__ import annotations

import pytest
from ldpfleet.app import bench_gcdp
from ldpfleet.app.bench_gcdp_scaling import TIMED_METHODS, _timed_methods
from ldpfleet.protocol.errors import ParameterError


@pytest.mark.parametrize(
    ("given", "needle"),
    [
        (("gcdp",), "'gcdp' is not one of NonPrivate, Lap-DP, Gau-DP, Ada-DP, Risk-DP, GC-DP "
                    "(did you mean 'GC-DP'?)"),
        (("Lap-DP", "lap_dp"), "'lap_dp' is not one of"),
        (("GC-DP", "GC-DP"), "'GC-DP' is given twice"),
        ((), "must name at least one of"),
    ],
)  # fmt: skip
def test_bench_gcdp_names_the_method_it_refuses(given, needle):
    """Old code: "must be distinct names from ..." for every bad list, a misspelt name that
    was not repeated included, naming neither the name nor the one meant."""
    with pytest.raises(ParameterError) as caught:
        bench_gcdp.method_names(given, bench_gcdp.METHODS)
    assert needle in caught.value.reason
    assert caught.value.field == "methods"
    assert caught.value.value == (given[-1] if given else ())


def test_bench_gcdp_methods_pass_unchanged():
    assert bench_gcdp.method_names(("GC-DP", "Lap-DP"), bench_gcdp.METHODS) == ("GC-DP", "Lap-DP")
    assert bench_gcdp.method_names("GC-DP", bench_gcdp.METHODS) == ("GC-DP",)


def test_gcdp_timing_names_the_method_it_refuses():
    with pytest.raises(ParameterError, match=r"'gc-dp-cache' .*did you mean 'GC-DP-Cache'"):
        _timed_methods(("gc-dp-cache",))
    assert _timed_methods(TIMED_METHODS) == TIMED_METHODS
