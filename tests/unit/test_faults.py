"""``[faults]``: validation of the section and the crash plan (tier 1, no I/O)."""

from __future__ import annotations

import pytest
from ldpfleet.scenarios.plans import fleet_config
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

from tests.conftest import ROOT

FAULTS = (ROOT / "scenarios" / "faults.toml").read_text()


def crash_plan(scenario, seed):
    """The fleet's crash plan for ``scenario`` at ``seed``."""
    return fleet_config(scenario, "r", seed).crash_plan()


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (("never_return = 2 ", "never_return = 11 "), "faults.never_return: 11 exceeds the 10"),
        (("crash_between = [0.2, 0.6]", "crash_between = [0.7, 0.6]"), "faults.crash_between"),
        (("crash_between = [0.2, 0.6]", "crash_between = [0.2, 1.5]"), "faults.crash_between"),
        (("crash_fraction = 0.2 ", "crash_fraction = 1.2 "), "faults.crash_fraction"),
        (("step_seconds = 0.01 ", "step_seconds = 0 "), "crashes need a paced stream"),
        (("down_seconds = 0.5", "down_seconds = -1"), "faults.down_seconds"),
        (("hostile_messages = 2000", "hostile_messages = -5"), "faults.hostile_messages"),
        (("down_seconds = 0.5", "down_secs = 0.5"), "faults.down_secs"),
    ],
)
def test_bad_faults_sections_name_the_key(change, needle):
    old, new = change
    assert old in FAULTS
    with pytest.raises(ScenarioError, match=needle.replace("[", r"\[")):
        parse_scenario(FAULTS.replace(old, new))


def test_crash_plan_is_a_function_of_the_seed():
    scenario = parse_scenario(FAULTS)
    plan = crash_plan(scenario, 7)
    assert plan == crash_plan(scenario, 7) and plan != crash_plan(scenario, 8)
    assert len(plan) == 10 and sum(not c.returns for c in plan.values()) == 2
    steps = scenario.spec.stream.steps
    assert all(0.2 * steps <= c.step <= 0.6 * steps for c in plan.values())
    assert set(plan) <= set(scenario.device_ids())


def test_no_faults_no_plan():
    quick = (ROOT / "scenarios" / "quickstart.toml").read_text()
    assert crash_plan(parse_scenario(quick), 7) == {}
    assert (
        crash_plan(
            parse_scenario(
                FAULTS.replace("crash_fraction = 0.2 ", "crash_fraction = 0 ").replace(
                    "never_return = 2 ", "never_return = 0 "
                )
            ),
            7,
        )
        == {}
    )
