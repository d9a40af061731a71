"""A mechanism name that leads to no class carries ``limit`` and ``value`` (claim R6).

Found (helper E's user trial, round 4): ``get_mechanism("shapes:factory", 1)`` (a function),
``"shapes:INSTANCE"`` (an instance), ``"shapes:Missing"`` and an unknown name raised
``UnresolvedMechanism`` (a ``ParameterError``) with ``field="mechanism"`` but ``limit`` and
``value`` None: the AST guard looked for calls named ``ParameterError`` only, not its
subclasses (it now follows them: tests/unit/test_parameter_error_fields.py).
"""

from __future__ import annotations

import sys

import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanisms import stream_mechanism


@pytest.fixture
def plugin_folder(tmp_path, monkeypatch):
    (tmp_path / "e4_shapes.py").write_text(
        "def factory(eps):\n    return None\n\nclass Some:\n    pass\n\nINSTANCE = Some()\n"
        "import numpy\n"
    )
    (tmp_path / "e4_needs.py").write_text("import e4_not_installed_anywhere\n")
    (tmp_path / "e4_raises.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("e4_shapes", "e4_needs", "e4_raises"):
        sys.modules.pop(name, None)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("e4_shapes:factory", "not a class"),
        ("e4_shapes:INSTANCE", "not a class"),
        ("e4_shapes:Missing", "has no attribute"),
        ("e4_no_such_module:Cls", "not found"),
        ("e4_needs:Cls", "which is not installed"),
        ("e4_raises:Cls", "failed"),
        ("e4-unknown-name", "entry-point"),
    ],
)
def test_an_unresolved_name_names_its_limit_and_value(plugin_folder, name, words):
    with pytest.raises(ParameterError) as refused:
        stream_mechanism(name, 1.0)
    error = refused.value
    assert words in str(error), error
    assert error.field == "mechanism" and error.value == name and error.limit, vars(error)
