"""Tiers 2 and 3: ``[gcdp]`` over Intel Lab's row-per-mote file (``layout = "rows"``, helper
N): 20 motes released on the in-memory transport, embedded amqtt, Mosquitto and two
collector partitions, bit-identical for one seed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ldpfleet.collector.gcdp import gc_dp
from ldpfleet.collector.gcdp_stage import release_rng
from ldpfleet.collector.store import ReportStore
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.unit.test_gcdp_fleet_user_layouts import BOUNDS, ROWS, TEST, matrix

DEVICES, WINDOW, WINDOWS = 20, 12, 8  # 96 half-hour steps of the test file


def scenario(tmp_path, extra: str = ""):
    return parse_scenario(ROWS.replace("[gcdp]", f"{extra}\n[gcdp]", 1), tmp_path / "s.toml")


def check_rows_run(results: dict, out, seed: int) -> None:
    """Every window once; the release is gc_dp on the stored means of row i = node i."""
    assert results["reports_lost"] == 0 and results["devices_complete"] == DEVICES
    gcdp = results["gcdp"]
    assert gcdp["windows_released"] == gcdp["windows_expected"] == WINDOWS
    assert gcdp["public_baseline"]["nodes_noisier_than_baseline"] >= 0
    ledger = json.loads((out / "ledger.json").read_text())
    assert ledger["collector"]["per_record_loss"] == 1.0
    store = ReportStore(out / "collector.sqlite")
    try:
        stored = store.device_values()
    finally:
        store.close()
    devices = gcdp["nodes"]
    rows = matrix(TEST)
    for i, device in enumerate(devices):  # device i streamed row i of the file, normalised
        expected = np.clip((rows[i] - BOUNDS[0]) / (BOUNDS[1] - BOUNDS[0]), 0.0, 1.0)
        np.testing.assert_allclose(np.asarray(stored[device], dtype=float), expected)
    rng = release_rng(seed)
    for k in range(WINDOWS):
        means = np.array(
            [np.mean(stored[d][k * WINDOW : (k + 1) * WINDOW]) for d in devices], dtype=float
        )
        direct = gc_dp(
            means,
            bounds=gcdp["bounds"],
            scales=gcdp["scales"],
            utility=gcdp["utility"],
            exposure_norm=gcdp["exposure_norm"],
            eps_rel=gcdp["eps_rel"],
            low=0.0,
            high=1.0,
            rng=rng,
        )
        np.testing.assert_array_equal(np.asarray(gcdp["released"][str(k)]), direct)


async def test_intel_rows_in_memory_and_partitioned(tmp_path):
    memory = await run_scenario(scenario(tmp_path), broker="memory", out_dir=tmp_path / "m")
    check_rows_run(memory, tmp_path / "m", seed=6)
    parts = scenario(tmp_path, "[collector]\npartitions = 2\n")
    split = await run_scenario(parts, broker="memory", out_dir=tmp_path / "p")
    assert split["gcdp"]["released"] == memory["gcdp"]["released"]


@pytest.mark.embedded
async def test_intel_rows_on_embedded_broker(tmp_path):
    memory = await run_scenario(scenario(tmp_path), broker="memory", out_dir=tmp_path / "m")
    embedded = await run_scenario(scenario(tmp_path), broker="embedded", out_dir=tmp_path / "e")
    check_rows_run(embedded, tmp_path / "e", seed=6)
    assert embedded["gcdp"]["released"] == memory["gcdp"]["released"]


@pytest.mark.mosquitto
async def test_intel_rows_on_mosquitto(mosquitto_url, tmp_path):
    memory = await run_scenario(scenario(tmp_path), broker="memory", out_dir=tmp_path / "m")
    mosquitto = await run_scenario(scenario(tmp_path), broker=mosquitto_url, out_dir=tmp_path / "q")
    check_rows_run(mosquitto, tmp_path / "q", seed=6)
    assert mosquitto["gcdp"]["released"] == memory["gcdp"]["released"]


async def test_accuracy_is_in_normalised_units_for_a_one_bounds_source(tmp_path):
    results = await run_scenario(scenario(tmp_path), broker="memory", out_dir=tmp_path / "m")
    accuracy = results["gcdp"]["accuracy"]
    truths = np.array(list(results["gcdp"]["true_means"].values()))
    assert truths.min() >= 0.0 and truths.max() <= 1.0  # [0, 1] units, as stated
    assert accuracy["mae_clipped"] <= 1.0


async def test_the_free_baseline_is_scored_like_the_release(tmp_path):
    """``gcdp.accuracy.public_baseline_mae``: each node's public calibration mean, every
    released window, against the same true means the release's MAE uses."""
    results = await run_scenario(scenario(tmp_path), broker="memory", out_dir=tmp_path / "b")
    gcdp = results["gcdp"]
    centre = np.array(gcdp["public_baseline"]["calibration_mean"])
    truths = np.array([gcdp["true_means"][k] for k in gcdp["released"]])
    expected = float(np.abs(truths - centre).mean())
    assert gcdp["accuracy"]["public_baseline_mae"] == pytest.approx(expected, rel=1e-12)
    assert 0.0 < expected < 1.0
