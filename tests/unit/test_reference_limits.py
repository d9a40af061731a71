"""docs/scenario-reference.md shows every limit the schema enforces (brief A, item 3).

The reference omitted the synthetic source's amplitude, noise, jitter and phase limits
(SyntheticSpec enforced them, the schema did not declare them) and showed a pair's fixed
length as "items >= 2, items <= 2" (period, bounds, clip, crash_between). The list of
limits here is walked from the schema's types (``msgspec.inspect``), not written out.
"""

from __future__ import annotations

import functools
import re

import msgspec
import msgspec.inspect as mi
import pytest
from ldpfleet.app.reference import SECTION_OF, reference_markdown
from ldpfleet.scenarios.schema import Scenario

SIGNS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}


def _shown(value: float) -> str:
    """A number as a reader of the reference would look for it (1,000,000; 0.001)."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return repr(float(value))


def _limits_of(info) -> list[str]:
    """Every numeric limit of a field's type, options and items included."""
    found: list[str] = []
    if isinstance(info, mi.Metadata):  # a field with a description (schema._on_load)
        found += _limits_of(info.type)
    elif isinstance(info, mi.UnionType):
        for option in info.types:
            found += _limits_of(option)
    elif isinstance(info, mi.IntType | mi.FloatType):
        found += [
            f"{SIGNS[key]} {_shown(getattr(info, key))}"
            for key in SIGNS
            if getattr(info, key) is not None
        ]
    elif isinstance(info, mi.StrType):
        for key, sign in (("min_length", "length >="), ("max_length", "length <=")):
            if getattr(info, key) is not None:
                found.append(f"{sign} {_shown(getattr(info, key))}")
    elif isinstance(info, mi.ListType):
        low, high = info.min_length, info.max_length
        if low is not None and low == high:  # the type column shows the items: [a, a]
            item = "number" if isinstance(info.item_type, mi.FloatType) else "integer"
            found.append("[" + ", ".join([item] * low) + "]")
        else:
            found += [f"at least {_shown(low)} item"] if low is not None else []
            found += [f"at most {_shown(high)} items"] if high is not None else []
        found += _limits_of(info.item_type)
    elif isinstance(info, mi.TupleType):
        for item in info.item_types:
            found += _limits_of(item)
    return found


def _schema_limits() -> list[tuple[str, str, str]]:
    """(section title, key, limit) for every limit of every field of every section."""
    sections = {}
    for field in mi.type_info(Scenario).fields:
        for option in getattr(field.type, "types", (field.type,)):
            if isinstance(option, mi.StructType):
                sections[option.cls.__name__] = option
    rows = []
    for name, struct in sections.items():
        for field in struct.fields:
            for limit in _limits_of(field.type):
                rows.append((SECTION_OF[name], field.encode_name, limit))
    return rows


@functools.cache
def _reference_rows() -> dict[tuple[str, str], str]:
    """(section title, key) -> the reference's row for it."""
    rows, section = {}, None
    for line in reference_markdown().splitlines():
        heading = re.fullmatch(r"## `(.*)`", line)
        if heading:
            section = heading.group(1)
        key = re.match(r"\| `([^`]+)` \|", line)
        if key and section:
            rows[(section, key.group(1))] = line
    return rows


LIMITS = _schema_limits()


def test_the_walk_finds_the_limits_the_reference_omitted():
    """The walk itself: it sees the limits the old reference left out."""
    found = {(section, key, limit) for section, key, limit in LIMITS}
    synthetic = '[source] kind = "synthetic"'
    for key, limit in [("amplitude", "> 0"), ("noise", ">= 0"), ("jitter", ">= 0"),
                       ("phase", ">= 0"), ("phase", "< 1"), ("period", ">= 2")]:  # fmt: skip
        assert (synthetic, key, limit) in found, (key, limit)
    assert len(LIMITS) > 80


@pytest.mark.parametrize(("section", "key", "limit"), LIMITS)
def test_every_numeric_limit_of_the_schema_is_in_its_row(section, key, limit):
    row = _reference_rows()[(section, key)]
    assert limit in row, row


def test_no_row_shows_a_fixed_pair_as_an_item_count():
    """Old: "items >= 2, items <= 2" for every [lo, hi] pair (and period's [min, max])."""
    assert "items >= 2, items <= 2" not in reference_markdown()
    assert "items >=" not in reference_markdown()


def test_every_on_load_rule_is_in_its_row():
    """A field's limits that involve other fields (``schema._on_load``) are in its row."""
    _, definitions = msgspec.json.schema_components([Scenario])
    rows = _reference_rows()
    described = 0
    for name, table in SECTION_OF.items():
        for key, spec in definitions[name]["properties"].items():
            if "description" in spec:
                described += 1
                assert " ".join(spec["description"].split()) in rows[(table, key)]
    assert described >= 15
