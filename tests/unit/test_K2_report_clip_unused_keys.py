"""The report's "Scenario keys" table of a CADR run whose method does not negotiate
(clip, also as the "dp" pipeline's "auto") marks the [cadr] keys only negotiation reads
(NDOE's parts, LPEA's round cap, the relay phases' deadline) as not used, instead of
listing them as if they shaped the run; a negotiating method's table is unchanged."""

from __future__ import annotations

import re

import msgspec
import pytest
from ldpfleet.app.report import NEGOTIATION_ONLY_CADR_KEYS, _scenario_section
from ldpfleet.scenarios.schema import CadrSection

NOTE = " (not used by method clip)"


def _rows(page: str) -> dict[str, str]:
    return dict(re.findall(r"<tr><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td></tr>", page))


def _cadr_run(method: str, spec_method: str = "auto", pipeline: str = "dp") -> dict:
    cadr = {"method": spec_method, "eps": 3.0, "alpha": 0.1, "fanout": 1, "ndoe_parts": 16,
            "max_rounds": 100, "pipeline": pipeline, "peer_deadline_seconds": 0.0}  # fmt: skip
    return {"method": method, "scenario": {"name": "x", "spec": {
        "cadr": cadr, "broker": {"url": "embedded"}}}}  # fmt: skip


def test_the_negotiation_only_keys_are_cadr_section_fields():
    fields = {f.name for f in msgspec.structs.fields(CadrSection)}
    assert set(NEGOTIATION_ONLY_CADR_KEYS) == {"ndoe_parts", "max_rounds", "peer_deadline_seconds"}
    assert set(NEGOTIATION_ONLY_CADR_KEYS) <= fields


def test_clip_marks_the_negotiation_only_keys():
    rows = _rows(_scenario_section(_cadr_run("clip")))
    assert rows["[cadr] ndoe_parts"] == "16" + NOTE, rows
    assert rows["[cadr] max_rounds"] == "100" + NOTE, rows
    assert rows["[cadr] peer_deadline_seconds"] == "0" + NOTE, rows
    for key in ("method", "eps", "alpha", "fanout", "pipeline"):
        assert NOTE not in rows[f"[cadr] {key}"], (key, rows)
    assert NOTE not in rows["[broker] url"]


@pytest.mark.parametrize("method", ["ll", "lh", "ra"])
def test_a_negotiating_method_keeps_the_plain_values(method):
    rows = _rows(_scenario_section(_cadr_run(method, spec_method=method)))
    assert rows["[cadr] ndoe_parts"] == "16", rows
    assert rows["[cadr] max_rounds"] == "100", rows
    assert not any(NOTE in value for value in rows.values()), rows


def test_without_a_resolved_method_the_scenario_method_is_resolved():
    """An interrupted run may have no results["method"]: "auto" under "dp" is clip, under
    "paper" ll."""
    results = _cadr_run("clip")
    del results["method"]
    assert _rows(_scenario_section(results))["[cadr] max_rounds"] == "100" + NOTE
    paper = _cadr_run("ll", pipeline="paper")
    del paper["method"]
    assert _rows(_scenario_section(paper))["[cadr] max_rounds"] == "100"


def test_a_gcdp_method_does_not_mark_anything():
    results = {"method": "gcdp", "scenario": {"name": "x", "spec": {
        "gcdp": {"method": "gcdp", "window": 30}, "broker": {"url": "embedded"}}}}  # fmt: skip
    assert not any(NOTE in value for value in _rows(_scenario_section(results)).values())


def test_a_cadr_run_marks_the_cpr_keys_unused():
    """A CADR scenario carries the [cpr] section's defaults (or a user's [cpr] table,
    accepted); the CADR run reads none of them (helper B2's user trial). A stream run's
    [cpr] keys stay plain."""
    results = _cadr_run("clip")
    results["scenario"]["spec"]["cpr"] = {"min_cycles": 3, "max_period": None}
    rows = _rows(_scenario_section(results))
    assert rows["[cpr] min_cycles"] == "3 (not used by a CADR run)", rows
    stream = {"scenario": {"name": "x", "spec": {"cpr": {"min_cycles": 3}}}}
    assert _rows(_scenario_section(stream))["[cpr] min_cycles"] == "3"
