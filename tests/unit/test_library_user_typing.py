"""What a type checker (mypy, pyright) sees of ``import ldpfleet`` (held-out library-user
QA, helper D, 2026-12-05).

Found (each test below fails on the code before the fix): the public names are imported
lazily through the module's ``__getattr__`` (``-> Any``), so a type checker typed
``ldpfleet.run``, ``ldpfleet.cpr``, ``ldpfleet.SquareWave`` ... as ``Any`` and checked no
call; and the package had no ``py.typed`` marker (PEP 561), so mypy skipped its inline
annotations altogether ("module is installed, but missing library stubs or py.typed
marker").
"""

from __future__ import annotations

import ast
from pathlib import Path

import ldpfleet

PACKAGE = Path(ldpfleet.__file__).parent


def _type_checking_imports() -> dict[str, str]:
    """``public name -> "module:attribute"`` of the ``if TYPE_CHECKING:`` block (a name
    listed in ``__all__`` is re-exported, ``as`` alias or not)."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    seen: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.dump(statement)
                for alias in statement.names:
                    seen[alias.asname or alias.name] = f"{statement.module}:{alias.name}"
    return seen


def test_a_type_checker_sees_every_public_name_where_it_is_imported_from():
    assert _type_checking_imports() == ldpfleet._EXPORTS


def test_all_is_a_literal_list_of_the_exports():
    """Type checkers take ``__all__`` as the re-exports only when it is a literal list
    (``["__version__", *_EXPORTS]`` was opaque to them: ``Mechanism`` and
    ``get_mechanism``, imported under another name, counted as private)."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    (value,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__"
    ]
    assert isinstance(value, ast.List)
    listed = [ast.literal_eval(item) for item in value.elts]
    assert sorted(listed) == sorted(["__version__", *ldpfleet._EXPORTS])


def test_the_package_is_marked_typed():
    assert (PACKAGE / "py.typed").is_file()
