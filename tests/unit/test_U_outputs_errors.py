"""The readers' refusals carry ``limit`` and ``value`` as every ``ParameterError`` of the
library does (docs/api.md; helper U, library-user QA).

Found: tests/unit/test_parameter_error_fields.py reads protocol/ ... app/ but not
``ldpfleet/`` itself, and ``read_results``, ``read_trace`` and ``read_reports`` raised
``ParameterError`` with ``.limit`` and ``.value`` None; ``read_reports(run,
device=["d0001"])`` died in ``TypeError: unhashable type: 'list'``; ``read_trace(run,
device=5)`` said "must not be empty".
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ldpfleet
from tests.tiny_scenarios import sine_stream_text

ROOT = Path(__file__).resolve().parents[2]

TEXT = sine_stream_text("u-readers")


def test_every_parameter_error_of_the_public_modules_names_its_limit_and_value():
    lacking = []
    for path in sorted((ROOT / "ldpfleet").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == "ParameterError" and not {"limit", "value"} <= {
                k.arg for k in node.keywords
            }:
                lacking.append(f"{path.name}:{node.lineno}")
    assert lacking == []


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    ldpfleet.run(ldpfleet.parse_scenario(TEXT), broker="memory", out_dir=out)
    return out


@pytest.mark.parametrize(
    ("call", "field", "value"),
    [
        (lambda run: ldpfleet.read_results(3), "run_dir", 3),
        (lambda run: ldpfleet.read_reports(run, device=["d0001"]), "device", ["d0001"]),
        (lambda run: ldpfleet.read_reports(run, device=""), "device", ""),
        (lambda run: ldpfleet.read_reports(run, device="d9999"), "device", "d9999"),
        (lambda run: ldpfleet.read_trace(run, device=5), "device", 5),
        (lambda run: ldpfleet.read_trace(run, kind="sw_reports"), "kind", "sw_reports"),
        (lambda run: ldpfleet.read_trace(run, topic="a/#/b"), "topic", "a/#/b"),
        (lambda run: ldpfleet.read_trace(run, since=-1), "since", -1),
        (lambda run: ldpfleet.read_trace(run, since=5, until=1), "since", 5),
        (lambda run: ldpfleet.read_trace(run, device="d9999"), "device", "d9999"),
        (lambda run: ldpfleet.read_trace(run, sender="d0001"), "sender", "d0001"),
    ],
)
def test_each_refusal_carries_its_limit_and_value(run_dir, call, field, value):
    with pytest.raises(ldpfleet.ParameterError) as caught:
        call(run_dir)
    assert caught.value.field == field
    assert caught.value.value == value
    assert isinstance(caught.value.limit, str) and caught.value.limit


def test_a_damaged_results_file_carries_them_too(tmp_path):
    (tmp_path / "results.json").write_text("{not json")
    with pytest.raises(ldpfleet.ParameterError) as caught:
        ldpfleet.read_results(tmp_path)
    assert caught.value.field == "run_dir" and caught.value.value == tmp_path
    assert caught.value.limit == "a run's folder or its results.json (JSON)"


def test_a_non_str_filter_is_named_as_such(run_dir):
    with pytest.raises(ldpfleet.ParameterError, match="must be a non-empty str"):
        ldpfleet.read_trace(run_dir, device=5)
