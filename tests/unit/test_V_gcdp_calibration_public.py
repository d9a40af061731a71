"""Helper V (privacy review): the GC-DP fleet release calibrates on a PUBLIC file (ε_cal = 0),
so the calibration file must not be the protected stream's own data.

``collector.gcdp_stage`` runs Algorithms 1-3 on ``gcdp.calibration_path`` with ε_cal = 0 and
ledger.json states ``per_record_loss = ε_cal + ε_rel = ε_rel`` (docs/gcdp-fleet.md,
"Accounting"). Nothing checks that the file differs from ``source.path``: with the shipped
scenario's calibration pointed at its own source (``datatest.txt``), the graph, the masking
deltas (ξ_k, hence s_k) and the utility (hence ε_k) are computed from the protected readings
with no noise and charged to no ledger, while the run still claims ε_rel per record.
Expected: refused on load, naming ``gcdp.calibration_path``. Fails on today's code: it
loads."""

from __future__ import annotations

import pytest
from ldpfleet.scenarios.builtin import find_scenario
from ldpfleet.scenarios.schema import ScenarioError, load_scenario


def test_the_calibration_file_cannot_be_the_protected_source(tmp_path):
    text = find_scenario("occupancy-release").read_text()
    old = 'calibration_path = "data/uci-occupancy/datatraining.txt"'
    assert old in text and 'path = "data/uci-occupancy/datatest.txt"' in text
    scenario = tmp_path / "calibration-on-source.toml"
    same = text.replace(old, 'calibration_path = "data/uci-occupancy/datatest.txt"')
    scenario.write_text(same)
    load_scenario(find_scenario("occupancy-release"))  # the shipped one loads
    with pytest.raises(ScenarioError, match=r"gcdp\.calibration_path"):
        load_scenario(scenario)
