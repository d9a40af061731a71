"""Two bulk runs of one seed on the embedded broker (separate collector and gateway
processes, so reports may arrive in another order) give the same ``fleet_mean_mae`` and
the same per-step sums, bit for bit (protocol/bulk.py, "Fleet-mean sums")."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

from tests.e2e.test_bulk_scenario import BULK


@pytest.mark.slow  # two runs with child processes on the embedded broker: ~20 s
def test_two_runs_of_one_seed_give_the_same_fleet_mean_bits(tmp_path):
    path = tmp_path / "bulk.toml"
    path.write_text(BULK.replace('reconstruct = "cpr"', 'reconstruct = "none"'))
    seen = []
    for k in range(2):
        out = tmp_path / f"out{k}"
        result = CliRunner().invoke(
            app, ["run", str(path), "--broker", "embedded", "--out", str(out)],
            catch_exceptions=False,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        results = json.loads((out / "results.json").read_text())
        assert results["reports_received"] == 150 * 10
        arrays = []
        for p in (0, 1):
            with np.load(out / f"p{p}" / "estimates.npz") as data:
                arrays += [data["report_sum"].tobytes(), data["count"].tobytes()]
        seen.append((repr(results["fleet_mean_mae"]), arrays))
    assert seen[0] == seen[1]
    assert 0 < float(seen[0][0]) < 1
