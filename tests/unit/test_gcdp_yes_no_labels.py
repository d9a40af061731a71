"""A ``[gcdp]`` calibration file whose label column holds words ("yes" / "no") is refused
naming the value and its line (helper D, 2026-12-05: the refusal said "'Occupancy' is not a
column of train-yesno.csv" though the column is there). Fails on the code before."""

from __future__ import annotations

import pytest
from ldpfleet.scenarios.builtin import data_root
from ldpfleet.scenarios.schema import ScenarioError, load_scenario

SCENARIO = (data_root().parent / "scenarios" / "occupancy-release.toml").read_text()


def test_word_labels_are_named_as_such(tmp_path):
    lines = (data_root() / "uci-occupancy" / "datatraining.txt").read_text().splitlines()
    recoded = [lines[0]]
    for line in lines[1:]:
        head, label = line.rsplit(",", 1)
        recoded.append(f"{head},{'yes' if label.strip() == '1' else 'no'}")
    calibration = tmp_path / "train-yesno.csv"
    calibration.write_text("\n".join(recoded) + "\n")
    text = SCENARIO.replace(
        'calibration_path = "data/uci-occupancy/datatraining.txt"',
        f'calibration_path = "{calibration}"',
    ).replace(
        'path = "data/uci-occupancy/datatest.txt"',
        f'path = "{data_root()}/uci-occupancy/datatest.txt"',
    )
    scenario = tmp_path / "release.toml"
    scenario.write_text(text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(scenario)
    message = str(info.value)
    assert "release.toml: gcdp.utility_column: 'Occupancy' of " in message, message
    assert "holds 'yes' on line 2" in message and "0 and 1" in message, message
    assert "is not a column" not in message, message
