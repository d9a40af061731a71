"""A user's GC-DP release stopped mid-way, and a calibration file with gaps (helper V).

1. An aborted ``[gcdp]`` run (``run_timeout``, or Ctrl-C on the split runner's collector
   side) had published and charged some windows, yet its results.json had no ``gcdp`` entry
   and ledger.json no collector account: ``trace verify`` then reported
   ``no_ledger: no collector release account in the ledgers`` (measured: 9 releases in
   the trace of ``run_timeout = 6`` on a paced 9-node run, 16 on a Ctrl-C). The aborted
   counters (``runner.partial_collector_results``) now carry the stage's summary.
2. The calibration file's blanks are filled by ``source.missing`` like the release file's,
   but only the release file's were counted (results.json ``missing_values``).
"""

from __future__ import annotations

import csv
from types import SimpleNamespace

import numpy as np
import pytest
from ldpfleet.collector.gcdp_stage import GcdpStage
from ldpfleet.scenarios.plans import gcdp_stage_config
from ldpfleet.scenarios.runner import partial_collector_results
from ldpfleet.scenarios.schema import load_scenario
from ldpfleet.scenarios.stream_document import gcdp_ledger

from tests.conftest import ROOT

RELEASE = ROOT / "scenarios" / "occupancy-release.toml"


def _stage(loaded) -> tuple[GcdpStage, list[str]]:
    devices = loaded.device_ids()
    return GcdpStage(gcdp_stage_config(loaded), "r", devices, seed=6), devices


def test_an_aborted_run_states_the_windows_it_released_and_charged():
    loaded = load_scenario(RELEASE)
    stage, devices = _stage(loaded)
    window = gcdp_stage_config(loaded).window
    rng = np.random.default_rng(1)
    # every node delivers windows 0 and 1, node 0 also window 2: two windows complete
    rows = [(d, 0, 0, rng.random(2 * window).tolist(), 0.0) for d in devices]
    rows.append((devices[0], 1, 2 * window, rng.random(window).tolist(), 0.0))
    stage.on_persisted(rows)
    assert sorted(stage.releases) == [0, 1]
    collector = SimpleNamespace(
        machine=None, devices=devices, gcdp=stage, seconds_so_far=lambda: 1.0
    )
    partial = partial_collector_results(collector, loaded.stream_config("r"), "stopped")
    entry = partial["gcdp"]
    assert entry["windows_released"] == 2
    assert entry["windows_unreleased"][:2] == [2, 3]
    ledger = gcdp_ledger(stage, entry)
    account = ledger["accounts"]["gcdp_release"]
    assert account["charges"] == 2 and account["total_spent"] == 2 * entry["eps_rel"]
    assert ledger["per_record_loss"] == entry["eps_rel"]


def test_a_run_without_gcdp_has_no_gcdp_entry_when_aborted():
    loaded = load_scenario(ROOT / "scenarios" / "quickstart.toml")
    collector = SimpleNamespace(machine=None, devices=["d0"], gcdp=None, seconds_so_far=lambda: 0)
    partial = partial_collector_results(collector, loaded.stream_config("r"), "stopped")
    assert "gcdp" not in partial and partial["reports_lost"] == partial["reports_expected"]


def _calibration_with_gaps(tmp_path, blanks: dict[int, int]):
    """datatraining.txt with the given (row -> column index) cells blanked."""
    source = ROOT / "data" / "uci-occupancy" / "datatraining.txt"
    rows = list(csv.reader(source.read_text().splitlines()))
    for row, column in blanks.items():
        rows[row][column] = ""
    path = tmp_path / "calibration.csv"
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    return path, rows[0]


@pytest.mark.parametrize("missing", ["previous", "interpolate"])
def test_calibration_gaps_are_counted_in_the_gcdp_entry(tmp_path, missing):
    text = RELEASE.read_text()
    first = (ROOT / "data" / "uci-occupancy" / "datatraining.txt").read_text().splitlines()[0]
    header = next(csv.reader([first]))
    # a file header has no name for its first (row number) column
    light, co2 = header.index("Light") + 1, header.index("CO2") + 1
    path, _ = _calibration_with_gaps(tmp_path, {5: light, 6: light, 900: co2})
    text = text.replace('"data/uci-occupancy/datatraining.txt"', repr(str(path)).replace("'", '"'))
    text = text.replace("stride = 200", f'stride = 200\nmissing = "{missing}"')
    scenario = tmp_path / "s.toml"
    scenario.write_text(text)
    loaded = load_scenario(scenario)
    stage, _ = _stage(loaded)
    entry = stage.summary()["calibration_missing"]
    assert entry["missing"] == missing and entry["path"] == str(path)
    assert entry["values_filled"] == 3 and entry["steps_dropped"] == 0
    assert entry["by_column"] == {"Light": 2, "CO2": 1}
    assert "3 missing values of the calibration file" in entry["note"]


def test_a_calibration_file_without_gaps_says_so():
    stage, _ = _stage(load_scenario(RELEASE))
    entry = stage.summary()["calibration_missing"]
    assert entry["values_filled"] == 0 and entry["steps_dropped"] == 0
    assert "note" not in entry and entry["steps"] == 8143
