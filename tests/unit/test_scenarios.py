"""Scenario schema: the built-in scenarios load, bad input gives one clear sentence, and
docs/scenarios.md documents every key."""

from __future__ import annotations

import re

import msgspec
import pytest
from ldpfleet.scenarios.schema import (
    BrokerSection,
    CadrSection,
    CollectorSection,
    CprSection,
    CsvSource,
    FleetSection,
    GraphSection,
    PeriodicSource,
    PrivacySection,
    ScenarioError,
    ScenarioMeta,
    SecureSumSection,
    StreamSection,
    SyntheticSource,
    load_scenario,
    parse_scenario,
)

from tests.conftest import ROOT

QUICK = (ROOT / "scenarios" / "quickstart.toml").read_text()


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("*.toml")), ids=lambda p: p.name)
def test_builtin_scenarios_load(path):
    loaded = load_scenario(path)
    if loaded.spec.cadr is not None:
        assert loaded.spec.graph is not None and loaded.spec.fleet is None
        return
    config = loaded.stream_config("r1")
    assert config.eps > 0 and len(loaded.device_ids()) == loaded.spec.fleet.devices
    loaded.source_spec()


def test_quickstart_is_what_the_issue_asks():
    spec = parse_scenario(QUICK).spec
    assert (spec.fleet.devices, spec.stream.steps, spec.stream.eps, spec.stream.w) == (
        50,
        200,
        2.0,
        5,
    )


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (("w = 5\n", "w = 5\nepss = 1\n"), "stream.epss"),
        (("eps = 2.0", "eps = 0"), "stream.eps"),
        (("eps = 2.0", "eps = 50.5"), "stream.eps"),
        (("devices = 50", "devices = 0"), "fleet.devices"),
        (("devices = 50", 'devices = "many"'), "fleet.devices"),
        (('shape = "sine"', 'shape = "triangle"'), "source.shape"),
        (("bounds = [5.0, 35.0]", "bounds = [35.0, 5.0]"), "source.bounds"),
        (('mechanism = "sw"', 'mechanism = "gaussian"'), "stream.mechanism"),
        (("batch_steps = 5", "batch_steps = 5000"), "stream.batch_steps"),
        (("period = [12, 36]", "period = [36, 12]"), "source.period"),
        (('name = "quickstart"', 'name = "has space"'), "scenario.name"),
    ],
)
def test_bad_scenarios_name_the_key(change, needle):
    old, new = change
    assert old in QUICK
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(QUICK.replace(old, new, 1))
    assert needle in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (("eps = 2.0", 'eps = "2"'), "stream.eps: Expected `float | null`, got '2' (a str)"),
        (("eps = 2.0", "eps = [2]"), "stream.eps: Expected `float | null`, got [2] (an array)"),
        (("devices = 50", 'devices = "many"'), "got 'many' (a str)"),
    ],
)
def test_a_value_of_the_wrong_type_is_shown(change, needle):
    """``eps = "2"`` said only "Expected `float | null`, got `str`": the value is shown."""
    with pytest.raises(ScenarioError, match=re.escape(needle)):
        parse_scenario(QUICK.replace(*change, 1))


def test_missing_section_and_missing_file():
    with pytest.raises(ScenarioError, match="stream"):
        parse_scenario(QUICK.split("[stream]")[0])
    with pytest.raises(ScenarioError, match="does not exist"):
        load_scenario(ROOT / "scenarios" / "nope.toml")


def test_docs_list_every_schema_key():
    doc = (ROOT / "docs" / "scenarios.md").read_text()
    sections = {
        "scenario": ScenarioMeta,
        "fleet": FleetSection,
        "stream": StreamSection,
        "collector": CollectorSection,
        "broker": BrokerSection,
        "cpr": CprSection,
        "secure_sum": SecureSumSection,
        "graph": GraphSection,
        "cadr": CadrSection,
        "privacy": PrivacySection,
    }
    for name, struct in sections.items():
        body = doc.split(f"## `[{name}]`")[1].split("\n## ")[0]
        for field in msgspec.structs.fields(struct):
            assert re.search(rf"^\| `{field.name}` \|", body, re.M), f"{name}.{field.name}"
    source_body = doc.split("## `[source]`")[1].split("\n## ")[0]
    for struct in (SyntheticSource, CsvSource, PeriodicSource):
        for field in msgspec.structs.fields(struct):
            assert f"| `{field.name}` |" in source_body, f"source.{field.name}"


CADR = """
[scenario]
name = "g"
[graph]
source = "barabasi_albert:n=30,m=2,seed=1"
[cadr]
theta = "auto-dev"
"""


def test_cadr_scenarios_parse_and_refuse_stream_sections():
    spec = parse_scenario(CADR).spec
    assert spec.cadr.theta == "auto-dev" and spec.cadr.eps == 3.0 and spec.fleet is None
    with pytest.raises(ScenarioError, match="fleet is its graph"):
        parse_scenario(CADR + "[fleet]\ndevices = 3\n")
    with pytest.raises(ScenarioError, match="needs both"):
        parse_scenario(CADR.split("[cadr]")[0])
    with pytest.raises(ScenarioError, match=r"cadr\.alpha"):
        parse_scenario(CADR + "alpha = 1.0\n")
    with pytest.raises(ScenarioError, match="needs \\[fleet\\]"):
        parse_scenario('[scenario]\nname = "x"\n')


def test_cadr_eps_below_the_run_range_is_refused_by_the_schema():
    """``[cadr] eps = 1e-300`` with a given θ was accepted and died in the run (an
    untyped ZeroDivisionError in thm35_bound; 1e-310 under "paper": the relay timeout)."""
    for value in ("1e-300", "1e-310", "0.0009"):
        with pytest.raises(ScenarioError, match=r"cadr\.eps") as err:
            parse_scenario(CADR.replace('theta = "auto-dev"', "theta = 5") + f"eps = {value}\n")
        assert ">= 0.001" in str(err.value) and value in str(err.value), err.value
    # 0.001 is the run range's floor; with a given θ (no dp θ search, whose own floor is
    # ~0.0058: test_scenario_heldout) nothing else refuses it
    given_theta = CADR.replace('theta = "auto-dev"', "theta = 5")
    assert parse_scenario(given_theta + "eps = 0.001\n").spec.cadr.eps == 0.001


@pytest.mark.parametrize(
    ("devices", "connection", "expected"),
    [
        (50, "auto", "device"),
        (10_000, "auto", "device"),  # the measured per-device size (docs/scaling.md)
        (10_001, "auto", "gateway"),
        (10_001, "device", "device"),  # explicit choices are kept
        (5, "gateway", "gateway"),
    ],
)
def test_connection_auto_is_per_device_up_to_the_documented_size(devices, connection, expected):
    from ldpfleet.scenarios.schema import DEVICE_CONNECTIONS_AUTO_MAX

    assert DEVICE_CONNECTIONS_AUTO_MAX == 10_000
    text = QUICK.replace("devices = 50", f'devices = {devices}\nconnection = "{connection}"')
    assert f"devices = {devices}" in text
    assert parse_scenario(text).fleet_connection() == expected
