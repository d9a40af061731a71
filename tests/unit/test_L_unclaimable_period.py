"""A synthetic source's period CPR can never claim (below 3, or above steps /
cpr.min_cycles) ran and scored every device wrong without a word (helper P's user trial,
2026-12-06): the run now says so in results.json ``warnings``."""

import pytest
from ldpfleet.scenarios.schema import parse_scenario
from ldpfleet.scenarios.schema_checks import unclaimable_period_warnings

import ldpfleet

TEXT = """
[scenario]
name = "unclaimable"
seed = 2
[fleet]
devices = 3
[stream]
steps = 300
eps = 2.0
w = 5
reconstruct = "cpr"
[source]
kind = "synthetic"
period = {period}
bounds = [-1.0, 1.0]
"""


@pytest.mark.parametrize(
    ("period", "warned"),
    [("2", True), ("101", True), ("[2, 2]", True), ("[101, 120]", True), ("100", False),
     ("3", False), ("[2, 50]", False), ("24", False)],
)  # fmt: skip
def test_the_warning_names_the_claimable_range(period, warned):
    spec = parse_scenario(TEXT.format(period=period)).spec
    warnings = unclaimable_period_warnings(spec)
    assert bool(warnings) is warned
    if warned:
        assert "CPR claims periods in [3, 100] here" in warnings[0]


def test_a_run_carries_the_warning(tmp_path):
    results = ldpfleet.run(
        ldpfleet.parse_scenario(TEXT.format(period=101)), broker="memory", out_dir=tmp_path
    )
    assert any(
        "source.period = 101: CPR claims periods in [3, 100]" in w for w in results["warnings"]
    )
