"""Tier 1: ``[gcdp]`` on a user's own sensor layouts (helper N, 2026-12-05).

The "rows" layout (each row of the file one node's series, Intel Lab's motes x half-hours)
fits the stage's model: device i = node i = row i, one channel per node, the source's
``bounds`` for every node, the calibration file's row i calibrating node i. Before this
change ``[gcdp]`` refused it (``source.kind: ... needs layout = "column"``) and the user
had to transpose the file by hand."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.gcdp import calibrate_fleet
from ldpfleet.collector.gcdp_stage import load_calibration
from ldpfleet.devices.sources import csv_stream
from ldpfleet.scenarios.plans import gcdp_stage_config
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

from tests.conftest import ROOT

INTEL = ROOT / "data" / "intel-lab"
TEST, TRAIN = INTEL / "intelTemperatureTest.csv", INTEL / "intelTemperatureTrain.csv"
BOUNDS = (10.0, 40.0)  # a public indoor range, not derived from the data

ROWS = f"""
[scenario]
name = "intel-rows"
seed = 6

[fleet]
devices = 20

[stream]
steps = 96
mechanism = "raw"

[source]
kind = "csv"
layout = "rows"
path = "{TEST}"
bounds = [{BOUNDS[0]}, {BOUNDS[1]}]

[gcdp]
eps_rel = 1.0
window = 12
calibration_path = "{TRAIN}"
"""


def matrix(path) -> np.ndarray:
    """The file as numbers: rows = motes, columns = half-hour steps."""
    return np.loadtxt(path, delimiter=",", ndmin=2)


def test_gcdp_accepts_the_rows_layout_one_node_per_row(tmp_path):
    loaded = parse_scenario(ROWS, tmp_path / "s.toml")  # refused before: needs "column"
    config = gcdp_stage_config(loaded)
    assert config.nodes == 20 and set(config.node_bounds) == {BOUNDS}
    data, labels = load_calibration(config)
    train = matrix(TRAIN)
    # node i calibrates on row i of the calibration file, every one of its 144 steps (the
    # old length, the file's 50 rows, cut the series and mixed in nothing of the others)
    assert labels is None and data.shape == (train.shape[1], 20)
    expected = np.clip((train[:20].T - BOUNDS[0]) / (BOUNDS[1] - BOUNDS[0]), 0.0, 1.0)
    np.testing.assert_allclose(data, expected)
    # device i streams row i of the source: the node the calibration's row i describes
    source = loaded.source_spec()
    for i in (0, 7, 19):
        series, _ = csv_stream(source, i, 20, 96)
        np.testing.assert_allclose(series, matrix(TEST)[i])
    theta = calibrate_fleet(data, window=12, eps_rel=1.0)
    assert len(theta.budgets) == 20


@pytest.mark.parametrize(
    ("old", "new", "field", "needle"),
    [
        # 60 devices over 50 rows: device 50 would replay row 0, one mote in two coordinates
        ("devices = 20", "devices = 60", "fleet.devices", "50 rows"),
        # a calibration file with fewer rows than nodes: node i must calibrate on its own row
        (f'"{TRAIN}"', '"{tmp}/ten-motes.csv"', "gcdp.calibration_path", "10 rows"),
        # no label column in a rows file: the utility needs a time-aligned 0/1 column
        ("window = 12", 'window = 12\nutility_column = "Occupancy"', "gcdp.utility_column", ""),
        # rows are replayed from their first value: a calibration stride would be ignored
        ("window = 12", "window = 12\ncalibration_stride = 5", "gcdp.calibration_stride", ""),
    ],
)
def test_rows_layout_refusals_name_the_field(tmp_path, old, new, field, needle):
    assert old in ROWS
    np.savetxt(tmp_path / "ten-motes.csv", matrix(TRAIN)[:10], delimiter=",", fmt="%.2f")
    text = ROWS.replace(old, new.replace("{tmp}", str(tmp_path)), 1)
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, tmp_path / "s.toml")
    message = str(caught.value)
    assert field in message and needle in message and "\n" not in message


def test_the_documented_rows_snippet_loads(tmp_path):
    """docs/gcdp-fleet.md's "rows" example is a valid [source] and [gcdp] pair."""
    text = (ROOT / "docs" / "gcdp-fleet.md").read_text()
    after = text.split("**Row-per-sensor files", 1)[1]
    snippet = after.split("```toml\n", 1)[1].split("```", 1)[0]
    head = ROWS.split("[source]", 1)[0]
    loaded = parse_scenario(head + snippet, ROOT / "scenarios" / "doc.toml")
    assert loaded.spec.source.layout == "rows" and gcdp_stage_config(loaded).nodes == 20


@pytest.mark.parametrize("start", [0, 1])
@pytest.mark.parametrize("which", ["source.path", "gcdp.calibration_path"])
def test_a_sensor_id_column_in_a_rows_file_is_refused(tmp_path, start, which):
    """A rows file whose first column numbers the sensors (0..n-1 or 1..n, under a header
    "sensor" or none) was replayed as every node's first reading (records 97, not 96), with
    no word: refused, naming the file and how to cut the column."""
    base = TEST if which == "source.path" else TRAIN
    values = matrix(base)
    ids = np.arange(start, start + values.shape[0], dtype=float)[:, None]
    path = tmp_path / "with-ids.csv"
    np.savetxt(path, np.hstack([ids, values]), delimiter=",", fmt="%.2f")
    text = ROWS.replace(f'"{base}"', f'"{path}"', 1)
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, tmp_path / "s.toml")
    message = str(caught.value)
    assert which in message and "sensor id" in message and "cut -d, -f2-" in message
    assert "\n" not in message


@pytest.mark.parametrize("start", [0, 1])
def test_a_header_of_step_numbers_in_a_rows_file_is_refused(tmp_path, start):
    """A header "0,1,...,95" (the time steps, all numbers) is detected as data: node 0 would
    replay the step numbers. Refused, saying ``source.header = true``; with it, it runs."""
    text = ROWS
    for base, name in ((TEST, "numbered.csv"), (TRAIN, "numbered-train.csv")):
        values = matrix(base)
        steps = np.arange(start, start + values.shape[1], dtype=float)[None, :]
        np.savetxt(tmp_path / name, np.vstack([steps, values]), delimiter=",", fmt="%.2f")
        text = text.replace(f'"{base}"', f'"{tmp_path / name}"', 1)
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, tmp_path / "s.toml")
    message = str(caught.value)
    assert "source.path" in message and "source.header = true" in message
    fixed = text.replace("bounds = [", "header = true\nbounds = [", 1)
    loaded = parse_scenario(fixed, tmp_path / "s.toml")
    series, _ = csv_stream(loaded.source_spec(), 0, 20, 96)
    np.testing.assert_allclose(series, matrix(TEST)[0])  # header = true: both files
    data, _ = load_calibration(gcdp_stage_config(loaded))
    assert data.shape == (144, 20)
    np.testing.assert_allclose(data[:, 0], np.clip((matrix(TRAIN)[0] - 10.0) / 30.0, 0, 1))


@pytest.mark.parametrize("layout", ["rows", "column"])
def test_calibration_steps_past_the_files_records_are_refused(tmp_path, layout):
    """``calibration_steps`` above the calibration file's records only cycled the public
    file (no information) into an M x steps matrix: 10,000,000 steps of 20 Intel Lab nodes
    took 88 s and 9.5 GB before the refusal. At the records it is accepted."""
    if layout == "rows":
        text, records, old = ROWS, 144, "window = 12"
    else:
        text = (ROOT / "scenarios" / "occupancy-release.toml").read_text()
        records, old = 8143, "window = 30"
    path = tmp_path / "s.toml" if layout == "rows" else ROOT / "scenarios" / "x.toml"
    at = text.replace(old, f"{old}\ncalibration_steps = {records}", 1)
    assert parse_scenario(at, path).spec.gcdp.calibration_steps == records
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text.replace(old, f"{old}\ncalibration_steps = 10000000", 1), path)
    message = str(caught.value)
    assert "gcdp.calibration_steps" in message and str(records) in message
    assert "10000000" in message and "\n" not in message
