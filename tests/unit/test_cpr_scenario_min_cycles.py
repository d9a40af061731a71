"""``[cpr] min_cycles`` in a scenario, and a ``source.true_period`` CPR can never claim.

Helper A (2026-12-05): ``CprConfig.min_cycles`` existed, but a scenario could not set it
(the schema and the bulk plan built ``CprConfig`` without it), and a CSV source with
``true_period = 37`` on a 20-step stream ran and scored 0 % with no word. Both fail on the
code before (unknown key ``min_cycles``; no refusal)."""

from __future__ import annotations

import pytest
from ldpfleet.protocol.bulk import BulkPlan
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

STREAM = """\
[scenario]
name = "m"
seed = 1
[fleet]
devices = 4
[stream]
steps = {steps}
eps = 2.0
w = 5
reconstruct = "cpr"
[source]
kind = "csv"
path = "{path}"
column = "v"
bounds = [0.0, 1.0]
{source}
{more}"""


@pytest.fixture
def csv_path(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("v\n" + "".join(f"{(i % 7) / 7:.3f}\n" for i in range(200)))
    return path


def _scenario(csv_path, steps=60, source="", more=""):
    return STREAM.format(steps=steps, path=csv_path, source=source, more=more)


def test_min_cycles_reaches_the_cpr_config(csv_path):
    loaded = parse_scenario(_scenario(csv_path, more="[cpr]\nmin_cycles = 2\nmax_period = 30\n"))
    config = loaded.cpr_config()
    assert (config.min_cycles, config.max_period) == (2, 30)
    assert parse_scenario(_scenario(csv_path)).cpr_config().min_cycles == 3  # the default


def test_max_period_is_checked_against_min_cycles(csv_path):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(_scenario(csv_path, more="[cpr]\nmax_period = 30\n"))
    assert "cpr.max_period" in str(info.value) and "= 20" in str(info.value)


def test_the_bulk_plan_carries_min_cycles():
    plain = BulkPlan(run="r", devices=4, steps=60, batch_steps=5, eps=2.0, w=5)
    plan = BulkPlan.from_dict({**plain.to_dict(), "cpr_min_cycles": 2})
    assert plan.cpr_min_cycles == 2 and plain.cpr_min_cycles == 3


def test_a_true_period_cpr_cannot_claim_is_refused_naming_the_limit(csv_path):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(_scenario(csv_path, steps=20, source="true_period = 37"))
    message = str(info.value)
    assert message.startswith("source.true_period:"), message
    assert "= 6" in message and "got 37" in message, message
    parse_scenario(_scenario(csv_path, steps=20, source="true_period = 6"))  # within: fine
