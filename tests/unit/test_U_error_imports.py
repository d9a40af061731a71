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


def test_an_audit_without_evidence_has_a_bound_at_most_zero_and_dumps_as_json():
    """docs/api.md: a bound at most 0 (``-inf``: the event never occurred) is no evidence;
    ``to_dict()`` is ready for ``json.dumps`` (``-inf`` becomes ``None``)."""
    import json

    result = ldpfleet.run_audit("laplace", 1.0, trials=2)
    assert result.eps_lb <= 0 and result.verdict == "inconclusive"
    assert result.eps_lb_max <= 1.0  # too few trials to find anything: the docs' warning
    row = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert row["verdict"] == "inconclusive" and row["eps_claimed"] == 1.0
