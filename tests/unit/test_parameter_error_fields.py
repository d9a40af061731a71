"""Every ``ParameterError`` the library raises carries ``limit=`` and ``value=`` (claim R6).

The sentence of a refusal names the field, the limit and the value for a person; the
attributes give the same to a program (``err.field``, ``err.limit``, ``err.value``), as
``ScenarioError`` and ``OptionError`` do. This test reads the source (AST) of every library
module and lists each ``ParameterError(...)`` call that lacks either keyword: there is none
(the last 78 modules were converted on 2026-12-05 night).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("ldpfleet", "protocol", "broker", "devices", "collector", "scenarios", "app")


def _subclasses(paths: list[Path]) -> set[str]:
    """``ParameterError`` and the names of the library's classes derived from it, at any
    depth (``UnresolvedMechanism``, ``PluginImportFailed``: helper E found them raised
    without ``limit`` and ``value``, which the scan of ``ParameterError(...)`` calls did
    not see)."""
    bases: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = {
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
                }
    found = {"ParameterError"}
    while True:
        more = {name for name, of in bases.items() if of & found} - found
        if not more:
            return found
        found |= more


def _calls_lacking_fields(path: Path, names: set[str] = frozenset({"ParameterError"})) -> list[int]:
    """Line numbers of calls of ``names`` (``ParameterError`` and its subclasses) in
    ``path`` without limit= and value=."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        keywords = {k.arg for k in node.keywords}
        if name in names and not {"limit", "value"} <= keywords:
            lines.append(node.lineno)
    return lines


def _library_modules() -> list[Path]:
    return sorted(p for root in LIBRARY for p in (ROOT / root).rglob("*.py"))


def test_every_parameter_error_names_its_limit_and_value():
    missing = {}
    modules = _library_modules()
    names = _subclasses(modules)
    assert {"UnresolvedMechanism", "PluginImportFailed"} <= names, names
    for path in modules:
        relative = path.relative_to(ROOT).as_posix()
        lines = _calls_lacking_fields(path, names)
        if lines:
            missing[relative] = lines
    assert not missing, f"ParameterError without limit= and value= at {missing}"


def test_the_scan_finds_a_call_without_the_fields(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "raise ParameterError('bad', field='x')\n"
        "raise errors.ParameterError('ok', field='x', limit='> 0', value=-1)\n"
    )
    assert _calls_lacking_fields(sample) == [1]
