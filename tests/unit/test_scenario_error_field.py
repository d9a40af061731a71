"""``ScenarioError`` names its field for programmatic handling (docs/api.md, "Errors"):
``.field`` is the dotted path of the key at fault (``stream.eps``, ``source.period[1]``;
None when no key is: invalid TOML, a missing file), ``.value`` what the scenario gave
there (None when the key is absent) and ``.limit`` the rule it broke when the loader
states one separately (msgspec's bound, an enum's allowed values). The message is the
same sentence as before (``str(error)`` starts with ``field: ``).
"""

from __future__ import annotations

import copy
import math

import pytest
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

import ldpfleet
from ldpfleet.scenario_dict import scenario_toml

BASE = ldpfleet.load_scenario("quickstart").to_dict()


def _without_nones(table):
    if isinstance(table, dict):
        return {k: _without_nones(v) for k, v in table.items() if v is not None}
    return table


def _changed(changes: dict) -> dict:
    """The quickstart's sections with ``changes`` (``"section.key": value``; a value of
    ``...`` deletes the key or section)."""
    sections = copy.deepcopy(_without_nones(BASE))
    for key, value in changes.items():
        *path, last = key.split(".")
        table = sections
        for part in path:
            table = table.setdefault(part, {})
        if value is ...:
            table.pop(last)
        else:
            table[last] = value
    return sections


# (changes, the expected field, the expected value)
BAD = [
    ({"stream.eps": -1.0}, "stream.eps", -1.0),
    ({"stream.w": 0}, "stream.w", 0),
    ({"fleet.devices": 0}, "fleet.devices", 0),
    ({"stream.mechanism": "swx"}, "stream.mechanism", "swx"),
    ({"stream.epsilon": 2.0}, "stream.epsilon", 2.0),
    ({"mechanism_params.alpha": 1}, "mechanism_params", None),
    ({"source.bounds": [35.0, 5.0]}, "source.bounds", [35.0, 5.0]),
    ({"source.period": [12, "a"]}, "source.period[1]", "a"),
    ({"collector.credit_window": 300}, "collector.credit_window", 300),
    ({"stream.batch_steps": 500}, "stream.batch_steps", 500),
    ({"stream.w": 500}, "stream.w", 500),
    ({"scenario.run_timeout": math.inf}, "scenario.run_timeout", math.inf),
    ({"scenario.seed": "x"}, "scenario.seed", "x"),
    ({"broker.url": "ftp://example.org"}, "broker.url", "ftp://example.org"),
    ({"stream.reconstruct": "cpr", "cpr.min_period": 100}, "cpr.min_period", 100),
    ({"collector.trace": "none"}, "collector.trace", "none"),
    ({"source": ...}, "source", None),
    ({"scenario.name": ...}, "scenario.name", None),
    ({"stream.reconstruct": "cprx"}, "stream.reconstruct", "cprx"),
]


@pytest.mark.parametrize(("changes", "field", "value"), BAD, ids=[b[1] for b in BAD])
def test_a_refused_scenario_names_its_field_and_value(changes, field, value):
    with pytest.raises(ScenarioError) as info:
        ldpfleet.parse_scenario(_changed(changes))
    error = info.value
    assert error.field == field, str(error)
    assert str(error).startswith(f"{field}: "), str(error)  # the message is unchanged
    assert error.value == value, (error.value, str(error))


@pytest.mark.parametrize(
    ("changes", "limit"),
    [
        ({"fleet.devices": 0}, ">= 1"),
        ({"fleet.devices": 2_000_000}, "<= 1000000"),
        ({"stream.eps": -1.0}, "> 0"),
        ({"stream.reconstruct": "cprx"}, 'one of "none", "cpr"'),
        ({"source.bounds": [1.0]}, "length 2"),
        ({"scenario.name": "Bad Name!"}, "matching regex"),
        ({"stream.batch_steps": 500}, "<= stream.steps (200)"),
        ({"collector.credit_window": 300}, "<= collector.max_in_flight (256)"),
    ],
)
def test_the_limit_of_a_bound_or_an_enum(changes, limit):
    with pytest.raises(ScenarioError) as info:
        ldpfleet.parse_scenario(_changed(changes))
    assert info.value.limit is not None and limit in info.value.limit, info.value.limit


def test_a_dict_value_toml_cannot_hold_names_its_key():
    with pytest.raises(ScenarioError) as info:
        ldpfleet.parse_scenario(_changed({"stream.eps": 1j}))
    assert info.value.field == "stream.eps", str(info.value)


def test_a_file_named_like_a_section_is_not_taken_for_the_field(tmp_path):
    path = tmp_path / "stream.toml"
    path.write_text(scenario_toml(_changed({"stream.eps": -1.0})))
    with pytest.raises(ScenarioError) as info:
        ldpfleet.load_scenario(path)
    assert str(info.value).startswith(f"{path}: stream.eps: ")
    assert info.value.field == "stream.eps" and info.value.value == -1.0


@pytest.mark.parametrize(
    "text", ["[scenario\nname = 'x'", "[stream]\nsteps = 10\n"], ids=["toml", "no-fleet"]
)
def test_errors_without_a_key_or_with_a_missing_section(text):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text)
    if text.startswith("[scenario\n"):
        assert info.value.field is None and info.value.value is None
    else:
        assert info.value.field in ("scenario", "fleet"), str(info.value)


def test_a_missing_file_names_no_field(tmp_path):
    with pytest.raises(ScenarioError) as info:
        ldpfleet.load_scenario(tmp_path / "nothing.toml")
    assert info.value.field is None  # its limit: tests/unit/test_scenario_error_limit.py


def test_the_attributes_can_be_given():
    error = ScenarioError("stream.eps: too large", field="stream.eps", limit="<= 10", value=11)
    assert (error.field, error.limit, error.value) == ("stream.eps", "<= 10", 11)
    assert str(error) == "stream.eps: too large"
