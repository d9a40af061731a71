"""Step 3c's named-period margin (helper G, docs/preregistration/G-named-masked-margin.md):
where step 3's multiple was vetoed, a named period whose own masked check passes with margin
``VETO_NAMED_MARGIN`` is claimed; the vetoed multiple's failed check no longer silences it.

Both streams come from the calibration seeds (helper J's used seeds): a raw daily reading
(Occupancy Light, 5-minute bins, T = 288, 10 days; named margin -27.9) and the red stream
closest to the margin among the ten red false claims the unguarded rule added (AR(1) phi 0.99,
n 1,000, SW eps0 5; named margin -5.97)."""

from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from ldpfleet.app.cpr_grid_streams import aperiodic_stream, trial_rng
from ldpfleet.collector import period_search
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave

OCCUPANCY = Path(__file__).resolve().parents[2] / "data" / "uci-occupancy"


def _light_bins(minutes_per_bin: int) -> np.ndarray:
    """Occupancy ``Light`` bin means from the first midnight on (scripts/H_user_streams.py's
    ``occupancy_bins``: the three files joined, empty bins interpolated)."""
    t0 = datetime(2015, 2, 2)
    minutes, light = [], []
    for name in ("datatest.txt", "datatraining.txt", "datatest2.txt"):
        with (OCCUPANCY / name).open(newline="") as f:
            reader = csv.reader(f)
            header = next(reader)
            for fields in reader:
                row = dict(zip(header, fields[1:], strict=True))
                ts = datetime.strptime(row["date"], "%Y-%m-%d %H:%M:%S")
                minutes.append((ts - t0).total_seconds() / 60.0)
                light.append(float(row["Light"]))
    order = np.argsort(minutes, kind="stable")
    bins = np.floor(np.asarray(minutes)[order] / minutes_per_bin).astype(int)
    values = np.asarray(light)[order]
    lo, hi = bins.min(), bins.max()
    sums = np.bincount(bins - lo, weights=values, minlength=hi - lo + 1)
    counts = np.bincount(bins - lo, minlength=hi - lo + 1)
    have = counts > 0
    idx = np.arange(hi - lo + 1)
    means = np.interp(idx, idx[have], sums[have] / counts[have])
    return means[(-lo) % (1440 // minutes_per_bin) :]


def _raw_daily_light() -> np.ndarray:
    """10 days of raw Light readings in 5-minute bins (start bin 455), scaled to [0, 1] by the
    window's 1 % / 99 % quantiles (helper H's ``daily_stream``)."""
    window = _light_bins(5)[455 : 455 + 2880]
    lo, hi = np.quantile(window, [0.01, 0.99])
    return np.clip((window - lo) / (hi - lo), 0.0, 1.0)


def _red_stream() -> np.ndarray:
    """AR(1) phi 0.99, n 1,000, SW eps0 5 (seed 80420, trial 1795 of helper J's item 3b)."""
    rng = trial_rng(80420, "aperiodic", 1795, "ar1_slow/1000/5.0")
    return SquareWave(5.0).perturb(aperiodic_stream("ar1_slow", 1000, rng), rng)


def test_raw_daily_light_names_the_day_where_the_vetoed_multiple_silenced_it(monkeypatch):
    """Before the margin (None) the vetoed 576 failed step 3b at its 5 cycles and the detector
    abstained; with it the day, whose masked check passes by 27.9, is named."""
    y = _raw_daily_light()
    assert period_search.VETO_NAMED_MARGIN is not None  # the rule is on by default
    assert detect_period(y).period == 288
    monkeypatch.setattr(period_search, "VETO_NAMED_MARGIN", None)
    assert detect_period(y).period is None


@pytest.mark.parametrize("margin", [None, 7.0])
def test_red_stream_with_a_vetoed_multiple_stays_silent(monkeypatch, margin):
    """The red stream's named period (83) passes its masked check by 5.97 only: below the
    margin, so it stays silent (a margin of 0, J's unguarded rule, would claim it)."""
    y = _red_stream()
    monkeypatch.setattr(period_search, "VETO_NAMED_MARGIN", margin)
    assert detect_period(y).period is None
    monkeypatch.setattr(period_search, "VETO_NAMED_MARGIN", 0.0)
    assert detect_period(y).period == 83
