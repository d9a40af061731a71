"""A data path naming an environment variable says it is not expanded (helper E's user
trial, round 4): ``path = "$HOME/data.csv"`` was "file not found ... (looked in
/tmp/x/$HOME/data.csv, ...)", with no word that only ``~`` is expanded."""

from __future__ import annotations

import pytest
from ldpfleet.scenarios.schema_errors import ScenarioError

from ldpfleet.scenario_dict import parse_scenario

STREAM = """
[scenario]
name = "paths"
[fleet]
devices = 2
[stream]
steps = 4
eps = 1.0
w = 2
[source]
kind = "csv"
path = "{path}"
bounds = [0.0, 1.0]
"""
GRAPH = """
[scenario]
name = "paths"
[graph]
source = "{path}"
[cadr]
eps = 1.0
"""


@pytest.mark.parametrize("path", ["$HOME/x.csv", "${DATA_DIR}/x.csv", "%USERPROFILE%/x.csv"])
@pytest.mark.parametrize(("text", "field"), [(STREAM, "source.path"), (GRAPH, "graph.source")])
def test_an_environment_variable_is_named_as_not_expanded(tmp_path, path, text, field):
    variable = path.split("/")[0]
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(text.format(path=path), path=tmp_path)
    message = str(refused.value)
    assert refused.value.field == field, message
    assert f"({variable} is not expanded:" in message and "leading ~" in message, message


def test_a_plain_missing_path_says_nothing_of_variables(tmp_path):
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(STREAM.format(path="nope.csv"), path=tmp_path)
    assert "not expanded" not in str(refused.value) and "looked in" in str(refused.value)
