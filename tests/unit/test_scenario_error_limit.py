"""Every refusal of ``parse_scenario`` / ``load_scenario`` sets ``ScenarioError.limit`` (the
rule broken, short and machine-readable), and ``field`` and ``value`` where a key is at
fault (docs/api.md, "Errors"). Messages are pinned elsewhere (test_scenario_error_field.py
and the loaders' own tests); here only the attributes.

Two checks: every ``ScenarioError(...)`` the schema module builds passes ``limit=`` (read
from the source, so a new refusal cannot forget it), and one case per refusal path, run.
"""

from __future__ import annotations

import ast
import copy
import math
from pathlib import Path

import pytest
from ldpfleet.scenarios import cadr_run, schema
from ldpfleet.scenarios.schema import ScenarioError, load_scenario, parse_scenario

import ldpfleet
from ldpfleet import scenario_dict
from ldpfleet.scenario_dict import scenario_toml


def _without_nones(table):
    if isinstance(table, dict):
        return {k: _without_nones(v) for k, v in table.items() if v is not None}
    return table


def _base(name: str) -> dict:
    return _without_nones(ldpfleet.load_scenario(name).to_dict())


QUICK = _base("quickstart")
RELEASE = _base("occupancy-release")
CADR = _base("facebook-degrees")
CADR["graph"]["source"] = "barabasi_albert:n=60,m=3,seed=1"  # no data file to load
BASES = {"quick": QUICK, "release": RELEASE, "cadr": CADR}


def _changed(base: str, changes: dict) -> str:
    """``base``'s sections with ``changes`` (``"section.key": value``; ``...`` deletes)."""
    sections = copy.deepcopy(BASES[base])
    for key, value in changes.items():
        *path, last = key.split(".")
        table = sections
        for part in path:
            table = table.setdefault(part, {})
        if value is ...:
            table.pop(last)
        else:
            table[last] = value
    return scenario_toml(sections)


BULK = {"fleet.connection": "bulk"}
INF = math.inf

# (id, base, changes, the field at fault, the value the file gives there)
CASES = [
    ("bound", "quick", {"stream.eps": -1.0}, "stream.eps", -1.0),
    ("unknown-key", "quick", {"stream.epsilon": 2.0}, "stream.epsilon", 2.0),
    ("unknown-section", "quick", {"mechanism_params.alpha": 1}, "mechanism_params", None),
    ("type", "quick", {"scenario.seed": "x"}, "scenario.seed", "x"),
    ("required-key", "quick", {"scenario.name": ...}, "scenario.name", None),
    ("enum", "quick", {"stream.reconstruct": "cprx"}, "stream.reconstruct", "cprx"),
    ("finite", "quick", {"scenario.run_timeout": INF}, "scenario.run_timeout", INF),
    ("broker-url", "quick", {"broker.url": "ftp://x.org"}, "broker.url", "ftp://x.org"),
    ("missing-section", "quick", {"source": ...}, "source", None),
    ("bounds-order", "quick", {"source.bounds": [35.0, 5.0]}, "source.bounds", [35.0, 5.0]),
    (
        "bounds-width",
        "quick",
        {"source.bounds": [-1e308, 1e308]},
        "source.bounds",
        [-1e308, 1e308],
    ),
    ("mechanism-name", "quick", {"stream.mechanism": "swx"}, "stream.mechanism", "swx"),
    ("mechanism-syntax", "quick", {"stream.mechanism": "a b"}, "stream.mechanism", "a b"),
    (
        "mechanism-import",
        "quick",
        {"stream.mechanism": "nowhere.at_all:Cls"},
        "stream.mechanism",
        "nowhere.at_all:Cls",
    ),
    ("eps-per-report", "quick", {"stream.eps": 1e-12}, "stream.eps", 1e-12),
    ("eps-required", "quick", {"stream.eps": ...}, "stream.eps", None),
    ("raw-without-gcdp", "quick", {"stream.mechanism": "raw"}, "stream.mechanism", "raw"),
    ("credit", "quick", {"collector.credit_window": 300}, "collector.credit_window", 300),
    ("cpr-unused", "quick", {"cpr.min_cycles": 4}, "cpr", None),
    (
        "cpr-min",
        "quick",
        {"stream.reconstruct": "cpr", "cpr.min_period": 100},
        "cpr.min_period",
        100,
    ),
    (
        "cpr-max",
        "quick",
        {"stream.reconstruct": "cpr", "cpr.max_period": 150},
        "cpr.max_period",
        150,
    ),
    (
        "never-return",
        "quick",
        {"faults.crash_fraction": 0.1, "faults.never_return": 30, "stream.step_seconds": 1},
        "faults.never_return",
        30,
    ),
    (
        "crash-between",
        "quick",
        {"faults.crash_between": [0.7, 0.2]},
        "faults.crash_between",
        [0.7, 0.2],
    ),
    ("crash-unpaced", "quick", {"faults.crash_fraction": 0.5}, "faults.crash_fraction", 0.5),
    ("sum-devices", "quick", {"fleet.devices": 1, "secure_sum.dim": 4}, "fleet.devices", 1),
    ("sum-dim", "quick", {"secure_sum.dim": 300}, "secure_sum.dim", 300),
    ("sum-neighbors", "quick", {"secure_sum.neighbors": 60}, "secure_sum.neighbors", 60),
    ("sum-threshold", "quick", {"secure_sum.threshold": 1}, "secure_sum.threshold", 1),
    ("sum-clip", "quick", {"secure_sum.clip": [1.0, 0.0]}, "secure_sum.clip", [1.0, 0.0]),
    (
        "sum-scale",
        "quick",
        {"secure_sum.scale": 1e30, "secure_sum.bits": 32},
        "secure_sum.scale",
        1e30,
    ),
    ("sum-dropout", "quick", {"secure_sum.dropout": 0.9}, "secure_sum.dropout", 0.9),
    ("trace-none", "quick", {"collector.trace": "none"}, "collector.trace", "none"),
    (
        "reconstruct-mechanism",
        "quick",
        {"stream.reconstruct": "laplace"},
        "stream.reconstruct",
        "laplace",
    ),
    ("batch-steps", "quick", {"stream.batch_steps": 500}, "stream.batch_steps", 500),
    ("w-steps", "quick", {"stream.w": 500}, "stream.w", 500),
    (
        "bulk-mechanism",
        "quick",
        {**BULK, "stream.mechanism": "laplace"},
        "stream.mechanism",
        "laplace",
    ),
    (
        "bulk-w",
        "quick",
        {**BULK, "stream.steps": 4000, "stream.w": 2000, "stream.eps": 2000.0 / 100},
        "stream.w",
        2000,
    ),
    ("bulk-batch", "quick", {**BULK, "stream.batch_steps": 7}, "stream.batch_steps", 7),
    ("bulk-section", "quick", {**BULK, "secure_sum.dim": 4}, "secure_sum", None),
    (
        "bulk-faults",
        "quick",
        {**BULK, "faults.hostile_messages": 5},
        "faults.hostile_messages",
        5,
    ),
    ("bulk-state", "quick", {**BULK, "fleet.state_dir": "/tmp/x"}, "fleet.state_dir", "/tmp/x"),
    ("bulk-source", "quick", {**BULK, "source.jitter": 0.1}, "source.jitter", 0.1),
    (
        "bulk-kind",
        "release",
        {**BULK, "stream.mechanism": "sw", "stream.eps": 2.0, "stream.w": 5, "gcdp": ...},
        "source.kind",
        "csv",
    ),
    ("columns-bounds", "release", {"source.bounds": [0.0, 1.0]}, "source.bounds", [0.0, 1.0]),
    ("columns-column", "release", {"source.column": "Light"}, "source.column", "Light"),
    ("columns-devices", "release", {"fleet.devices": 21}, "fleet.devices", 21),
    (
        "column-bounds-alone",
        "release",
        {"source.columns": ...},
        "source.column_bounds",
        [list(pair) for pair in RELEASE["source"]["column_bounds"]],
    ),
    (
        "bounds-required",
        "release",
        {"source.columns": ..., "source.column_bounds": ...},
        "source.bounds",
        None,
    ),
    ("source-file", "release", {"source.path": "no/such.txt"}, "source.path", "no/such.txt"),
    (
        "gcdp-mechanism",
        "release",
        {"stream.mechanism": "sw", "stream.eps": 2.0, "stream.w": 5},
        "stream.mechanism",
        "sw",
    ),
    ("raw-eps", "release", {"stream.eps": 1.0}, "stream.eps", 1.0),
    (
        "raw-reconstruct",
        "release",
        {"stream.reconstruct": "cpr"},
        "stream.reconstruct",
        "cpr",
    ),
    ("gcdp-window", "release", {"gcdp.window": 2000}, "gcdp.window", 2000),
    ("gcdp-devices", "release", {"fleet.devices": 5000}, "fleet.devices", 5000),
    ("gcdp-drop", "release", {"source.missing": "drop"}, "source.missing", "drop"),
    (
        "gcdp-calibration-file",
        "release",
        {"gcdp.calibration_path": "no/such.txt"},
        "gcdp.calibration_path",
        "no/such.txt",
    ),
    (
        "gcdp-steps-many",
        "release",
        {"gcdp.calibration_steps": 10**6},
        "gcdp.calibration_steps",
        10**6,
    ),
    ("gcdp-steps-few", "release", {"gcdp.calibration_steps": 10}, "gcdp.calibration_steps", 10),
    ("gcdp-utility", "release", {"gcdp.utility_column": "Nope"}, "gcdp.utility_column", "Nope"),
    (
        "gcdp-utility-text",
        "release",
        {"gcdp.utility_column": "date"},
        "gcdp.utility_column",
        "date",
    ),
    ("cadr-needs-both", "cadr", {"cadr": ...}, "cadr", None),
    ("cadr-extra", "cadr", {"fleet.devices": 10}, "fleet", None),
    ("graph-file", "cadr", {"graph.source": "no/such.txt"}, "graph.source", "no/such.txt"),
    (
        "graph-generator",
        "cadr",
        {"graph.source": "barabasi_albert:n=1,m=3"},
        "graph.source",
        "barabasi_albert:n=1,m=3",
    ),
    ("cadr-auto-sum", "cadr", {"cadr.theta": "auto-sum"}, "cadr.theta", "auto-sum"),
    ("cadr-theta-bound", "cadr", {"cadr.theta": 100, "cadr.degree_bound": 10}, "cadr.theta", 100),
    (
        "cadr-budget",
        "cadr",
        {"cadr.eps": 0.001, "cadr.degree_bound": "graph-max"},
        "cadr.eps",
        0.001,
    ),
]


@pytest.mark.parametrize(
    ("base", "changes", "field", "value"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_refusal_states_its_field_value_and_limit(base, changes, field, value):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(_changed(base, changes))
    error = info.value
    assert error.field == field, str(error)
    assert error.value == value, (error.value, str(error))
    assert isinstance(error.limit, str) and error.limit.strip(), str(error)


# TOML a dict cannot give (the dict API refuses it itself: ldpfleet.scenario_dict)
TOP_LEVEL = [
    ("top-level-key", "seed = 3\n", "seed", 3),
    ("section-type", "faults = 3\n", "faults", 3),
]


@pytest.mark.parametrize(
    ("prefix", "field", "value"), [c[1:] for c in TOP_LEVEL], ids=[c[0] for c in TOP_LEVEL]
)
def test_a_key_above_the_sections_states_its_limit(prefix, field, value):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(prefix + _changed("quick", {}))
    error = info.value
    assert (error.field, error.value) == (field, value), str(error)
    assert isinstance(error.limit, str) and error.limit.strip(), str(error)


@pytest.mark.parametrize(
    ("text", "limit"),
    [("[scenario\nname = 'x'", "valid TOML"), (Path("quickstart.toml"), "TOML text (a str)")],
    ids=["toml", "not-text"],
)
def test_a_refusal_with_no_key_at_fault_states_its_limit(text, limit):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text)
    assert info.value.field is None and info.value.value is None
    assert info.value.limit == limit


def test_a_file_that_cannot_be_loaded_states_its_limit(tmp_path):
    for path, limit in (
        (tmp_path / "nothing.toml", "an existing file or a built-in scenario's name"),
        (tmp_path, "a file, not a directory"),
    ):
        with pytest.raises(ScenarioError) as info:
            load_scenario(path)
        assert info.value.field is None and info.value.limit == limit
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\xfa")
    with pytest.raises(ScenarioError) as info:
        load_scenario(binary)
    assert info.value.limit == "a readable UTF-8 file"


def _scenario_errors_without_limit(module) -> list[int]:
    """Lines of ``module`` where a ``ScenarioError(...)`` is built without ``limit=``."""
    tree = ast.parse(Path(module.__file__).read_text())
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "ScenarioError"
        and not any(keyword.arg == "limit" for keyword in node.keywords)
    ]


@pytest.mark.parametrize("module", [schema, cadr_run, scenario_dict], ids=lambda m: m.__name__)
def test_every_refusal_of_the_schema_passes_a_limit(module):
    assert _scenario_errors_without_limit(module) == []


def test_the_limit_of_named_rules():
    """The three rules the brief named: a mechanism name, the bounds' order, a broker URL."""
    cases = [
        ({"stream.mechanism": "swx"}, "sw"),  # the accepted names list the built-ins
        ({"source.bounds": [35.0, 5.0]}, "lo < hi"),
        ({"broker.url": "ftp://x.org"}, "mqtt://"),
    ]
    for changes, part in cases:
        with pytest.raises(ScenarioError) as info:
            parse_scenario(_changed("quick", changes))
        assert part in info.value.limit, info.value.limit


def test_the_limit_of_a_type_error_uses_tomls_words():
    for prefix, limit in (("faults = 3\n", "a table ([section])"), ("", "type int")):
        text = prefix + _changed("quick", {} if prefix else {"scenario.seed": "x"})
        with pytest.raises(ScenarioError) as info:
            parse_scenario(text)
        assert info.value.limit == limit, str(info.value)


@pytest.mark.parametrize(
    ("call", "argument", "field"),
    [
        (ldpfleet.parse_scenario, 3, None),
        (ldpfleet.parse_scenario, {"scenario": 3}, "scenario"),
        (ldpfleet.parse_scenario, {"scenario": {"name": 1j}}, "scenario.name"),
        (ldpfleet.parse_scenario, {"scenario": {"": 1}}, "scenario."),  # as it was
        (ldpfleet.load_scenario, {"scenario": {}}, None),
        (ldpfleet.load_scenario, 3, None),
    ],
    ids=["not-text", "section", "value", "key", "load-dict", "load-int"],
)
def test_the_dict_api_states_its_limit(call, argument, field):
    """The public API's own refusals (``ldpfleet.scenario_dict``: a dict TOML cannot
    hold, an argument of the wrong type)."""
    with pytest.raises(ScenarioError) as info:
        call(argument)
    assert info.value.field == field, str(info.value)
    assert isinstance(info.value.limit, str) and info.value.limit.strip(), str(info.value)
