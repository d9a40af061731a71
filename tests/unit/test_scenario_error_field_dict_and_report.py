"""Two readers of helper D's fields: a dict scenario's refusal carries ``.field`` and
``.value`` (ldpfleet.scenario_dict), and the report's bulk ledger takes the accounts rebuilt
from the store into its worst spend (app/report.py ``_bulk_ledger``)."""

import pytest
from ldpfleet.app.report import _bulk_ledger
from ldpfleet.scenarios.schema import ScenarioError

import ldpfleet


def test_a_dict_value_toml_cannot_hold_names_its_field_and_value():
    scenario = {"scenario": {"name": "x"}, "fleet": {"devices": 2}, "stream": {"eps": 1j}}
    with pytest.raises(ScenarioError) as caught:
        ldpfleet.parse_scenario(scenario)
    assert caught.value.field == "stream.eps"
    assert caught.value.value == 1j


def _bulk_results(rebuilt: float | None) -> dict:
    fleet = {"eps": 1.0, "max_window_spent": 0.5, "ledger_refusals": 0}
    fleet["reconstructed_accounts"] = None if rebuilt is None else {"max_window_spent": rebuilt}
    return {"kind": "bulk-stream", "fleet": fleet, "plan": {"w": 4}}


@pytest.mark.parametrize(("rebuilt", "worst"), [(None, 0.5), (0.25, 0.5), (0.75, 0.75)])
def test_the_report_worst_spend_includes_rebuilt_accounts(rebuilt, worst):
    assert _bulk_ledger(_bulk_results(rebuilt))["max_window_spent"] == worst
