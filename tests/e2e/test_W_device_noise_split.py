"""Helper W: ``ldpfleet run --device-noise os`` on a real broker, where the devices run in
other processes than the one that parsed the option (the collector side, fleet shards,
bulk gateway shards: scenarios.split_run, scenarios.bulk_run). Each child must be told the
choice (``--device-noise``): a child that re-read only the scenario file drew seeded
noise. Two "os" runs of one seed then release the same data with other noise, the merged
results.json says "os" (the collector side's own says it cannot tell), and the claims drop
the trust in the seed. Fails before the option existed (exit 2: no such option).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import ldpfleet
from tests.e2e.test_split_run import CADR, CLI, SAFETY, STREAM, with_shards
from tests.tiny_scenarios import stream_text

BULK = stream_text("w-bulk", devices=6, steps=20, w=5, fleet_extra='connection = "bulk"')


def run_os(text: str, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    out = tmp_path / name
    done = subprocess.run(
        [*CLI, "run", str(path), "--broker", "embedded", "--out", str(out), "--device-noise", "os"],
        capture_output=True,
        text=True,
        timeout=SAFETY,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.mark.embedded
@pytest.mark.slow
@pytest.mark.parametrize("text", [with_shards(STREAM, 2), BULK.replace(
    'connection = "bulk"', 'connection = "bulk"\nshards = 2')], ids=["stream", "bulk"])  # fmt: skip
def test_a_stream_runs_child_processes_draw_their_own_noise(tmp_path, text):
    outs = [run_os(text, tmp_path, f"run{k}") for k in range(2)]
    results = [ldpfleet.read_results(out) for out in outs]
    reports = [ldpfleet.read_reports(out) for out in outs]
    devices = sorted(reports[0])
    assert devices == sorted(reports[1]) and len(devices) >= 6
    # SW reports are continuous: two independent streams never agree as a whole
    assert not any(np.array_equal(reports[0][d], reports[1][d]) for d in devices)
    for r in results:
        assert r["device_noise"] == "os" and r["privacy"]["device_noise"] == "os"
        assert "seed" not in r["privacy"]["claim"]
    if "per_device" in results[0]:  # the same data (seeded) in both runs
        for d in devices:
            assert (
                results[0]["per_device"][d]["true_mean"] == results[1]["per_device"][d]["true_mean"]
            )
        for shard in sorted(outs[0].glob("fleet-*-of-2")):  # the shards' own record
            assert json.loads((shard / "outcomes.json").read_text())["device_noise"] == "os"
        collector = json.loads((outs[0] / "collector" / "results.json").read_text())
        assert "device_noise" not in collector or collector["device_noise"] is None
    else:
        truth = [r["accuracy"]["fleet_average"]["true"] for r in results]
        assert truth[0] == truth[1]


@pytest.mark.embedded
@pytest.mark.slow
def test_a_cadr_runs_fleet_processes_draw_their_own_noise(tmp_path):
    outs = [run_os(CADR, tmp_path, f"cadr{k}") for k in range(2)]
    results = [ldpfleet.read_results(out) for out in outs]
    assert results[0]["released"] != results[1]["released"]
    assert results[0]["per_device"].keys() == results[1]["per_device"].keys()
    degrees = [{d: e["degree"] for d, e in r["per_device"].items()} for r in results]
    assert degrees[0] == degrees[1]  # the same graph
    for r in results:
        assert r["device_noise"] == "os"
        row = r["privacy_claim"]["parts"][-1]
        assert row["covered"] == "yes" and "own OS entropy" in row["part"]
        assert "without the run's seed" not in r["privacy_claim"]["statement"]
    collector = json.loads((outs[0] / "collector" / "results.json").read_text())
    assert collector["device_noise"] is None  # the collector side cannot tell
    assert collector["privacy_claim"]["parts"][-1]["covered"] == "trust"
