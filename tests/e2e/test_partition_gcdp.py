"""A GC-DP release with collector partitions (issue 23; collector/gcdp_stage.py).

With ``[collector] partitions = P > 1`` each worker files its devices' persisted readings
into windows and sends each complete window's node means to the coordinator
(``GcdpWindowMeans``); the coordinator holds the calibration, the ledger and the releaser
and releases every window once every node's mean is in. For the same seed P = 1, 2 and 4
give the same results (the release entry and its accuracy, per-device values), the same
released values, the same ledgers (the collector's included) and the same trace contents.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from ldpfleet.scenarios.merge import merge_run
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import ROOT
from tests.e2e.test_partitions import (
    SAME,
    assert_same_rows,
    ledger_without_run,
    run_partition_counts,
    sides_over_memory,
    trace_files,
    trace_losses,
    trace_view,
    with_partitions,
)

STEPS, WINDOW = 600, 30
RELEASE = (
    (ROOT / "scenarios" / "occupancy-release.toml")
    .read_text()
    .replace("steps = 1800", f"steps = {STEPS}")
    # nothing is lost here, so a retransmission (5 s by default) is only a late ack, and a
    # starved run counts duplicates the reference run has not (reports_duplicate is in
    # SAME): as in test_partitions.STREAM
    .replace("[stream]\n", "[stream]\nretransmit_after = 600\n", 1)
)


def gcdp_entry(results: dict) -> dict:
    """The release's results.json entry without its timing."""
    return {k: v for k, v in results["gcdp"].items() if k != "calibration_seconds"}


def released(out: Path, run: str) -> list[bytes]:
    """The gcdp_release payloads of every trace file, run id removed, in window order."""
    found = []
    for path in trace_files(out):
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            found += [
                bytes(payload).replace(run.encode(), b"RUN")
                for (payload,) in db.execute(
                    "SELECT payload FROM messages WHERE kind = 'gcdp_release'"
                )
            ]
    return sorted(set(found), key=lambda p: json.loads(p)["window"])


def check_release(results: dict) -> None:
    assert results["reports_lost"] == 0 and results["devices_complete"] == 20
    gcdp = results["gcdp"]
    assert gcdp["windows_released"] == gcdp["windows_expected"] == STEPS // WINDOW
    assert results["stages"]["gcdp"]["status"] == "complete"


def test_every_partition_has_devices_and_so_sends_means():
    """The premise of the comparisons below: for P = 2 and 4 every worker serves devices
    (each sends its share of every window's means)."""
    from ldpfleet.scenarios.coordinator import partition_devices

    scenario = parse_scenario(with_partitions(RELEASE, 4), ROOT / "scenarios" / "x.toml")
    for count in (2, 4):
        shares = [partition_devices(scenario, p, count) for p in range(count)]
        assert all(shares) and sorted(d for s in shares for d in s) == scenario.device_ids()


def test_coordinator_releases_from_the_workers_means_over_memory_with_the_acl(tmp_path):
    coordinator, transport = sides_over_memory(tmp_path, text=RELEASE)
    assert transport.denied == [] and coordinator["complete"]
    assert coordinator["gcdp_means_refused"] == 0
    merge_run(tmp_path / "c", [tmp_path / "w0", tmp_path / "f", tmp_path / "w1"], tmp_path / "o")
    merged = json.loads((tmp_path / "o" / "results.json").read_text())
    reference = asyncio.run(
        run_scenario(parse_scenario(RELEASE), broker="memory", out_dir=tmp_path / "ref")
    )
    check_release(reference)
    check_release(merged)
    assert gcdp_entry(merged) == gcdp_entry(reference)
    for key in SAME:
        assert merged[key] == reference[key], key
    mine = json.loads((tmp_path / "o" / "ledger.json").read_text())
    theirs = json.loads((tmp_path / "ref" / "ledger.json").read_text())
    mine.pop("run", None), theirs.pop("run", None)
    assert mine == theirs and mine["collector"]["accounts"]["gcdp_release"]["charges"] == 20
    # the workers released nothing: the coordinator did
    for p in (0, 1):
        worker = json.loads((tmp_path / f"w{p}" / "results.json").read_text())
        assert worker["gcdp"] is None and worker["collector_ledger"] is None


def check_identical_across_partitions(broker: str, tmp_path: Path) -> None:
    outs, results = run_partition_counts("gcdp", RELEASE, broker, tmp_path)
    for count in (1, 2, 4):
        check_release(results[count])
    reference_rows, reference_acks = trace_view(outs[1], results[1]["run"])
    reference_releases = released(outs[1], results[1]["run"])
    assert len(reference_releases) == STEPS // WINDOW
    with np.load(outs[1] / "collector" / "collector-side.npz") as data:
        reference_values = {k: data[k] for k in data.files if k.startswith("gcdp/")}
    for count in (2, 4):
        mine, theirs = results[count], results[1]
        assert len(mine["side_processes"]["partitions"]) == count
        assert gcdp_entry(mine) == gcdp_entry(theirs), count
        for key in SAME:
            assert mine[key] == theirs[key], (count, key)
        assert ledger_without_run(outs[count]) == ledger_without_run(outs[1])
        rows, acks = trace_view(outs[count], mine["run"])
        assert_same_rows(rows, reference_rows, (count, trace_losses(mine), trace_losses(theirs)))
        assert acks == reference_acks, count
        assert released(outs[count], mine["run"]) == reference_releases, count
        with np.load(outs[count] / "collector" / "collector-side.npz") as data:
            values = {k: data[k] for k in data.files if k.startswith("gcdp/")}
        assert values.keys() == reference_values.keys()
        for key, value in values.items():
            np.testing.assert_array_equal(value, reference_values[key])
        # the releases are the coordinator's: in its trace, none in a worker's
        with sqlite3.connect(outs[count] / "trace-p0.sqlite") as db:
            kinds = {k for (k,) in db.execute("SELECT DISTINCT kind FROM messages")}
        assert "gcdp_release" not in kinds and "sw_report" in kinds


@pytest.mark.slow
@pytest.mark.embedded
def test_a_gcdp_release_is_identical_for_one_two_and_four_partitions(tmp_path):
    check_identical_across_partitions("embedded", tmp_path)


@pytest.mark.slow
@pytest.mark.mosquitto
def test_a_gcdp_release_is_identical_on_mosquitto(mosquitto_url, tmp_path):
    check_identical_across_partitions(mosquitto_url, tmp_path)
