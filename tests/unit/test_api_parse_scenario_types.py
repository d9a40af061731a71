"""``ldpfleet.parse_scenario(Path("my.toml"))`` (the file, not its text) ended in
"AttributeError: 'PosixPath' object has no attribute 'encode'" (helper Q, as a new user):
now a ScenarioError saying to pass the text or to call load_scenario."""

from __future__ import annotations

from pathlib import Path

import pytest

import ldpfleet


@pytest.mark.parametrize("value", [Path("my.toml"), None, b"[scenario]\nname = 'x'\n", 3])
def test_parse_scenario_refuses_what_is_not_text(value):
    with pytest.raises(ldpfleet.ScenarioError) as info:
        ldpfleet.parse_scenario(value)
    message = str(info.value)
    assert "TOML text" in message and "load_scenario" in message, message
