"""The audit of a user mechanism draws its first sample twice from generators seeded alike
(helper M). `mbad:RareGlobal` (honest grid Laplace, plus global-RNG noise in 1 call of 50)
passed the load-time check (two calls), audited inconclusive (0.851) and ran in fleets
whose results could not be reproduced from the seed; `mbad:DecayingNoise` and
`mbad:PrevInput` keep state that changes later reports. All three are now refused with one
sentence; an honest plugin with a call counter (`mgood:CountingDuchi`) is not.

No statistics: RareGlobal's global draw misses all 378 calls of the first sample with
probability 0.98**378 < 5e-4 per draw, and the check is deterministic at the seeded
global state below.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ldpfleet.collector.audit.battery import run_audit
from ldpfleet.protocol.errors import ParameterError

PLUGINS = Path(__file__).resolve().parents[2] / "scripts" / "M_plugins"


@pytest.fixture(autouse=True)
def plugin_path(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))


@pytest.mark.parametrize("cls", ["RareGlobal", "DecayingNoise", "PrevInput"])
def test_reports_that_a_seed_does_not_fix_are_refused(cls):
    np.random.seed(12345)  # RareGlobal's global draws: a fixed outcome for the test
    with pytest.raises(ParameterError, match="perturb is not a function of its inputs and rng: "):
        run_audit(f"mbad:{cls}", 1.0, seed=0)


def test_a_call_counter_is_not_refused():
    result = run_audit("mgood:CountingDuchi", 1.0, gamma=1e-6, seed=0)
    assert result.verdict == "inconclusive", result
