"""app/cli.py is split by command group into app/cli_*.py modules; these checks keep the
seams honest.

- Every name other code imports from ``ldpfleet.app.cli`` (``from ldpfleet.app.cli import
  X``, ``cli.X``) is still there: the modules moved, the imports did not.
- A name a test patches (``monkeypatch.setattr(module, "X", ...)``) on the command line's
  modules is one that module's own code looks up. Patching a re-export (``cli.X`` where the
  code that runs reads ``cli_run.X``) patches nothing and the test silently stops testing.
- No command module imports app/cli.py: no import cycle, and ``python -m ldpfleet.app.cli``
  (which runs it as ``__main__``) never loads a second copy of it.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = "ldpfleet.app.cli"
# every folder whose Python files may import the command line
SOURCES = ("tests", "scripts", "app", "scenarios", "collector", "broker", "devices", "ldpfleet")
COMMAND_MODULES = sorted(p.stem for p in (ROOT / "app").glob("cli_*.py"))


def _python_files():
    for folder in SOURCES:
        yield from sorted((ROOT / folder).rglob("*.py"))


def _module_aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> module, for the command line's modules a file imports as modules
    (``from ldpfleet.app import cli, cli_run``, ``import ldpfleet.app.cli as cli``)."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "ldpfleet.app":
            for alias in node.names:
                if alias.name == "cli" or alias.name.startswith("cli_"):
                    aliases[alias.asname or alias.name] = f"ldpfleet.app.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(CLI) and alias.asname:
                    aliases[alias.asname] = alias.name
    return aliases


def _uses_of_the_cli() -> dict[str, set[str]]:
    """Name -> files, for every name a file takes from ``ldpfleet.app.cli``."""
    uses: dict[str, set[str]] = {}
    for path in _python_files():
        if path == ROOT / "app" / "cli.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        aliases = {k for k, v in _module_aliases(tree).items() if v == CLI}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == CLI:
                for alias in node.names:
                    uses.setdefault(alias.name, set()).add(str(path.relative_to(ROOT)))
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
            ):
                uses.setdefault(node.attr, set()).add(str(path.relative_to(ROOT)))
    return uses


def _patched_names() -> list[tuple[str, str, str]]:
    """(file, module, name) for every ``setattr(M, "name", ...)`` on a command-line module."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        aliases = _module_aliases(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "setattr"
                and len(node.args) >= 2
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id in aliases
                and isinstance(node.args[1], ast.Constant)
            ):
                module = aliases[node.args[0].id]
                found.append((str(path.relative_to(ROOT)), module, node.args[1].value))
    return found


def _names_its_code_reads(module: str) -> set[str]:
    """The global names a module's functions look up when they run."""
    source = Path(importlib.import_module(module).__file__).read_text()
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load):
                    names.add(inner.id)
    return names


def test_every_name_other_code_takes_from_the_cli_is_there():
    cli = importlib.import_module(CLI)
    uses = _uses_of_the_cli()
    assert {"app", "main", "OptionError"} <= set(uses)  # the scan finds known importers
    missing = {name: sorted(files) for name, files in uses.items() if not hasattr(cli, name)}
    assert missing == {}


def test_a_patched_name_is_one_the_module_itself_looks_up():
    patched = _patched_names()
    assert ("tests/unit/test_cli_interrupted_message.py", "ldpfleet.app.cli_run", "_run_any") in (
        patched
    )
    unread = [
        (path, module, name)
        for path, module, name in patched
        if name not in _names_its_code_reads(module)
    ]
    assert unread == [], "patch these names in the module whose code reads them"


def test_a_re_export_is_not_a_patch_target():
    """The check above catches what it is meant to: ``cli`` re-exports ``_print_warnings``
    but its own code never calls it."""
    assert "_print_warnings" in _names_its_code_reads("ldpfleet.app.cli_bench")
    assert "_print_warnings" not in _names_its_code_reads(CLI)
    assert "_run_any" in _names_its_code_reads("ldpfleet.app.cli_run")


@pytest.mark.parametrize("name", COMMAND_MODULES)
def test_a_command_module_has_a_docstring_and_never_imports_the_cli(name):
    path = ROOT / "app" / f"{name}.py"
    tree = ast.parse(path.read_text(), str(path))
    assert ast.get_docstring(tree), f"{path} needs a module docstring"
    imported = set()
    for node in ast.walk(tree):  # lazy imports inside functions too
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert CLI not in imported


def test_the_command_modules_are_the_ones_the_cli_lists():
    assert COMMAND_MODULES == [
        "cli_bench",
        "cli_bench_cadr",
        "cli_broker",
        "cli_common",
        "cli_docs",
        "cli_options",
        "cli_report",
        "cli_run",
        "cli_sides",
        "cli_summary",
        "cli_trace",
    ]
    listed = ast.get_docstring(ast.parse((ROOT / "app" / "cli.py").read_text()))
    assert all(f"app/{name}.py" in listed for name in COMMAND_MODULES)
