"""Review (helper G): a scenario given as a dict (``ldpfleet.parse_scenario``, today's
facade in ldpfleet/scenario_dict.py) is written as TOML with ``json.dumps`` strings. With
its default ``ensure_ascii`` a character outside the Basic Multilingual Plane (an emoji in
a description, a CJK extension character in a file name) became a JSON surrogate pair,
``\\ud83c\\udf31``, which TOML refuses ("Escaped character is not a Unicode scalar
value" at a line of the generated text the user never saw), though the same text in a
scenario file loads. Fails on the old code."""

from __future__ import annotations

import pytest

import ldpfleet

SECTIONS = {
    "scenario": {"name": "s", "description": "x"},
    "fleet": {"devices": 2},
    "stream": {"steps": 4, "eps": 1.0, "w": 2},
    "source": {"kind": "synthetic", "bounds": [0.0, 1.0]},
}
TEXTS = ["greenhouse 🌱", "𠀀 row", 'café "quoted" \\ back', "line\nbreak\ttab"]


@pytest.mark.parametrize("text", TEXTS)
def test_any_unicode_text_in_a_dict_loads_as_it_does_from_a_file(text):
    sections = {**SECTIONS, "scenario": {"name": "s", "description": text}}
    from_dict = ldpfleet.parse_scenario(sections)
    assert from_dict.spec.scenario.description == text
    from_toml = ldpfleet.parse_scenario(ldpfleet.scenario_dict.scenario_toml(sections))
    assert from_toml.spec == from_dict.spec


def test_a_quoted_key_with_unicode_is_written_as_toml_reads_it():
    import tomllib

    from ldpfleet.scenario_dict import scenario_toml

    text = scenario_toml({"scenario": {"name": "s"}, "x": {"🌱 key": 1}})
    assert tomllib.loads(text)["x"] == {"🌱 key": 1}
