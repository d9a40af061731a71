"""A plugin whose ``perturb`` fails mid-stream on a PACED device (helper C, BYO pass 2).

Unpaced, such a device fails before it sends anything and the run ends at once with exit
status 1 (docs/mechanisms.md). Paced (``stream.step_seconds > 0``), the reading is fed by
a background task (``devices/agent.py``, ``DeviceAgent.run``: ``background(feeder)``)
whose exception is only raised when the device's message loop ends; the loop waits for
collector messages that never come (the collector waits for the failed device's reports),
so the device, and the run, sat until ``collector.stage_timeout`` (600 s by default):
measured from the installed wheel, ``ldpfleet run`` on the memory broker with 6 devices,
60 steps of 0.01 s and a plugin failing on 2 devices was still running after 300 s; with
``stage_timeout = 15`` it ended after 18 s, saying the stage closed at its deadline.

Runs on virtual time (tests/virtual_time.py): the outcome does not depend on the machine.
"""

from __future__ import annotations

import sys

import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.e2e.test_timeouts import on_virtual_time

PLUGIN = '''
import math
import numpy as np

class FailsLater:
    """Warner RR on a bit; perturb raises from its 12th call on (a device's 12th reading
    when paced; the load-time check calls it 5 times)."""

    def __init__(self, eps):
        self.eps = float(eps)
        self.p = 1.0 / (1.0 + math.exp(-self.eps))
        self.calls = 0

    def perturb(self, x, rng):
        self.calls += 1
        if self.calls >= 12:
            raise RuntimeError("sensor format not supported")
        bit = rng.random(np.shape(x)) < x
        keep = rng.random(np.shape(x)) < self.p
        return np.where(keep, bit, ~bit).astype(float)

    def in_domain(self, y):
        y = np.asarray(y)
        return (y == 0.0) | (y == 1.0)

    def estimate_mean(self, y):
        return float((np.mean(y) - (1 - self.p)) / (2 * self.p - 1)) if np.size(y) else 0.5
'''

SCENARIO = """
[scenario]
name = "byo2-paced"
seed = 4
[fleet]
devices = 3
[stream]
steps = 20
eps = 2.0
w = 4
step_seconds = 0.1
mechanism = "byo2_paced_plugin:FailsLater"
[collector]
stage_timeout = 500.0
[source]
kind = "synthetic"
bounds = [0.0, 1.0]
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "byo2_paced_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(folder))
    yield
    sys.modules.pop("byo2_paced_plugin", None)


def test_a_paced_device_whose_plugin_fails_ends_the_run_without_waiting_for_the_deadline(
    plugin, tmp_path
):
    loaded = parse_scenario(SCENARIO)
    results, seconds = on_virtual_time(
        run_scenario(loaded, broker=MemoryTransport(), out_dir=tmp_path / "run", run_id="p1")
    )
    errors = results["fleet"]["device_errors"]
    assert len(errors) == 3 and all("sensor format not supported" in e for e in errors.values())
    # 20 readings of 0.1 s: the devices fail at their 12th reading, about 1.1 s in
    assert seconds < 30, f"the run took {seconds:.0f} virtual seconds (stage_timeout 500)"
