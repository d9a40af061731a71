"""The audit of a user mechanism calls ``perturb`` as a device does, on small batches
(helper B1, 2026-12-06): sampled in one call on n copies of an input, a plugin drawing its
noise once per call, or with less noise for a device's few readings, audited inconclusive
(eps_lb -0.00 and 0.92 at a claim of 1, gamma 0.05) while a fleet running it leaked.

Statistics: fixed seed 0, so each outcome is deterministic; a correct mechanism is reported
as a violation with probability <= gamma = 1e-6 per audit (the battery's selection /
evaluation split). SharedNoise separates exactly (the difference of a batch's two reports
is the readings' difference: 0 of 3,000 runs of one world on the other's side), so its
bound is the largest 3,000 + 3,000 runs can certify at 1e-6 (about 5.3, as LowBitsLeak in
test_plugins_heldout.py); SmallBatchBug's true loss per report is 4 eps (measured 3.4 at
gamma 0.05): a bound above 1.2 needs the Clopper-Pearson bounds to move by many standard
errors.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ldpfleet.collector.audit.battery import run_audit

HERE = Path(__file__).resolve().parents[1] / "plugins_b1"
GAMMA = 1e-6


@pytest.fixture(autouse=True)
def plugin_path(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))


@pytest.mark.parametrize("cls", ["SharedNoise", "SmallBatchBug"])
def test_a_leak_that_depends_on_the_devices_batches_is_a_violation(cls):
    result = run_audit(f"batch_bugs:{cls}", 1.0, gamma=GAMMA, seed=0)
    assert result.verdict == "violation" and result.eps_lb > 1.2, result


def test_the_same_plugin_drawing_per_report_passes():
    result = run_audit("batch_bugs:Laplace01", 1.0, gamma=GAMMA, seed=0)
    assert result.verdict == "inconclusive" and result.eps_lb <= 1.0, result


def test_shared_noise_is_caught_by_the_difference_of_a_batch():
    result = run_audit("batch_bugs:SharedNoise", 1.0, gamma=GAMMA, seed=0)
    assert result.witness in ("reports equal", "difference of the reports"), result
