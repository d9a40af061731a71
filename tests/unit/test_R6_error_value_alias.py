"""A refusal's ``value`` is the caller's own copy (review R6).

``schema_explain.parsed_toml`` caches the parsed TOML of a scenario text so that its many
refusals parse it once; ``ScenarioError.value`` (a list for ``source.bounds``) was the
list inside that cache, so a caller that changed the value it was handed changed what
the next load of the same text reported. Before the cache, each load parsed afresh."""

from __future__ import annotations

import pytest
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

TEXT = (
    '[scenario]\nname = "r6"\n[fleet]\ndevices = 4\n[stream]\nsteps = 20\neps = 2.0\nw = 4\n'
    '[source]\nkind = "synthetic"\nbounds = [35.0, 5.0]\n'
)


def _refused() -> ScenarioError:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(TEXT)
    return caught.value


def test_changing_a_refusals_value_does_not_change_the_next_load():
    first = _refused()
    assert (first.field, first.value) == ("source.bounds", [35.0, 5.0])
    first.value.reverse()  # the caller's own business
    first.value.append(0.0)
    again = _refused()
    assert again.value == [35.0, 5.0]
    assert str(again).endswith("got [35.0, 5.0]")
