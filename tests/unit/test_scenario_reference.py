"""docs/scenario-reference.md is generated from the schema and must stay equal to it."""

from __future__ import annotations

import msgspec
from ldpfleet.app.reference import SECTION_OF, reference_markdown
from ldpfleet.scenarios.schema import Scenario

from tests.conftest import ROOT


def test_the_committed_reference_is_the_generated_one():
    committed = (ROOT / "docs" / "scenario-reference.md").read_text()
    assert committed == reference_markdown(), (
        "docs/scenario-reference.md is stale: ldpfleet scenario-reference > "
        "docs/scenario-reference.md"
    )


def test_every_section_of_the_schema_is_in_the_reference():
    _, definitions = msgspec.json.schema_components([Scenario])
    assert set(definitions) - {"Scenario"} == set(SECTION_OF)
    text = reference_markdown()
    for name, table in SECTION_OF.items():
        assert f"## `{table}`" in text
        for key in definitions[name]["properties"]:
            assert f"| `{key}` |" in text, (table, key)
