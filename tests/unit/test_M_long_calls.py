"""A user mechanism with less noise for long calls (helper M).

A device of an unpaced run privatises its whole stream in ONE perturb call
(`StreamReporter.add_readings` on every reading, devices/agent.py): a 30-step run called
perturb on 30 readings. The audit of a user mechanism called perturb on batches of 8
readings only, so `mbad:LessNoiseForLongBatches` (a quarter of the Laplace scale above 8
readings) audited inconclusive (eps_LB 0.859 at a claim of 1, seed 0, gamma 0.05) while
every unpaced fleet running it reported at 4 eps. Half of each world's runs now come from
calls on 1,024 readings (`battery.LONG_CALL_PAIRS`).

Statistics: fixed seed 0, gamma = 1e-6; the split bounds a false violation of the honest
control by 1e-6. Measured eps_LB of the leak at gamma 1e-6, seed 0: 1.597 (deterministic
at the fixed seed; its true log-ratio on the long-call half is 4, so the asserted 1.2 is a
margin, not a tuned cut).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ldpfleet.collector.audit import battery
from ldpfleet.collector.audit.battery import run_audit

PLUGINS = Path(__file__).resolve().parents[2] / "scripts" / "M_plugins"
GAMMA = 1e-6


@pytest.fixture(autouse=True)
def plugin_path(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))


def test_less_noise_for_long_calls_is_a_violation():
    result = run_audit("mbad:LessNoiseForLongBatches", 1.0, gamma=GAMMA, seed=0)
    assert result.verdict == "violation" and result.eps_lb > 1.2, result


def test_the_honest_parent_stays_inconclusive():
    result = run_audit("mgood:ClippedGridLaplace", 1.0, gamma=GAMMA, seed=0)
    assert result.verdict == "inconclusive" and result.eps_lb <= 1.0, result


def test_half_the_runs_come_from_long_calls():
    sizes = []

    class Recorder:
        def __init__(self, eps):
            self.eps = eps

        def perturb(self, x, rng):
            sizes.append(len(x))
            return x + rng.integers(0, 2, size=x.shape)

        def in_domain(self, y):
            return np.isfinite(np.asarray(y, dtype=float))

        def estimate_mean(self, y):
            return 0.5

    import sys
    import types

    module = types.ModuleType("m_recorder_plugin")
    module.Recorder = Recorder
    sys.modules["m_recorder_plugin"] = module
    try:
        spec = battery.contract_spec("m_recorder_plugin:Recorder", 1.0, device_batches=True)
        sizes.clear()
        runs = spec.canary.sample_dprime(np.random.default_rng(0), 1100)  # input 1
    finally:
        del sys.modules["m_recorder_plugin"]
    assert runs.shape == (1100, 2)
    assert sizes.count(2 * battery.LONG_CALL_PAIRS) == 2  # 550 runs from 2 long calls
    # 413 runs from 104 small calls; 137 (an eighth) from one-reading calls (helper D, round 3)
    assert sizes.count(2 * battery.DEVICE_BATCH_PAIRS) == 104
    assert sizes.count(1) == 1100 // battery.SINGLE_CALL_SHARE == 137
