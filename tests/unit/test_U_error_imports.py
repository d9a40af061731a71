"""The errors docs/api.md names beside ``ParameterError`` and ``ScenarioError`` are importable
from where it says (helper U, library-user QA: ``BrokerUnavailable`` and ``TraceError``
were named with no module, and ``ldpfleet`` does not export them)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import ldpfleet

API = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def stated_imports() -> list[tuple[str, str]]:
    text = " ".join(API.read_text().split())  # an inline span may wrap a line
    return re.findall(r"`from (ldpfleet[\w.]*) import (\w+)`", text)


def test_the_page_states_where_the_errors_live():
    names = {name for _, name in stated_imports()}
    assert {"BrokerUnavailable", "TraceError"} <= names


@pytest.mark.parametrize(("module", "name"), stated_imports())
def test_each_stated_import_works_and_is_an_exception(module, name):
    value = getattr(importlib.import_module(module), name)
    assert isinstance(value, type) and issubclass(value, Exception)


def test_read_trace_raises_the_stated_trace_error(tmp_path):
    from ldpfleet.broker.trace import TraceError

    with pytest.raises(TraceError, match="no trace at"):
        list(ldpfleet.read_trace(tmp_path))
