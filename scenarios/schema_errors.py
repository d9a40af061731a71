"""``ScenarioError``, and the key, value and limit a refusal names.

A refused scenario raises ``ScenarioError`` whose message is one sentence with the fix;
``field``, ``value`` and ``limit`` give the same for programs. This module fills them in:
the key a message starts with, the value the TOML holds there, and the limit, as msgspec
or a check stated it or as the schema's struct states it (``_schema_rule``), plus the
limits of refusals that come from a lower layer (``StreamConfig``, ``SourceError``,
mechanism names).
"""

from __future__ import annotations

import copy
import json
import re
import typing
from types import UnionType
from typing import Annotated

from ldpfleet.scenarios.schema_explain import (
    _MISSING,
    _field_type,
    _key_parts,
    _raw_value,
    parsed_toml,
)
from ldpfleet.scenarios.schema_sections import BOUNDS_RULE, Scenario, StreamSection
from msgspec import Meta


class ScenarioError(ValueError):
    """A scenario that cannot run; the message is one sentence with the fix.

    For programmatic handling (docs/api.md, "Errors"): ``field`` is the dotted path of the
    key at fault (``"stream.eps"``, ``"source.period[1]"``, a section ``"source"``), None
    when no key is (invalid TOML, a missing file); ``value`` what the scenario gave there
    (None when the key is absent or is a whole section); ``limit`` the rule the value
    broke, in short machine-readable form (``"> 0.0"``, ``'one of "all", "control",
    "none"'``, ``"<= stream.steps (200)"``, ``"finite lo < hi"``, ``"valid TOML"``). A
    scenario refused while loading (``parse_scenario``, ``load_scenario``) always has
    ``limit`` set, and ``field`` when its message starts with a key (``stream.eps: ...``);
    other callers may leave ``limit`` None.

    A scenario with several mistakes is refused with all of them (``scenarios.
    schema_collect``): this error is the first found, as a scenario with that mistake
    alone raises it, and ``errors`` holds it and the others, each a ``ScenarioError``
    with its own ``field``, ``value`` and ``limit`` (this one first, the others in file
    order; at most ``schema_collect.ERRORS_SHOWN``); ``omitted`` counts the refusals left
    out of ``errors``. One mistake: ``errors == (self,)``, ``omitted == 0``."""

    def __init__(
        self, message: str, *, field: str | None = None, limit: str | None = None,
        value: object = None,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self._field_given = field is not None
        self.field = field if field is not None else _section_key_of(message)
        self.limit = limit
        self.value = value
        self.errors: tuple[ScenarioError, ...] = (self,)
        self.omitted = 0


# a message's leading key: ``stream.eps: ...``, ``source.period[1]: ...``, ``cpr: ...``
_LEADING_KEY = re.compile(r"(\w+)((?:\.\w+|\[\d+\])*): ")


def _section_key_of(message: str) -> str | None:
    """The key a message starts with, when its first part is a section of the scenario
    file (not a file name such as ``s.toml: ...``)."""
    match = _LEADING_KEY.match(message)
    if match is None or match.group(1) not in Scenario.__struct_fields__:
        return None
    return match.group(1) + match.group(2)


def _stated_limit(reason: str) -> str | None:
    """The limit msgspec's (or ``explain_invalid``'s) wording states: ``> 0.0``,
    ``length 2``, ``matching regex '...'``, ``one of "a", "b"``; else None."""
    bound = re.search(r"Expected `[^`]*` (of length )?((?:>=|<=|>|<) )?([^\s,]+)", reason)
    if bound is not None and (bound.group(1) or bound.group(2)):
        return ("length " if bound.group(1) else "") + (bound.group(2) or "") + bound.group(3)
    regex = re.search(r"(matching regex '[^']*')", reason)
    if regex is not None:
        return regex.group(1)
    allowed = re.search(r"; allowed: (.*?)(?: \(did you mean [^)]*\))?$", reason)
    if allowed is not None:
        return f"one of {allowed.group(1)}"
    return None


def _validation_limit(reason: str, explained: str) -> str:
    """The limit of a msgspec refusal (``reason``, as ``explain_invalid`` put it:
    ``explained``): a bound, a pattern or the allowed values (``_stated_limit``),
    ``required``, the valid keys of a section, else the expected type."""
    stated = _stated_limit(explained)
    if stated is not None:
        return stated
    if "missing required field" in reason:
        return "required"
    if "unknown field" in reason:
        valid = re.search(r"; (?:did you mean `[^`]*`\? )?valid: (.*?) \(docs/", explained)
        return f"one of {valid.group(1)}" if valid else "a key inside its [section]"
    expected = re.search(r"Expected `([^`]*)`", reason)
    if expected is not None:  # TOML's names for msgspec's object and array
        kind = expected.group(1).removesuffix(" | null")  # an optional section or key
        return {"object": "a table ([section])", "array": "an array"}.get(kind, f"type {kind}")
    return "the schema's type (docs/scenario-reference.md)"


def _schema_rule(owner: type, name: str) -> str | None:
    """The rule of field ``name`` of the schema struct ``owner`` as the schema states it:
    its bounds (``> 0; <= 50``) and its on-load rule (``_on_load``); None if it has none."""
    hint = typing.get_type_hints(owner, include_extras=True).get(name)
    rules: list[str] = []

    def walk(option) -> None:
        if typing.get_origin(option) is Annotated:
            base, *metas = typing.get_args(option)
            walk(base)
            for meta in metas:
                if not isinstance(meta, Meta):
                    continue
                for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
                    if getattr(meta, attr) is not None:
                        rules.append(f"{sign} {getattr(meta, attr)}")
                if meta.description and meta.description.startswith("on load: "):
                    rules.append(meta.description.removeprefix("on load: "))
        elif typing.get_origin(option) in (typing.Union, UnionType):
            for each in typing.get_args(option):
                walk(each)

    walk(hint)
    return "; ".join(dict.fromkeys(rules)) or None


def _name_the_field(error: ScenarioError, where: str, text: str) -> None:
    """Fill ``error``'s ``field`` (the key its message names after ``where``, the file's
    prefix), ``value`` (the scenario text's value there) and ``limit`` (``_stated_limit``)
    when the raise did not give them; the message stays as it is."""
    message = str(error)
    body = message[len(where) :] if message.startswith(where) else message
    match = _LEADING_KEY.match(body)
    if not error._field_given:  # this module sets it
        error.field = None if match is None else match.group(1) + match.group(2)
    if error.field is None:
        return
    if error.limit is None and match is not None:
        error.limit = _stated_limit(body[match.end() :])
    if error.value is None:
        import tomllib

        try:
            value = _raw_value(_key_parts(error.field), parsed_toml(text))
        except (tomllib.TOMLDecodeError, TypeError):
            return
        if value is not _MISSING and not isinstance(value, dict):
            # the caller's own copy: a list lives in ``parsed_toml``'s cache, which the
            # next load of the same text reads
            error.value = copy.deepcopy(value)


def _mechanism_name_rule() -> str:
    """The accepted mechanism names, as a limit."""
    from ldpfleet.protocol.mechanisms import STREAM_MECHANISMS

    return (
        f"one of {', '.join(json.dumps(m) for m in STREAM_MECHANISMS)}, "
        '"package.module:Class" or an ldpfleet.mechanisms entry point'
    )


def _stream_rule(field: str | None) -> str:
    """The limit of a ``StreamConfig`` refusal naming ``field``."""
    if field == "bounds":
        return BOUNDS_RULE
    if field == "mechanism":
        return _mechanism_name_rule()
    rule = _schema_rule(StreamSection, field) if field else None
    return rule or "the stream stage's rule (protocol.stream.StreamConfig)"


def _reconstruct_rule(mechanism: str) -> str:
    """The ``stream.reconstruct`` values that can read ``mechanism``'s reports, as a limit."""
    # here, not at the top: collector.reconstruct imports scipy (CPR), and ``from ldpfleet
    # import ScenarioError`` (an ``except`` clause in a script) should not
    from ldpfleet.collector.reconstruct import compatible

    options = typing.get_args(_field_type(StreamSection, "reconstruct")[0])
    allowed = [option for option in options if compatible(option, mechanism)]
    return f"one of {', '.join(json.dumps(option) for option in allowed)}"


# what a source setting must be when the data refuses it (``SourceError.field``)
_SOURCE_RULES = {
    "source.path": "an existing, readable data file",
    "source.column": "a numeric column of the file",
    "source.columns": "numeric columns of the file",
    "source.decimal": '"," only for a CSV whose fields are separated by semicolons or tabs',
}


def _source_rule(owner: type, field: str | None) -> str:
    """The limit of a ``SourceError`` naming ``field`` (a source setting)."""
    if field in _SOURCE_RULES:
        return _SOURCE_RULES[field]
    name = (field or "").removeprefix("source.")
    return _schema_rule(owner, name) or "readable data matching the [source] settings"
