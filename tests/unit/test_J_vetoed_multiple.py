"""Step 3c's vetoed multiple still gates the claim (helper J, 2026-12-06;
docs/preregistration/J-vetoed-multiple.md, FAILED, not landed).

Raw UCI Occupancy Light in 5-minute bins, 10 days (T = 288): step 3 proposes the 2-day
multiple 576, step 3c's whitened reading vetoes it and 288 is named, but step 3b checks the
vetoed multiple at its 5 cycles, which fails, so the detector abstains with ``candidate``
576 (a known limitation on readings without privacy noise). Checking the named period at
its own cycles instead gained 28 exact answers of 1,200 daily windows but added false claims
on red streams (AR(1) 0.95 / 0.99, n 1,000, eps0 5: 4 -> 10 and 9 -> 13 of 2,000; no privacy
noise: 5 -> 9 of 1,800), and it broke two of ``test_period_false_claims``'s pins. These tests
pin that behaviour with helper G's margin off (``VETO_NAMED_MARGIN = None``); with it on (the
default, docs/preregistration/G-named-masked-margin.md) the day's own masked check passes by
more than 7 and 288 is named."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from ldpfleet.collector import period_search

import ldpfleet

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _light_window(trial: int) -> np.ndarray:
    """Helper H's raw Light window ``trial`` (scripts/H_user_streams.py, cell 8: Light, 5 min)."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        import H_user_streams as H
    finally:
        sys.path.remove(str(SCRIPTS))
    rng = np.random.default_rng([H.SEED, 2, 8, 0, trial])
    return H.daily_stream("Light", 5, 10, rng)


@pytest.mark.parametrize("trial", [1, 2])
def test_a_vetoed_multiple_that_fails_its_check_still_silences_the_day(trial, monkeypatch):
    """Without helper G's margin the detector abstains on these raw windows (the refused
    candidate is the vetoed 2-day multiple); with it (the default) the day is named."""
    x = _light_window(trial)
    assert x.size == 2880
    assert ldpfleet.detect_period(x).period == 288
    monkeypatch.setattr(period_search, "VETO_NAMED_MARGIN", None)
    estimate = ldpfleet.detect_period(x)
    assert estimate.period is None
    assert estimate.candidate == 576
