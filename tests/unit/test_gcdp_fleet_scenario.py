"""Tier 1: the ``[gcdp]`` scenario schema, the several-column csv source and the collector
stage's calibration layout (no broker)."""

from __future__ import annotations

import re

import msgspec
import numpy as np
import pytest
from ldpfleet.collector.gcdp import calibrate_fleet
from ldpfleet.collector.gcdp_stage import GcdpStage, load_calibration, release_rng
from ldpfleet.devices.sources import CsvSpec, SourceError, channel_bounds, csv_stream, load_table
from ldpfleet.scenarios.plans import gcdp_stage_config
from ldpfleet.scenarios.schema import (
    CsvSource,
    GcdpSection,
    ScenarioError,
    load_scenario,
    parse_scenario,
)

from tests.conftest import ROOT

RELEASE = ROOT / "scenarios" / "occupancy-release.toml"
TEXT = RELEASE.read_text()
COLUMNS = ["Temperature", "Humidity", "Light", "CO2", "HumidityRatio"]


def test_occupancy_release_scenario_is_what_the_issue_asks():
    loaded = load_scenario(RELEASE)
    spec = loaded.spec
    assert spec.fleet.devices == 20 and spec.stream.steps == 1800
    assert spec.stream.mechanism == "raw" and spec.source.columns == COLUMNS
    assert (spec.gcdp.window, spec.gcdp.eps_rel, spec.gcdp.method) == (30, 1.0, "gcdp")
    config = loaded.stream_config("r1")
    # nothing spent per step on the device; eps and w declare the central release
    assert (config.eps, config.eps0, config.w, config.batch_steps) == (1.0, 0.0, 30, 30)
    assert (config.lo, config.hi) == (0.0, 1.0)  # devices report in [0, 1] units
    assert loaded.node_bounds(6) == (15.0, 40.0)  # room 1, Humidity


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("[gcdp]", "[gcdp_off]", "gcdp_off"),  # unknown section
        ('mechanism = "raw" ', 'mechanism = "sw"\neps = 1.0\nw = 5 ', "stream.mechanism"),
        ("steps = 1800", "steps = 1800\neps = 1.0", "stream.eps"),
        ("steps = 1800", "steps = 1800\nw = 3", "stream.w"),
        ("steps = 1800", 'steps = 1800\nreconstruct = "cpr"', "stream.reconstruct"),
        ("steps = 1800", "steps = 20", "gcdp.window"),
        ("devices = 20", "devices = 21", "fleet.devices"),
        ("[0.002, 0.007]]", "[0.007, 0.002]]", "source.column_bounds[4]"),
        (", [0.002, 0.007]]", "]", "source.column_bounds"),
        ("[0.002, 0.007]]", "[-1e308, 1e308]]", "source.column_bounds[4]"),  # hi - lo = inf
        ('"HumidityRatio"]', '"Humidity"]', "source.columns"),
        ('"HumidityRatio"]', '"Humidity_Ratio"]', "source.columns"),
        ("stride = 200", "stride = 200\nbounds = [0.0, 1.0]", "source.bounds"),
        ("stride = 200", 'stride = 200\ncolumn = "Light"', "source.column"),
        ('utility_column = "Occupancy"', 'utility_column = "Occ"', "gcdp.utility_column"),
        ("eps_rel = 1.0", "eps_rel = 0.0", "gcdp.eps_rel"),
        ('method = "gcdp"', 'method = "gau"', "gcdp.method"),
        ("tau = 0.15", "tau = 1.5", "gcdp.tau"),
        ("window = 30", "window = 30\ncalibration_steps = 7", "gcdp.calibration_steps"),
        ('"data/uci-occupancy/datatraining.txt"', '"data/nope.txt"', "gcdp.calibration_path"),
        (
            '"data/uci-occupancy/datatraining.txt"',
            '"data/intel-lab/mote_locs.txt"',
            "gcdp.calibration_path",
        ),
    ],
)
def test_bad_gcdp_scenarios_name_the_field(old, new, needle):
    assert old in TEXT
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(TEXT.replace(old, new, 1), RELEASE)
    assert needle in str(caught.value)
    assert "\n" not in str(caught.value)


def test_raw_needs_gcdp_and_ldp_needs_eps():
    without = TEXT.split("[gcdp]")[0]
    with pytest.raises(ScenarioError, match=r"stream\.mechanism.*only allowed with a \[gcdp\]"):
        parse_scenario(without, RELEASE)
    quick = (ROOT / "scenarios" / "quickstart.toml").read_text()
    with pytest.raises(ScenarioError, match=r"stream\.eps: required"):
        parse_scenario(quick.replace("eps = 2.0\n", ""))
    with pytest.raises(ScenarioError, match=r"stream\.w: required"):
        parse_scenario(quick.replace("w = 5\n", ""))


def test_docs_list_the_gcdp_section_and_the_new_source_keys():
    doc = (ROOT / "docs" / "scenarios.md").read_text()
    body = doc.split("## `[gcdp]`")[1].split("\n## ")[0]
    for field in msgspec.structs.fields(GcdpSection):
        assert re.search(rf"^\| `{field.name}` \|", body, re.M), f"gcdp.{field.name}"
    source = doc.split("## `[source]`")[1].split("\n## ")[0]
    for name in ("columns", "column_bounds"):
        assert name in {f.name for f in msgspec.structs.fields(CsvSource)}
        assert f"| `{name}` |" in source
    assert "occupancy-release.toml" in doc


def test_several_columns_map_devices_to_rooms_and_channels():
    path = str(ROOT / "data" / "uci-occupancy" / "datatest.txt")
    bounds = ((18, 26), (15, 40), (0, 1000), (400, 1600), (0.002, 0.007))
    spec = CsvSpec(path, 0, stride=200, columns=tuple(COLUMNS), column_bounds=bounds)
    names, matrix = load_table(path)
    for device in (0, 4, 7, 19):
        room, channel = divmod(device, 5)
        values, _ = csv_stream(spec, device, 20, 50)
        column = names.index(COLUMNS[channel])
        np.testing.assert_array_equal(values, matrix[room * 200 : room * 200 + 50, column])
        assert channel_bounds(spec, device) == spec.column_bounds[channel]
    assert channel_bounds(CsvSpec(path, "Light"), 3) is None
    with pytest.raises(SourceError) as caught:
        CsvSpec(path, 0, columns=("Light",), column_bounds=((0, 1), (0, 1)))
    assert caught.value.field == "source.column_bounds"
    with pytest.raises(SourceError) as caught:
        CsvSpec(path, 0, layout="rows", columns=("Light",), column_bounds=((0, 1),))
    assert caught.value.field == "source.columns"


def test_stage_calibrates_on_the_public_file_laid_out_like_the_fleet():
    loaded = load_scenario(RELEASE)
    data, labels = load_calibration(gcdp_stage_config(loaded))
    names, matrix = load_table(str(ROOT / "data" / "uci-occupancy" / "datatraining.txt"))
    assert data.shape == (matrix.shape[0], 20) and labels.shape == data.shape
    assert data.min() >= 0.0 and data.max() <= 1.0
    # node 6 = room 1 (offset 8143 // 4), Humidity, mapped with its public bounds [15, 40]
    start = matrix.shape[0] // 4
    expected = np.clip((matrix[start : start + 10, names.index("Humidity")] - 15) / 25, 0, 1)
    np.testing.assert_allclose(data[:10, 6], expected, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(labels[:10, 6], matrix[start : start + 10, -1])
    stage = GcdpStage(gcdp_stage_config(loaded), "r1", loaded.device_ids(), seed=6)
    direct = calibrate_fleet(data, window=30, eps_rel=1.0, tau=0.15, labels=labels)
    np.testing.assert_array_equal(stage.theta.budgets, direct.budgets)
    assert stage.theta.edges == direct.edges and stage.machine.n_windows == 60
    assert release_rng(6).random() == release_rng(6).random() != release_rng(7).random()
