"""docs/scenario-reference.md, generated from the schema (``scenarios/schema.py``).

Every section and key of a scenario file with its type, default and limits, exactly as
the validator enforces them (msgspec's JSON schema of ``Scenario``: each field's ranges,
its items' ranges, and the limits it shares with other keys, ``schema._on_load``). ``ldpfleet
scenario-reference`` prints it; a test keeps the committed file equal to the output, so
the reference cannot drift from the code. docs/scenarios.md explains what each key means.
"""

from __future__ import annotations

import json

import msgspec
from ldpfleet.scenarios.schema import Scenario

SECTION_OF = {  # schema struct -> TOML table
    "ScenarioMeta": "[scenario]",
    "FleetSection": "[fleet]",
    "StreamSection": "[stream]",
    "SyntheticSource": '[source] kind = "synthetic"',
    "CsvSource": '[source] kind = "csv"',
    "PeriodicSource": '[source] kind = "periodic"',
    "CollectorSection": "[collector]",
    "CprSection": "[cpr]",
    "SecureSumSection": "[secure_sum]",
    "GraphSection": "[graph]",
    "CadrSection": "[cadr]",
    "GcdpSection": "[gcdp]",
    "FaultsSection": "[faults]",
    "PrivacySection": "[privacy]",
    "BrokerSection": "[broker]",
}


def _type(spec: dict) -> str:
    if "anyOf" in spec:
        return " or ".join(_type(option) for option in spec["anyOf"])
    if "enum" in spec:
        return " / ".join(json.dumps(v) for v in spec["enum"])
    kind = spec.get("type")
    if kind == "array":
        items = spec.get("prefixItems") or ([spec["items"]] if "items" in spec else [])
        inner = ", ".join(_type(item) for item in items)
        count = spec.get("minItems")
        if "prefixItems" not in spec and items and count and count == spec.get("maxItems"):
            return f"[{', '.join([inner] * count)}]"  # a pair as a list: [integer, integer]
        return f"[{inner}]" if spec.get("prefixItems") else f"list of {inner or 'any'}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return str(kind or "any")


def _number(value: float) -> str:
    """A limit as written in the schema, the same whether msgspec hands it over as an
    int or as a float (0 and 0.0 alike)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else str(value)


_BOUNDS = (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
           ("exclusiveMaximum", "<"), ("minLength", "length >="),
           ("maxLength", "length <="))  # fmt: skip


def _limits(spec: dict) -> str:
    """Every limit of a field: its numbers' and strings' bounds, a list's length and its
    items' limits (a union: each option's), its pattern, and the rules checked on load
    beyond them (the field's ``Meta(description=...)``, "on load: ...")."""
    if "anyOf" in spec:
        parts = [limits for limits in map(_limits, spec["anyOf"]) if limits]
    else:
        parts = [f"{sign} {_number(spec[key])}" for key, sign in _BOUNDS if key in spec]
        if spec.get("type") == "array":
            parts += _array_limits(spec)
        if "pattern" in spec:
            parts.append(f"matches `{spec['pattern']}`")
    text = "; ".join(parts) if "anyOf" in spec else ", ".join(parts)
    rule = " ".join(spec.get("description", "").split())
    return "; ".join(filter(None, (text, rule)))


def _items(count: int) -> str:
    return f"{_number(count)} item{'' if count == 1 else 's'}"


def _array_limits(spec: dict) -> list[str]:
    """A list's length (a fixed pair ``[a, b]`` has none to show) and its items' limits."""
    items = spec.get("prefixItems") or ([spec["items"]] if "items" in spec else [])
    low, high = spec.get("minItems"), spec.get("maxItems")
    parts = []
    if "prefixItems" not in spec and (low is None or low != high):  # n == n: [a, b]
        parts += [f"at least {_items(low)}"] if low is not None else []
        parts += [f"at most {_items(high)}"] if high is not None else []
    item_limits = {_limits(item) for item in items} - {""}
    if len(item_limits) == 1:
        parts.append(f"each item {item_limits.pop()}")
    elif item_limits:
        parts += [f"item {i}: {_limits(item)}" for i, item in enumerate(items) if _limits(item)]
    return parts


def reference_markdown() -> str:
    """The reference, as Markdown."""
    _, definitions = msgspec.json.schema_components([Scenario])
    lines = [
        "# Scenario file reference (generated)",
        "",
        "Generated from `scenarios/schema.py` by `ldpfleet scenario-reference`; do not edit.",
        "What each key means: docs/scenarios.md. Every number must be finite (`inf` and `nan`",
        "are refused). The limits column gives a key's own range, then (`on load:`) the limits",
        "checked when the file loads that involve other keys; a file outside any is refused",
        "before anything starts, naming the key, the limit and the value.",
        "",
    ]
    for name, table in SECTION_OF.items():
        definition = definitions[name]
        required = set(definition.get("required", []))
        lines += [f"## `{table}`", ""]
        # the docstring's first paragraph (its first line cut [secure_sum]'s mid-sentence)
        paragraph = (definition.get("description") or "").split("\n\n")[0]
        description = " ".join(paragraph.split())
        if description:
            lines += [description.replace("``", "`"), ""]
        lines += ["| key | type | default | limits |", "|---|---|---|---|"]
        for key, spec in definition["properties"].items():
            default = "required" if key in required else json.dumps(spec.get("default"))
            lines.append(f"| `{key}` | {_type(spec)} | {default} | {_limits(spec)} |")
        lines.append("")
    return "\n".join(lines)
