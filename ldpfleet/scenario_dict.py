"""Loading scenarios as the public API does: ``load_scenario`` (a path or a built-in name,
checked), and ``parse_scenario``, which takes a dict of sections as well as TOML text.

Python reads TOML (``tomllib``) but does not write it, and the runner needs the text (device
shard processes re-read it), so a dict is written as TOML here and parsed as any file is:
the same checks, the same ``ScenarioError`` naming the key. ``LoadedScenario.to_dict()``
gives such a dict back (its ``None`` values, TOML having no null, are left out).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ldpfleet.scenarios.schema import LoadedScenario


def parse_scenario(
    scenario: str | Mapping[str, Any], path: str | os.PathLike | None = None
) -> LoadedScenario:
    """Validate a scenario given as TOML text or as a dict of its sections.

    ``scenario``: the TOML text of a scenario file, or a dict such as ``{"scenario":
    {"name": "x", "seed": 1}, "fleet": {"devices": 8}, "stream": {...}, "source": {...}}``
    (docs/scenario-reference.md lists every section and key; values may be numpy numbers
    and arrays, ``stream.mechanism`` a module-level mechanism class, taken as its
    ``"module:Class"`` name; ``None`` leaves a key out). ``path``: the scenario file
    relative data paths (a CSV source, a graph) resolve against, as if the text were
    saved there (it need not exist), or a folder they resolve in; default none: the
    current folder.

    Returns a ``LoadedScenario`` (``.spec`` the typed sections, ``.name``, ``.to_dict()``).

    Raises ``ScenarioError`` naming the key at fault (``stream.eps: ...``): a value out of
    range, an unknown key, a missing section, a value TOML cannot hold (a complex number,
    a set, an object), or a ``scenario`` that is neither text nor a dict (a path: use
    ``load_scenario``)."""
    from ldpfleet.scenarios.schema import ScenarioError
    from ldpfleet.scenarios.schema import parse_scenario as parse_text

    anchor = _anchor(path)
    if isinstance(scenario, Mapping):
        return parse_text(scenario_toml(scenario), anchor)
    if not isinstance(scenario, str):
        raise ScenarioError(
            "parse_scenario takes the scenario's TOML text (a str) or a dict of its "
            f"sections, got {type(scenario).__name__} {scenario!r:.60}; for a file or a "
            "built-in name use load_scenario(path_or_name)",
            limit="TOML text (a str) or a dict of sections",
        )
    return parse_text(scenario, anchor)


# the file name a folder given as ``path`` stands for: relative data paths resolve in the
# folder, as for a scenario file saved there
FOLDER_ANCHOR = "scenario.toml"


def _anchor(path: object) -> Path | None:
    """``parse_scenario``'s ``path`` as the scenario file relative paths resolve against:
    a file's path as it is (it need not exist), a folder as a file in it, ``~`` the home
    folder; anything else raises ``ScenarioError``."""
    from ldpfleet.scenarios.schema import ScenarioError

    if path is None:
        return None
    if not isinstance(path, str | os.PathLike) or str(path) == "":
        raise ScenarioError(
            "parse_scenario's path must be the scenario file's path (str or Path) or the "
            f"folder relative data paths resolve in, got {type(path).__name__} {path!r:.60}",
            limit="a path (str or Path)",
        )
    anchor = Path(path).expanduser()
    return anchor / FOLDER_ANCHOR if anchor.is_dir() else anchor


def load_scenario(path: str | os.PathLike) -> LoadedScenario:
    """Read and validate a scenario file, or the built-in scenario of that name.

    ``path``: a ``.toml`` file's path (str or Path; ``~`` is the home folder; relative
    data paths in the file resolve against its folder) or a built-in scenario's name
    (``"quickstart"``; ``ldpfleet scenarios`` lists them).

    Returns a ``LoadedScenario``.

    Raises ``ScenarioError`` naming the file or the key at fault: no such file or name, a
    folder, an unreadable file, invalid TOML, a value out of range, and a ``path`` that is
    not one (a dict: ``parse_scenario`` takes it)."""
    from ldpfleet.scenarios.schema import ScenarioError
    from ldpfleet.scenarios.schema import load_scenario as load_file

    if isinstance(path, Mapping):
        raise ScenarioError(
            "load_scenario takes a path or a built-in scenario's name; a dict of sections "
            "goes to parse_scenario(sections)",
            limit="a path (str or Path) or a built-in scenario's name",
        )
    if not isinstance(path, str | os.PathLike) or str(path) == "":
        raise ScenarioError(
            "load_scenario takes a path to a scenario file (str or Path) or a built-in "
            f"scenario's name, got {type(path).__name__} {path!r:.60}",
            limit="a path (str or Path) or a built-in scenario's name",
        )
    return load_file(Path(path).expanduser() if str(path)[:1] == "~" else path)


def scenario_toml(sections: Mapping[str, Any]) -> str:
    """The TOML text of a scenario given as a dict of sections (``ScenarioError`` naming
    a key whose value TOML cannot hold)."""
    lines: list[str] = []
    _table(sections, "", lines)
    return "\n".join(lines) + "\n"


def _table(table: Mapping[str, Any], prefix: str, lines: list[str]) -> None:
    """Write ``table``'s plain keys, then its sub-tables as ``[prefix.key]``."""
    subtables = []
    for key, value in table.items():
        where = f"{prefix}{key}"
        _check_key(key, where)
        if value is None:
            continue  # TOML has no null: the key's default
        if isinstance(value, Mapping):
            subtables.append((key, value))
            continue
        if not prefix:  # a top-level key that is not a section
            _refuse(
                where,
                value,
                "must be a table of keys (a dict), as every section is",
                limit="a table of keys (a dict)",
            )
        lines.append(f"{_bare_or_quoted(key)} = {_value(value, where)}")
    for key, value in subtables:
        lines.append("")
        lines.append(f"[{prefix}{_bare_or_quoted(key)}]")
        _table(value, f"{prefix}{key}.", lines)


def _check_key(key: object, where: str) -> None:
    if not isinstance(key, str) or not key:
        _refuse(where, key, "a key must be a non-empty str", limit="a non-empty str")


def _bare_or_quoted(key: str) -> str:
    bare = all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    return key if bare else _toml_string(key)


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string: JSON's escapes are TOML's, but not JSON's ASCII-only
    surrogate pairs (``\\ud83c\\udf31``), which TOML refuses: other characters are
    written as they are."""
    return json.dumps(text, ensure_ascii=False)


def _value(value: Any, where: str) -> str:
    """``value`` as a TOML value; numpy scalars and arrays become Python's."""
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):  # numpy
        value = value.tolist()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, os.PathLike):
        return _toml_string(os.fspath(value))
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v, f"{where}[{i}]") for i, v in enumerate(value)) + "]"
    if isinstance(value, type) or _is_mechanism(value):  # stream.mechanism = MyClass
        return _toml_string(_mechanism_name(value, where))
    if isinstance(value, Mapping):  # inside an array: an inline table
        items = [f"{_bare_or_quoted(k)} = {_value(v, f'{where}.{k}')}" for k, v in value.items()]
        return "{" + ", ".join(items) + "}"
    _refuse(
        where,
        value,
        "TOML holds str, int, float, bool, lists and tables only",
        limit="a str, int, float, bool, list or table",
    )
    raise AssertionError  # unreachable: _refuse raises


def _is_mechanism(value: object) -> bool:
    from ldpfleet.protocol.mechanism_contract import REQUIRED_METHODS

    return all(hasattr(value, method) for method in REQUIRED_METHODS)


def _mechanism_name(value: object, where: str) -> str:
    """A mechanism class as its ``"module:Class"`` name (``class_import_path``)."""
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.protocol.mechanisms import class_import_path
    from ldpfleet.scenarios.schema import ScenarioError

    try:
        return class_import_path(value)
    except ParameterError as error:
        raise ScenarioError(
            f"{where}: {error.reason}",
            field=where or None,
            value=value,
            limit="a module-level mechanism class (module:Class)",
        ) from None


def _refuse(where: str, value: object, why: str, *, limit: str) -> None:
    from ldpfleet.scenarios.schema import ScenarioError

    raise ScenarioError(
        f"{where}: {value!r:.60} ({type(value).__name__}) is not a value: {why}",
        field=where or None,
        value=value,
        limit=limit,
    )
