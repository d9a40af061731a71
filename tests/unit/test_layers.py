"""The layers point one way (DESIGN.md, "Layout"; shared/DESIGN.md, "Layers").

protocol <- broker, devices, collector <- scenarios <- app. The import graph is read from
the source with ``ast``: every ``import`` and ``from ... import`` (inside functions and
under ``if TYPE_CHECKING`` too, relative ones resolved) and every
``importlib.import_module("...")`` with a literal name. The rules:

- protocol imports only protocol (plus the standard library and third-party packages);
- broker, devices and collector never import ldpfleet.scenarios or ldpfleet.app (they may
  import protocol and each other);
- scenarios never imports ldpfleet.app;
- only app may import the public API (the ``ldpfleet`` package itself and its own modules,
  which lazily import every layer).

Besides the six layer folders the graph covers the three other folders of the installed
package: the public API (``ldpfleet/``: it may import any layer, but only lazily — inside a
function or under ``if TYPE_CHECKING`` — so ``import ldpfleet`` loads no layer; DESIGN.md,
"Layout") and ``data/`` (``ldpfleet.data``: shipped data sets, no code, so it imports nothing
of ldpfleet) and ``docs/`` (``ldpfleet.docs``: the documentation pages ``ldpfleet docs``
prints, no code at all). Every folder pyproject.toml maps onto ``ldpfleet.*`` is one of these.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "ldpfleet"
# source folder (imported as ldpfleet.<folder>) -> its tier; a module may import its own
# tier and the tiers below
TIERS = {"protocol": 0, "broker": 1, "devices": 1, "collector": 1, "scenarios": 2, "app": 3}
PUBLIC_API = "public API"  # ldpfleet itself and its modules outside the layer folders
DATA = "data"  # ldpfleet.data: shipped data sets, no code
# the source folders of the two non-layer parts of the package
DOCS = "docs"  # ldpfleet.docs: the documentation pages (app/cli_docs.py), no code
FOLDER_OF = {PUBLIC_API: PACKAGE, DATA: DATA, DOCS: DOCS}


@dataclass(frozen=True)
class Violation:
    """One forbidden import."""

    module: str
    line: int
    target: str
    rule: str

    def __str__(self) -> str:
        return f"{self.module} line {self.line} imports {self.target}: {self.rule}"


def layer_of(module: str) -> str | None:
    """The layer folder of an ``ldpfleet.*`` module, ``PUBLIC_API``, ``DATA``, or None for a
    module outside the package (standard library, third party)."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    if len(parts) > 1 and (parts[1] in TIERS or parts[1] == DATA):
        return parts[1]
    return PUBLIC_API


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name ``from ...x import`` refers to, seen from ``module``."""
    if node.level == 0:
        return node.module or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str, source: str, *, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, imported module) for every import in ``source``, anywhere in it. For
    ``from package import name`` the target is ``package.name`` when the package is
    ``ldpfleet`` itself (``from ldpfleet import app`` imports the app layer)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node)
            if base == PACKAGE:
                found += [
                    (node.lineno, f"{base}.{alias.name}".rstrip(".*")) for alias in node.names
                ]
            else:
                found.append((node.lineno, base))
        elif _is_import_module_call(node):
            found.append((node.lineno, node.args[0].value))
    return sorted(found)


def _is_import_module_call(node: ast.AST) -> bool:
    """``importlib.import_module("literal")`` or ``import_module("literal")``."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    first = node.args[0]
    return (
        name == "import_module" and isinstance(first, ast.Constant) and isinstance(first.value, str)
    )


def rule_broken(importer: str, target: str) -> str | None:
    """Why ``importer`` (a layer module) may not import ``target``, or None if it may."""
    source, destination = layer_of(importer), layer_of(target)
    if destination is None or source is None or source == PUBLIC_API:
        return None  # outside the package, or the public API (it may import anything)
    if source == DATA:
        return "the data package holds no code: it imports nothing of ldpfleet"
    if source == "protocol" and destination != "protocol":
        return "protocol imports only protocol (plus stdlib and third-party packages)"
    if destination == DATA:
        return None
    if destination == PUBLIC_API:
        return None if source == "app" else "only the app layer may import the public API"
    if TIERS[destination] > TIERS[source]:
        return f"{source} may not import the higher layer {destination}"
    return None


def layer_violations(module: str, source: str, *, is_package: bool = False) -> list[Violation]:
    """Every forbidden import of ``module`` (an ``ldpfleet.<layer>...`` name) in ``source``."""
    violations = []
    for line, target in imports_of(module, source, is_package=is_package):
        rule = rule_broken(module, target)
        if rule is not None:
            violations.append(Violation(module, line, target, rule))
    return violations


def _is_type_checking_block(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` (or ``if typing.TYPE_CHECKING:``)."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", None)
    return name == "TYPE_CHECKING"


def eager_imports_of(
    module: str, source: str, *, is_package: bool = False
) -> list[tuple[int, str]]:
    """(line, imported module) for every import that runs when ``module`` is imported: at
    module level, also inside ``if``/``try``/``with`` blocks, but not inside a function or
    class body nor under ``if TYPE_CHECKING``."""
    eager_lines: set[int] = set()

    def visit(statements: list[ast.AST]) -> None:
        for node in statements:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            if _is_type_checking_block(node):
                visit(node.orelse)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                eager_lines.add(node.lineno)
            else:
                blocks = [getattr(node, f, None) or [] for f in ("body", "orelse", "finalbody")]
                blocks.append(getattr(node, "handlers", None) or [])
                if not any(blocks):  # a simple statement: an import_module("...") call in it
                    eager_lines.update(
                        call.lineno for call in ast.walk(node) if _is_import_module_call(call)
                    )
                for block in blocks:
                    visit(block)

    visit(ast.parse(source).body)
    everything = imports_of(module, source, is_package=is_package)
    return [(line, target) for line, target in everything if line in eager_lines]


def layer_modules() -> list[tuple[str, Path]]:
    """(module name, path) of every module of the six layer folders."""
    modules = []
    for folder in TIERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [folder, *path.relative_to(ROOT / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            modules.append((".".join([PACKAGE, *parts]), path))
    return modules


def package_modules() -> list[tuple[str, Path]]:
    """(module name, path) of every module of the installed package: the six layer folders,
    the public API (``ldpfleet/``) and ``data/`` (``ldpfleet.data``)."""
    modules = layer_modules()
    for folder in FOLDER_OF.values():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            prefix = [PACKAGE] if folder == PACKAGE else [PACKAGE, folder]
            modules.append((".".join([*prefix, *parts]), path))
    return modules


def facade_violations(module: str, source: str, *, is_package: bool = False) -> list[Violation]:
    """Every layer a public-API module imports eagerly (when it is imported itself): the
    public API names the layers' objects lazily, so ``import ldpfleet`` loads no layer."""
    return [
        Violation(module, line, target, "the public API imports the layers lazily only")
        for line, target in eager_imports_of(module, source, is_package=is_package)
        if layer_of(target) not in (None, PUBLIC_API)
    ]


def test_every_layer_has_modules():
    found = {layer_of(name) for name, _ in layer_modules()}
    assert found == set(TIERS)
    assert len(layer_modules()) > 50


def test_no_layer_imports_upwards():
    violations = []
    for module, path in package_modules():
        is_package = path.name == "__init__.py"
        violations += layer_violations(module, path.read_text(), is_package=is_package)
    assert not violations, "imports against the layers:\n" + "\n".join(map(str, violations))


def test_the_public_api_imports_the_layers_lazily():
    facade = [(m, p) for m, p in package_modules() if layer_of(m) == PUBLIC_API]
    assert {m for m, _ in facade} >= {"ldpfleet", "ldpfleet.outputs", "ldpfleet.audits"}
    violations = []
    for module, path in facade:
        is_package = path.name == "__init__.py"
        violations += facade_violations(module, path.read_text(), is_package=is_package)
    assert not violations, "eager imports in the public API:\n" + "\n".join(map(str, violations))


def test_every_folder_of_the_package_is_in_the_graph():
    """pyproject.toml maps each source folder onto ``ldpfleet.*``: each must be a layer, the
    public API or data (a new folder would otherwise escape the check), and every module
    of the package is scanned."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    mapped = pyproject["tool"]["setuptools"]["package-dir"]
    assert set(mapped.values()) == set(TIERS) | set(FOLDER_OF.values())
    for package, folder in mapped.items():
        expected = PACKAGE if folder == PACKAGE else f"{PACKAGE}.{folder}"
        assert package == expected, f"{folder}/ is installed as {package}, not {expected}"
    assert not list((ROOT / DOCS).rglob("*.py")), "docs/ (ldpfleet.docs) holds no code"
    scanned = {path for _, path in package_modules()}
    for folder in mapped.values():
        assert set((ROOT / folder).rglob("*.py")) <= scanned


# ---- the checker itself catches violations -----------------------------------------------

HIDDEN_IMPORTS = """
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from ldpfleet.protocol.stream import StreamConfig

if TYPE_CHECKING:
    from ldpfleet.scenarios.schema import LoadedScenario


def build():
    from ldpfleet.app import audit_fleet
    import ldpfleet.app.cli
    return importlib.import_module("ldpfleet.scenarios.runner")
"""


def test_the_checker_flags_imports_in_functions_and_under_type_checking():
    violations = layer_violations("ldpfleet.devices.fake", HIDDEN_IMPORTS)
    assert [(v.line, v.target) for v in violations] == [
        (10, "ldpfleet.scenarios.schema"),
        (14, "ldpfleet.app"),
        (15, "ldpfleet.app.cli"),
        (16, "ldpfleet.scenarios.runner"),
    ]
    message = str(violations[0])
    assert "ldpfleet.devices.fake" in message and "line 10" in message
    assert "ldpfleet.scenarios.schema" in message


@pytest.mark.parametrize(
    ("module", "is_package", "source", "target"),
    [
        ("ldpfleet.collector.stage", False, "from ..scenarios import schema", "ldpfleet.scenarios"),
        ("ldpfleet.collector.audit", True, "from ...app.cli import main", "ldpfleet.app.cli"),
        ("ldpfleet.broker.x", False, "from ldpfleet import app", "ldpfleet.app"),
        ("ldpfleet.devices.x", False, "import ldpfleet", "ldpfleet"),
        ("ldpfleet.protocol.x", False, "from ldpfleet.devices.sources import CsvSpec", None),
        ("ldpfleet.protocol.x", False, "from ..broker import transport", "ldpfleet.broker"),
        ("ldpfleet.scenarios.x", False, "from ldpfleet.app.report import write", None),
    ],
)
def test_the_checker_flags_each_rule(module, is_package, source, target):
    violations = layer_violations(module, source, is_package=is_package)
    assert len(violations) == 1
    assert violations[0].target == (target or imports_of(module, source)[0][1])


EAGER_FACADE = """
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ldpfleet.protocol.errors import ParameterError
from . import outputs

if TYPE_CHECKING:
    from ldpfleet.scenarios.schema import LoadedScenario
else:
    import ldpfleet.collector.cpr

try:
    from ldpfleet.broker import trace
except ImportError:
    trace = None

RUNNER = importlib.import_module("ldpfleet.scenarios.runner")


def run():
    from ldpfleet.scenarios.runner import run_scenario
    return importlib.import_module("ldpfleet.app.cli")
"""


def test_the_checker_flags_eager_imports_in_the_public_api():
    violations = facade_violations("ldpfleet.fake", EAGER_FACADE)
    assert [(v.line, v.target) for v in violations] == [
        (7, "ldpfleet.protocol.errors"),
        (13, "ldpfleet.collector.cpr"),
        (16, "ldpfleet.broker"),
        (20, "ldpfleet.scenarios.runner"),
    ]
    assert "lazily" in str(violations[0])
    # what it imports anywhere is allowed by the layer rules (the public API is on top)
    assert layer_violations("ldpfleet.fake", EAGER_FACADE) == []


def test_the_checker_flags_code_in_the_data_package():
    violations = layer_violations("ldpfleet.data", "import json\nfrom ldpfleet.protocol import sw")
    assert [(v.line, v.target) for v in violations] == [(2, "ldpfleet.protocol")]
    assert "no code" in violations[0].rule


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("ldpfleet.app.cli", "from ldpfleet.scenarios.runner import run_scenario\nimport ldpfleet"),
        ("ldpfleet.scenarios.x", "from ldpfleet.collector.service import CollectorService"),
        ("ldpfleet.collector.x", "from ldpfleet.devices.sources import CsvSpec"),
        ("ldpfleet.broker.x", "from . import transport\nfrom ..protocol import codec"),
        ("ldpfleet.protocol.x", "import numpy\nfrom .sw import normalise"),
    ],
)
def test_the_checker_allows_imports_down_and_sideways(module, source):
    assert layer_violations(module, source) == []
