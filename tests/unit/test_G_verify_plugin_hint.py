"""``ldpfleet trace verify`` of a run whose plugin mechanism does not import here says
that verify itself needs it (helper G's user trial, round 4: the sentence said only
"put its folder on PYTHONPATH for the runner and its device processes")."""

from __future__ import annotations

import os
import subprocess
import sys

import ldpfleet

PLUGIN = """
import math
import numpy as np


class RR:
    def __init__(self, eps):
        self.eps = float(eps)
        self.p = 1 / (1 + math.exp(-self.eps))

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        bit = rng.random(x.shape) < x
        keep = rng.random(x.shape) < self.p
        return np.where(keep, bit, ~bit).astype(float)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y == 0.0) | (y == 1.0)

    def estimate_mean(self, y):
        return float(np.mean((np.asarray(y, float) - (1 - self.p)) / (2 * self.p - 1)))
"""

SCENARIO = """
[scenario]
name = "g-verify"
seed = 2
[fleet]
devices = 2
[stream]
steps = 8
eps = 2.0
w = 4
mechanism = "g_verify_rr:RR"
[source]
kind = "synthetic"
bounds = [0.0, 1.0]
"""


def test_verify_without_the_plugin_says_verify_needs_it(tmp_path, monkeypatch):
    folder = tmp_path / "plug"
    folder.mkdir()
    (folder / "g_verify_rr.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(folder))
    out = tmp_path / "run"
    results = ldpfleet.run(ldpfleet.parse_scenario(SCENARIO), broker="memory", out_dir=out)
    assert results["reports_lost"] == 0
    # a fresh interpreter without the plugin's folder (this one has imported it)
    code = (
        "import sys\n"
        "from ldpfleet.app.trace_verify import TraceError, verify_run\n"
        "try:\n"
        f"    verify_run({str(out)!r})\n"
        "except TraceError as error:\n"
        "    print(error)\n"
        "    sys.exit(3)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LDPFLEET_PLUGIN_PATH")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 3, done.stderr
    assert "module 'g_verify_rr' not found" in done.stdout, done.stdout
    assert "trace verify builds the run's mechanism" in done.stdout
