"""Review (helper G): a notebook's mechanism class redefined keeps its contract check.

Today's change re-reads a ``"__main__:Class"`` mechanism on each build (a notebook cell run
again redefines the class) and takes the class itself (``class_import_path``). But the
contract's sample check ran once per ``(name, eps)`` (``protocol.mechanisms._checked``): a
class redefined under the same name, broken this time (non-finite reports), was built
and used without any check, by name and by class, while a fresh process refuses it.
Fails on the old code (both builds accepted)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from ldpfleet.protocol import mechanisms
from ldpfleet.protocol.errors import ParameterError

NAME = "ReviewNotebookMechanism"


def _as_notebook_class(cls: type, monkeypatch: pytest.MonkeyPatch) -> type:
    """``cls`` as if a notebook cell defined it: ``__main__.ReviewNotebookMechanism``."""
    cls.__module__, cls.__qualname__, cls.__name__ = "__main__", NAME, NAME
    monkeypatch.setattr(sys.modules["__main__"], NAME, cls, raising=False)
    return cls


def _good() -> type:
    class Good(mechanisms.BUILTIN_MECHANISMS["laplace"]):
        pass

    return Good


def _broken() -> type:
    class Broken:
        def __init__(self, eps: float) -> None:
            self.eps = eps

        def perturb(self, x, rng):
            return np.full(np.shape(x), np.nan)

        def estimate_mean(self, reports):
            return float("nan")

        def in_domain(self, y):
            return np.ones(np.shape(y), dtype=bool)

    return Broken


@pytest.mark.parametrize(
    ("first", "again"), [("name", "name"), ("name", "class"), ("class", "name"), ("class", "class")]
)
def test_a_redefined_notebook_class_is_checked_again(first, again, monkeypatch):
    path = f"__main__:{NAME}"
    good = _as_notebook_class(_good(), monkeypatch)
    built = mechanisms.stream_mechanism(path if first == "name" else good, 1.0)
    assert type(built) is good
    broken = _as_notebook_class(_broken(), monkeypatch)  # the cell run again, edited
    with pytest.raises(ParameterError, match="non-finite reports") as refused:
        mechanisms.stream_mechanism(path if again == "name" else broken, 1.0)
    assert refused.value.field == "mechanism"


def test_a_builtin_is_checked_once_per_budget():
    mechanisms.stream_mechanism("sw", 1.25)
    checked = len(mechanisms._checked)
    for _ in range(3):
        mechanisms.stream_mechanism("sw", 1.25)
    assert len(mechanisms._checked) == checked
