"""``ldpfleet run`` on ``-b memory`` with a user's CSV with gaps (helper M): refused by
default (exit 2, one line naming the file, line, column, value and ``source.missing``),
run to the end with ``missing = "interpolate"``, each device replaying the filled series;
and ``ldpfleet bench gcdp`` on gzip / xz Occupancy files gives the plain files' table."""

from __future__ import annotations

import gzip
import json
import lzma
from pathlib import Path

import numpy as np
import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]

SCENARIO = """
[scenario]
name = "gappy"
seed = 3
[fleet]
devices = 2
[stream]
steps = 12
eps = 4.0
w = 4
[source]
kind = "csv"
path = "{path}"
column = "temp"
bounds = [0.0, 40.0]
{extra}
"""


def _gappy(tmp_path) -> Path:
    rows = ["time,temp,hum"]
    for k in range(24):
        temp = "" if k in (0, 5, 6) else "NA" if k == 23 else f"{10 + k:.1f}"
        rows.append(f"2024-01-01T{k:02d}:00,{temp},{50 + k}")
    path = tmp_path / "gappy.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _run(tmp_path, extra: str, name: str, broker: str = "memory"):
    scenario = tmp_path / f"{name}.toml"
    scenario.write_text(SCENARIO.format(path=_gappy(tmp_path), extra=extra))
    out = tmp_path / name
    result = CliRunner().invoke(app, ["run", str(scenario), "-o", str(out), "-b", broker])
    return result, out


# what results.json says of the devices' local fill: 3 gaps in temp (lines 2, 7, 8) and the
# NA of the last line, 24 steps, none dropped
FILLED = {
    "missing": "interpolate",
    "values_filled": 4,
    "steps_dropped": 0,
    "steps": 24,
    "by_column": {"temp": 4},
}


def test_a_gappy_csv_is_refused_by_default_naming_the_setting(tmp_path):
    result, out = _run(tmp_path, "", "refused")
    assert result.exit_code == 2, result.output
    message = result.output
    for words in ("gappy.csv", "line 2", "'temp'", "''", "source.missing", "interpolate"):
        assert words in message, message
    assert not out.exists()


def test_a_gappy_csv_runs_with_missing_interpolate(tmp_path):
    result, out = _run(tmp_path, 'missing = "interpolate"', "filled")
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["scenario"]["spec"]["source"]["missing"] == "interpolate"
    assert results["devices_unfinished"] == 0
    assert results["missing_values"] == FILLED
    assert any("4 missing values" in w for w in results["warnings"]), results["warnings"]
    # the true means are those of the filled series: 10 + k everywhere (a leading gap takes
    # the first reading 11, the gaps at 5, 6 are linear, the last gap takes 32)
    filled = np.array([10.0 + k for k in range(24)])
    filled[0], filled[23] = 11.0, 32.0
    for index, device in enumerate(sorted(results["per_device"])):
        start = index * 24 // 2
        expected = filled[(start + np.arange(12)) % 24].mean()
        assert abs(results["per_device"][device]["true_mean"] - expected) < 1e-9, device


@pytest.mark.slow  # the collector and the fleet as processes of the embedded broker: ~5 s
def test_the_fill_is_reported_on_the_embedded_broker_too(tmp_path):
    """The split run (scenarios/sides.py) writes the same ``missing_values`` entry."""
    result, out = _run(tmp_path, 'missing = "interpolate"', "embedded", "embedded")
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["missing_values"] == FILLED


def test_bench_gcdp_reads_compressed_occupancy_files(tmp_path):
    data = ROOT / "data" / "uci-occupancy"
    train = tmp_path / "train.txt.gz"
    train.write_bytes(gzip.compress((data / "datatraining.txt").read_bytes()))
    test = tmp_path / "test.txt.xz"
    test.write_bytes(lzma.compress((data / "datatest.txt").read_bytes()))
    tables = []
    for pair in ((train, test), (data / "datatraining.txt", data / "datatest.txt")):
        args = ["bench", "gcdp", "--train-file", str(pair[0]), "--test-file", str(pair[1])]
        result = CliRunner().invoke(
            app, [*args, "--draws", "1", "--eps", "1", "--method", "Lap-DP", "--json"]
        )
        assert result.exit_code == 0, result.output
        table = json.loads(result.stdout)
        for key in ("runtime_s", "peak_mem_mb", "protocol"):
            table.pop(key, None)
        tables.append(table)
    assert tables[0] == tables[1]
