"""A user mechanism that hides its input in the middle of its reports' bits (helper M).

Three plugins of scripts/M_plugins/mbad.py reveal their input exactly and passed
`ldpfleet audit` (inconclusive, eps_LB 0.86-0.92 at a claim of 1, seed 0, gamma 0.05):
`MicroLeak` (a report on a 2**-10 grid plus floor(1023 x) * 2**-20), `RoundingLeak`
(round(x + noise, 3) + round(x / 10**4, 6)) and `PrevInput` (the previous call's first
input in bits near 2**-30: a state leak). Neither a threshold of the report nor its lowest
byte sees bits in the middle of the significand. Two witnesses of a user mechanism's audit
see them: the significant bits of the report and its decimal places.

Statistics. Fixed seed 0 and gamma = 1e-6 per audit: the battery's split bounds the chance
that a correct mechanism is reported as a violation by gamma whatever the witnesses, so
the honest plugins' assertions fail falsely with probability <= 1e-6 each. The leaks are
exact separations (0 of 3,000 evaluation runs in one world, all or most in the other):
measured eps_LB 5.33 / 5.33 at gamma 1e-6, far above the asserted 1.5. `PrevInput` (a
violation, 4.80, on the significant bits alone) is now refused before its audit by the
replay check (test_M_replay.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ldpfleet.collector.audit.battery import _decimal_places, _significant_bits, run_audit

PLUGINS = Path(__file__).resolve().parents[2] / "scripts" / "M_plugins"
GAMMA = 1e-6


@pytest.fixture(autouse=True)
def plugin_path(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))


def test_significant_bits_and_decimal_places_of_known_values():
    y = np.array([0.0, 1.0, 0.5, -0.75, 3 * 2.0**-20, 1 + 2.0**-52, 5e-324, 0.125, 0.1])
    assert _significant_bits(y).tolist() == [0, 1, 1, 2, 2, 53, 1, 1, 52]
    assert _decimal_places(y).tolist() == [0, 0, 1, 2, 16, 16, 16, 3, 1]


@pytest.mark.parametrize("cls", ["MicroLeak", "RoundingLeak"])
def test_an_input_hidden_in_the_middle_bits_is_a_violation(cls):
    result = run_audit(f"mbad:{cls}", 1.0, gamma=GAMMA, seed=0)
    assert result.verdict == "violation" and result.eps_lb > 1.5, result
    assert result.witness in (
        "significant bits of the report",
        "decimal places of the report",
    ), result


@pytest.mark.parametrize(
    "cls", ["BucketKRR", "ClippedGridLaplace", "TwoSidedGeometric", "UnaryFloat", "ThreeLevel"]
)
def test_honest_plugins_stay_inconclusive(cls):
    result = run_audit(f"mgood:{cls}", 1.0, gamma=GAMMA, seed=0)
    assert result.verdict == "inconclusive" and result.eps_lb <= 1.0, result
