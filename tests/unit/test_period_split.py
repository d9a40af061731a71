"""The split of collector/period.py (helper K5): ``period`` re-exports every name of its
``period_*`` modules, an assignment ``period.NAME = value`` (a test's monkeypatch, a
script's sweep) reaches every split module that reads ``NAME``, and the split modules
never import ``period`` itself (no import cycle)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from ldpfleet.collector import period as P

SPLIT = tuple(module.__name__ for module in P._SPLIT_MODULES)


def _own_names(module) -> list[str]:
    """Names a split module defines (functions, classes, constants), not those it imports."""
    tree = ast.parse(Path(module.__file__).read_text())
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return names


@pytest.mark.parametrize("name", SPLIT)
def test_period_reexports_every_name_of_each_split_module(name):
    module = importlib.import_module(name)
    for own in _own_names(module):
        assert getattr(P, own) is getattr(module, own), (name, own)


def test_assigning_a_constant_on_period_reaches_every_module_that_reads_it(monkeypatch):
    from ldpfleet.collector import period_search, period_stats

    monkeypatch.setattr(P, "SHORT_STREAM", 12345)
    assert period_search.SHORT_STREAM == 12345
    assert period_stats.SHORT_STREAM == 12345
    monkeypatch.undo()
    assert period_search.SHORT_STREAM == P.SHORT_STREAM == 96


def test_a_patched_constant_changes_the_answer_as_before(monkeypatch):
    """PENALTY_SLOPE is read by few_cycles_penalty in period_stats: patched on period, the
    penalty changes (the patch is not silently lost)."""
    before = P.few_cycles_penalty(4.0, 1000)
    monkeypatch.setattr(P, "PENALTY_SLOPE", 1.0)
    after = P.few_cycles_penalty(4.0, 1000)
    assert after != before
    assert np.isclose(after, -np.log(P.PENALTY_CYCLES / 4.0))


def test_a_patched_helper_is_called_by_the_moved_code(monkeypatch):
    calls = []
    original = P._rfft

    def counting(x):
        calls.append(x.size)
        return original(x)

    monkeypatch.setattr(P, "_rfft", counting)
    P.detect_period(np.sin(2 * np.pi * np.arange(240) / 12.0))
    assert calls


@pytest.mark.parametrize("name", SPLIT)
def test_split_modules_never_import_period_itself(name):
    tree = ast.parse(Path(importlib.import_module(name).__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.module != "ldpfleet.collector.period", name
            if node.module == "ldpfleet.collector":
                assert all(alias.name != "period" for alias in node.names), name
        elif isinstance(node, ast.Import):
            assert all(alias.name != "ldpfleet.collector.period" for alias in node.names), name


def test_a_copy_of_the_split_period_loaded_alone_is_refused(tmp_path):
    """An OLD copy of a split period.py (git show REV:collector/period.py > old.py) would
    import the installed period_* modules and so compare the new code with itself."""
    copy = tmp_path / "period_copy.py"
    copy.write_text(Path(P.__file__).read_text())
    spec = importlib.util.spec_from_file_location("period_copy_k5", copy)
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(ImportError, match="period_"):
        spec.loader.exec_module(module)
