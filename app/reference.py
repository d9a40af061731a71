"""docs/scenario-reference.md, generated from the schema (``scenarios/schema.py``).

Every section and key of a scenario file with its type, default and limits, exactly as
the validator enforces them (msgspec's JSON schema of ``Scenario``). ``ldpfleet
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


def _limits(spec: dict) -> str:
    if "anyOf" in spec:
        return "; ".join(filter(None, (_limits(option) for option in spec["anyOf"])))
    parts = []
    for key, sign in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
                      ("exclusiveMaximum", "<"), ("minLength", "length >="),
                      ("maxLength", "length <="), ("minItems", "items >="),
                      ("maxItems", "items <=")):  # fmt: skip
        if key in spec:
            parts.append(f"{sign} {_number(spec[key])}")
    if "pattern" in spec:
        parts.append(f"matches `{spec['pattern']}`")
    return ", ".join(parts)


def reference_markdown() -> str:
    """The reference, as Markdown."""
    _, definitions = msgspec.json.schema_components([Scenario])
    lines = [
        "# Scenario file reference (generated)",
        "",
        "Generated from `scenarios/schema.py` by `ldpfleet scenario-reference`; do not edit.",
        "What each key means: docs/scenarios.md. Every number must be finite (`inf` and `nan`",
        "are refused).",
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
