"""Helpful wording for a scenario msgspec refused: "did you mean", the valid keys of a
section, the allowed values of a key, the value the file gave.

msgspec says ``Object contains unknown field `epsilon``` or ``Expected `float`, got
`str```; ``explain_invalid`` turns that into one sentence a user can act on, reading the
file's TOML and the schema's structs (``scenarios.schema_sections``). The near-miss hints
for a mechanism name and a built-in scenario's name live here too.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
import typing
from pathlib import Path
from types import UnionType
from typing import Annotated, Literal

from ldpfleet.scenarios.schema_sections import Scenario, _Section


def _path_of(text: str) -> str:
    """Turn msgspec's ``$.stream.eps`` / unknown-field wording into ``stream.eps``."""
    import re

    at = re.search(r"- at `\$\.?([^`]*)`", text)
    named = re.search(r"field `([^`]*)`", text)
    parts = [p for p in ((at.group(1) if at else ""), (named.group(1) if named else "")) if p]
    return ".".join(parts) or "(top level)"


# names a key is often written as (no near miss finds them): key -> the scenario's name
_ALIASES = {
    "window": "w",
    "epsilon": "eps",
    "num_devices": "devices",
    "n_devices": "devices",
    # [source]: pandas' and Excel's words for the decimal mark (helper E, round 4)
    "decimal_separator": "decimal",
    "decimal_mark": "decimal",
    "decimal_point": "decimal",
    "decimal_sep": "decimal",
}
# [source] keys a user writes for the field separator, which is detected, not set
_DELIMITER_WORDS = ("delimiter", "delim", "sep", "separator", "field_separator")


def _delimiter_hint(parts: list[str]) -> str:
    """``; the field separator is detected ...`` for an unknown [source] key naming it
    (pandas' ``sep``, ``delimiter``), the same for the text encoding, else ''."""
    if not (len(parts) == 2 and parts[0] == "source"):
        return ""
    if parts[1].lower() in ("encoding", "charset", "codepage"):
        return (
            "; the text encoding is detected, not set: UTF-8 (a BOM is skipped) or UTF-16 "
            "with its BOM; convert another one, e.g. iconv -f cp1252 -t utf-8 FILE > NEW"
        )
    if parts[1].lower() not in _DELIMITER_WORDS:
        return ""
    return (
        "; the field separator is detected, not set: a comma, semicolon or tab (the one the "
        "first two lines hold equally often; an Excel first line `sep=;` names it), so "
        'leave it out (decimal commas: decimal = ",")'
    )


# a [stream] key or a section that looks like a plugin's parameters
_PARAMETER_WORDS = ("param", "option", "arg", "kwarg")


def _parameter_hint(parts: list[str]) -> str:
    """``; a mechanism takes no parameters from the scenario ...`` for an unknown key of
    [stream] or an unknown section that looks like a mechanism's parameters
    (``mechanism_params``, ``[mechanism]``), else ''. Every side builds ``Cls(eps)`` from
    the name alone (docs/mechanisms.md, "Parameters: a subclass per setting")."""
    name = parts[-1].lower()
    in_stream = len(parts) == 2 and parts[0] == "stream"
    looks = any(word in name for word in _PARAMETER_WORDS) or name.startswith("mechanism_")
    section = len(parts) == 1 and (looks or name.startswith("mechanism"))
    if not ((in_stream and looks) or section):
        return ""
    return (
        "; a mechanism takes no parameters from the scenario (the device and the collector "
        "each build Cls(eps) from stream.mechanism alone): fix them in a subclass whose "
        "constructor takes eps alone and name that class, a subclass per setting "
        '(docs/mechanisms.md, "Parameters: a subclass per setting")'
    )


def explain_invalid(message: str, key: str, toml_text: str) -> str:
    """msgspec's validation ``message`` about ``key`` made helpful: an unknown key or
    section gets "did you mean" and the valid names, an enum its allowed values, a range
    or type error the value given."""
    import tomllib

    try:
        raw = parsed_toml(toml_text)
    except tomllib.TOMLDecodeError:  # msgspec parsed it: not expected
        raw = {}
    parts = [part for part in re.split(r"\.|\[\d+\]", key) if part]
    if "unknown field" in message and parts:
        owner = _struct_at(parts[:-1], raw)
        if owner is None:
            return message
        if len(parts) == 1 and not isinstance(raw.get(parts[0]), dict):
            return _top_level_key(parts[0], raw.get(parts[0]))
        names = list(owner.__struct_fields__)
        if owner.__struct_config__.tag_field:  # [source]: its kind
            names.insert(0, owner.__struct_config__.tag_field)
        where = f"[{'.'.join(parts[:-1])}]" if len(parts) > 1 else "the scenario file"
        what = "key" if len(parts) > 1 else "section"
        close = (
            [_ALIASES[parts[-1]]]
            if parts[-1] in _ALIASES and _ALIASES[parts[-1]] in names
            else difflib.get_close_matches(parts[-1], names, n=1, cutoff=0.6)
        )
        # then `mechanism_params` is not a typo of `mechanism`, nor `sep` of `stride`
        hint = _parameter_hint(parts) or _delimiter_hint(parts)
        guess = f"did you mean `{close[0]}`? " if close and not hint else ""
        return (
            f"unknown {what} `{parts[-1]}` in {where}; {guess}valid: {', '.join(names)} "
            f"(docs/scenarios.md lists every key){hint}"
        )
    value = _raw_value(_key_parts(key), raw)
    if message.startswith("Invalid") and "value" in message:
        allowed, numeric = _allowed_values(parts, raw)
        if allowed:
            # another case first: difflib sees no likeness between "LL" and "ll"
            close = [a for a in map(str, allowed) if a.casefold() == str(value).casefold()]
            close = close or difflib.get_close_matches(str(value), list(map(str, allowed)), n=1)
            listed = ", ".join(json.dumps(a) for a in allowed)
            return (
                f"{value!r} is not allowed; allowed: {listed}"
                + (" or a number" if numeric else "")
                + (f" (did you mean {json.dumps(close[0])}?)" if close else "")
            )
        return message
    if message.startswith("Expected") and value is not _MISSING:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        typed = re.fullmatch(r"(Expected .*), got `(\w+)`", message)
        if typed:  # a wrong type: show the value too ('eps = "2"' said only "got `str`")
            kind = typed.group(2)
            return f"{typed.group(1)}, got {shown} ({'an' if kind[0] in 'aeiou' else 'a'} {kind})"
        if ", got" not in message:
            return f"{message}, got {shown}"
    return message


_MISSING = object()


@functools.lru_cache(maxsize=4)
def parsed_toml(text: str) -> dict:
    """The scenario TOML ``text`` parsed, shared by the refusals of one text (read only:
    a scenario with many mistakes parsed it again for each)."""
    import tomllib

    return tomllib.loads(text)


def _key_parts(key: str) -> list[str | int]:
    """``source.bounds[0]`` -> ``["source", "bounds", 0]``."""
    return [int(index) if index else name for name, index in re.findall(r"(\w+)|\[(\d+)\]", key)]


def _raw_value(parts: list[str], raw: dict):
    """The value at ``key`` in the parsed TOML, or ``_MISSING``; ``parts`` may hold list
    indices (``["source", "bounds", 0]``: the bad item, not the whole list)."""
    node = raw
    for part in parts:
        index = isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node)
        if not (index or (isinstance(part, str) and isinstance(node, dict) and part in node)):
            return _MISSING
        node = node[part]
    return node


def _field_type(owner: type, name: str):
    """A struct field's type without ``Annotated`` and ``None``."""
    hint = typing.get_type_hints(owner, include_extras=True).get(name)
    if typing.get_origin(hint) is Annotated:  # a union with its on-load rule (_on_load)
        hint = typing.get_args(hint)[0]
    union = typing.get_origin(hint) in (typing.Union, UnionType)
    return [o for o in (typing.get_args(hint) if union else (hint,)) if o is not type(None)]


def _top_level_key(key: str, value: object) -> str:
    """A ``key = value`` above every section header (TOML's top level), which msgspec
    calls an unknown field of the file: name it as a key and the sections that have it
    (``seed = 3`` above ``[scenario]`` was an "unknown section `seed`")."""
    shown = json.dumps(value) if isinstance(value, str | int | float | bool) else repr(value)
    owners = []
    for section in Scenario.__struct_fields__:
        for struct in _field_type(Scenario, section):
            if isinstance(struct, type) and issubclass(struct, _Section):
                fields = (*struct.__struct_fields__, struct.__struct_config__.tag_field)
                if key in fields and f"[{section}]" not in owners:
                    owners.append(f"[{section}]")
    where = (
        f"it belongs under {' or '.join(owners)}: move it below that header"
        if owners
        else "no section has that key (docs/scenarios.md lists every key)"
    )
    return (
        f"`{key} = {shown}` is a key outside any section (above the first [section] "
        f"header); {where}"
    )


def _struct_at(parts: list[str], raw: dict) -> type | None:
    """The schema struct of the section at ``parts`` (the tagged ``[source]`` chosen by
    its ``kind``); None when it cannot be told."""
    owner: type = Scenario
    for depth, part in enumerate(parts):
        if part not in owner.__struct_fields__:
            return None
        structs = [
            o for o in _field_type(owner, part) if isinstance(o, type) and issubclass(o, _Section)
        ]
        if len(structs) > 1:
            kind = _raw_value([*parts[: depth + 1], "kind"], raw)
            structs = [o for o in structs if o.__struct_config__.tag == kind]
        if len(structs) != 1:
            return None
        owner = structs[0]
    return owner


def _allowed_values(parts: list[str], raw: dict) -> tuple[list, bool]:
    """The literal values the field at ``parts`` allows, and whether a number is allowed
    too (``shards = 2`` or ``"auto"``). A tagged section's ``kind``: its tags."""
    if not parts:
        return [], False
    if parts[-1] == "kind":
        owner_field = _struct_at(parts[:-2], raw) if len(parts) > 1 else None
        if owner_field is not None and parts[-2] in owner_field.__struct_fields__:
            tags = [
                o.__struct_config__.tag
                for o in _field_type(owner_field, parts[-2])
                if isinstance(o, type) and issubclass(o, _Section) and o.__struct_config__.tag
            ]
            if tags:
                return tags, False
    owner = _struct_at(parts[:-1], raw)
    if owner is None or parts[-1] not in owner.__struct_fields__:
        return [], False
    allowed, numeric = [], False
    for option in _field_type(owner, parts[-1]):
        base = typing.get_args(option)[0] if typing.get_origin(option) is Annotated else option
        if typing.get_origin(base) is Literal:
            allowed += list(typing.get_args(base))
        elif base is bool:
            allowed += [True, False]
        elif base in (int, float):
            numeric = True
    return allowed, numeric


def _near_miss(name: str) -> str:
    """`` (did you mean "laplace"?)`` for a mechanism name close to a built-in's (case
    ignored: "SW") or to a name an installed package registers ("krr-gredy"), else ""."""
    from ldpfleet.protocol.mechanisms import mechanism_names

    try:
        known = list(mechanism_names())  # the built-ins first, then the entry points
    except Exception:  # a broken installed distribution: the built-ins only
        from ldpfleet.protocol.mechanisms import STREAM_MECHANISMS

        known = list(STREAM_MECHANISMS)
    close = [b for b in known if b == name.lower()] or difflib.get_close_matches(
        name.lower(), known, n=1, cutoff=0.6
    )
    return f" (did you mean {json.dumps(close[0])}?)" if close else ""


def _builtin_near_miss(path: Path) -> str:
    """``; did you mean the built-in `quickstart`?`` for a missing ``quickstrat`` (bare or
    under ``scenarios/``), else ""."""
    from ldpfleet.scenarios.builtin import builtin_scenarios

    if not path.suffix and path.with_name(path.name + ".toml").is_file():  # `run mine`
        return f"; did you mean the file `{path}.toml`?"
    if len(path.parts) > 2 or (len(path.parts) == 2 and path.parts[0] != "scenarios"):
        return ""
    names = [scenario.name for scenario in builtin_scenarios()]
    close = difflib.get_close_matches(path.stem.replace("_", "-"), names, n=1, cutoff=0.75)
    return f"; did you mean the built-in `{close[0]}`?" if close else ""
