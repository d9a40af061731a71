"""The report's "Scenario keys" table of a CADR run whose scenario says ``[cadr] method =
"auto"`` shows which method the run used, as the broker URL row shows the broker a
``--broker`` chose: ``auto (this run: clip)``, from results.json's resolved ``method``.

Before: the row said "auto" alone, and the reader had to know that "auto" is clip under
the "dp" pipeline and ll under "paper" to read the rest of the page.
"""

from __future__ import annotations

import re

import pytest
from ldpfleet.app.report import _scenario_section


def _rows(page: str) -> dict[str, str]:
    return dict(re.findall(r"<tr><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td></tr>", page))


def _cadr_run(method: str | None, spec_method: str = "auto", pipeline: str = "dp") -> dict:
    cadr = {"method": spec_method, "eps": 3.0, "alpha": 0.1, "pipeline": pipeline}
    results = {"scenario": {"name": "x", "spec": {"cadr": cadr, "broker": {"url": "embedded"}}}}
    if method is not None:
        results["method"] = method
    return results


@pytest.mark.parametrize(("pipeline", "resolved"), [("dp", "clip"), ("paper", "ll")])
def test_auto_says_which_method_this_run_used(pipeline, resolved):
    rows = _rows(_scenario_section(_cadr_run(resolved, pipeline=pipeline)))
    assert rows["[cadr] method"] == f"auto (this run: {resolved})", rows


@pytest.mark.parametrize("method", ["ll", "lh", "ra", "clip"])
def test_a_method_named_in_the_scenario_is_shown_as_written(method):
    rows = _rows(_scenario_section(_cadr_run(method, spec_method=method)))
    assert rows["[cadr] method"] == method, rows


def test_without_a_resolved_method_the_row_is_the_scenario_s():
    """An interrupted run may have no results["method"]: the row shows what the scenario
    says, nothing is guessed."""
    rows = _rows(_scenario_section(_cadr_run(None)))
    assert rows["[cadr] method"] == "auto", rows


def test_only_the_cadr_method_row_is_annotated():
    """A GC-DP run's results.json ``method`` is its own; its [gcdp] method row is plain."""
    results = {"method": "gcdp", "scenario": {"name": "x", "spec": {
        "gcdp": {"method": "auto", "window": 30}, "broker": {"url": "embedded"}}}}  # fmt: skip
    rows = _rows(_scenario_section(results))
    assert rows["[gcdp] method"] == "auto", rows
