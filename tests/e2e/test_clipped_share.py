"""Simulator-only ground truth: the share of raw readings the FIXED public bounds clip
(scenarios.clipping), with a warning when bounds in the wrong unit clip most of them."""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from ldpfleet.app.cli import app
from ldpfleet.devices.fleet import ClipTally, clip_tally
from ldpfleet.scenarios.clipping import WARN_SHARE, clipping_entry, clipping_warning
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario
from typer.testing import CliRunner

from tests.conftest import ROOT
from tests.e2e.test_bulk_scenario import BULK
from tests.e2e.test_report import headline

# readings 20 + 5 sin(.) + 0.5 N(0, 1): a temperature in °C
STREAM = """
[scenario]
name = "clip"
seed = 3
[fleet]
devices = 6
[stream]
steps = 20
eps = 2.0
w = 5
mechanism = "sw"
batch_steps = 5
[source]
kind = "synthetic"
shape = "sine"
period = 10
amplitude = 5.0
offset = 20.0
noise = 0.5
bounds = BOUNDS
[broker]
url = "memory"
"""

COLUMNS = f"""
[scenario]
name = "clip-columns"
seed = 3
[fleet]
devices = 4
[stream]
steps = 20
eps = 2.0
w = 5
mechanism = "sw"
batch_steps = 5
[source]
kind = "csv"
path = "{ROOT / "data" / "uci-occupancy" / "datatest.txt"}"
columns = ["Temperature", "CO2"]
column_bounds = [[18.0, 26.0], [0.0, 100.0]]
[broker]
url = "memory"
"""


def run_cli(text: str, tmp_path) -> tuple[str, dict]:
    path = tmp_path / "clip.toml"
    path.write_text(text)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output, json.loads((out / "results.json").read_text())


def test_bounds_in_the_wrong_unit_clip_every_reading_and_the_run_says_so(tmp_path):
    output, results = run_cli(STREAM.replace("BOUNDS", "[0.0, 1.0]"), tmp_path)
    # every reading is 20 +- 5 (+- 0.5 noise, seed 3): all above 1
    assert results["clipped_share"] == 1.0
    assert {e["clipped_share"] for e in results["per_device"].values()} == {1.0}
    (group,) = results["clipping"]["by_bounds"]
    low, high = group["raw_range"]
    assert 12 < low < high < 28 and group["field"] == "source.bounds"
    sentence = (
        f"source.bounds [0, 1] clipped 100 % of the readings (they range {low:.4g} .. "
        f"{high:.4g}): are the bounds in the data's unit?"
    )
    assert results["warnings"] == [sentence]
    assert f"warning: {sentence}" in " ".join(output.split())
    # the run's report says it in its headline (app/report.py)
    clipped = headline((tmp_path / "out" / "report.html").read_text())["clipped"]
    assert clipped.startswith("100.0 % of the readings were outside the public bounds")
    assert "are the bounds in the data&#x27;s unit?" in clipped


def test_bounds_around_the_data_clip_nothing_and_say_nothing(tmp_path):
    output, results = run_cli(STREAM.replace("BOUNDS", "[5.0, 35.0]"), tmp_path)
    assert results["clipped_share"] == 0.0 and results["clipping"]["readings_clipped"] == 0
    assert {e["clipped_share"] for e in results["per_device"].values()} == {0.0}
    assert results["warnings"] == [] and "warning" not in output
    clipped = headline((tmp_path / "out" / "report.html").read_text())["clipped"]
    assert clipped == "0.0 % of the readings were outside the public bounds (simulator-only truth)"


def test_one_channel_in_the_wrong_unit_is_named_by_its_column_bounds(tmp_path):
    """CO2 (ppm, about 400 .. 1,200 in these rows) against [0, 100]: that channel's devices
    clip everything, the temperature channel nothing; the warning names column_bounds[1]."""
    results = asyncio.run(run_scenario(parse_scenario(COLUMNS), out_dir=tmp_path / "out"))
    shares = {d: e["clipped_share"] for d, e in results["per_device"].items()}
    assert shares == {"d0000": 0.0, "d0001": 1.0, "d0002": 0.0, "d0003": 1.0}
    assert results["clipped_share"] == 0.5
    fields = [g["field"] for g in results["clipping"]["by_bounds"]]
    assert fields == ["source.column_bounds[0]", "source.column_bounds[1]"]
    (sentence,) = results["warnings"]
    assert sentence.startswith("source.column_bounds[1] [0, 100] clipped 100 % of the readings")


def test_a_bulk_run_records_the_share_over_every_gateway(tmp_path):
    """Bulk gateways build the readings themselves: they count what [lo, hi] clipped."""
    # amplitude 1 sine + 0.1 noise against [2, 3]: every reading is below 2
    text = BULK.replace("bounds = [-1.5, 1.5]", "bounds = [2.0, 3.0]")
    text = (
        text.replace('reconstruct = "cpr"', 'reconstruct = "none"') + '[broker]\nurl = "memory"\n'
    )
    output, results = run_cli(text, tmp_path)
    assert results["kind"] == "bulk-stream"
    assert results["clipped_share"] == 1.0
    assert results["clipping"]["readings"] == 150 * 30
    (sentence,) = results["warnings"]
    assert sentence.startswith("source.bounds [2, 3] clipped 100 % of the readings")
    assert "warning: source.bounds [2, 3]" in output


@pytest.mark.parametrize(("clipped", "warns"), [(5, True), (4, False)])
def test_the_warning_starts_at_half_of_the_readings(clipped, warns):
    tally = ClipTally((0.0, 1.0), "source.bounds", 10, clipped, -3.0, 0.5)
    assert WARN_SHARE == 0.5 and (clipping_warning(tally) is not None) == warns


def test_tallies_with_the_same_bounds_merge_and_empty_ones_stay_valid_json():
    a = clip_tally([0.5, 2.0, 3.0], (0.0, 1.0), "source.bounds")
    b = clip_tally([-1.0, 0.2], (0.0, 1.0), "source.bounds")
    assert (a.clipped, a.low, a.high) == (2, 0.5, 3.0)
    entry, warnings = clipping_entry([a, b])
    assert entry["readings"] == 5 and entry["readings_clipped"] == 3
    assert entry["by_bounds"] == [
        {"field": "source.bounds", "bounds": [0.0, 1.0], "clipped_share": 0.6,
         "raw_range": [-1.0, 3.0]}
    ]  # fmt: skip
    assert warnings == [clipping_warning(ClipTally((0.0, 1.0), "source.bounds", 5, 3, -1, 3))]
    empty, none = clipping_entry([ClipTally((0.0, 1.0), "source.bounds", 0, 0, math.nan, math.nan)])
    assert empty["clipped_share"] == 0.0 and empty["by_bounds"][0]["raw_range"] is None
    assert none == [] and "NaN" not in json.dumps(empty)
