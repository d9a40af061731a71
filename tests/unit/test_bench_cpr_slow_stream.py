"""``ldpfleet bench cpr``'s speed block times issue 19's worst case (helper A): a
10,000-report stream with period 1,000 beside the bench's own speed stream."""

from __future__ import annotations

import numpy as np
from ldpfleet.app import bench_cpr, bench_cpr_speed
from ldpfleet.collector.period import detect_period


def test_slow_stream_is_10k_reports_of_period_1000():
    reports = bench_cpr.slow_speed_stream(0)
    assert reports.shape == (10_000,)
    assert np.array_equal(reports, bench_cpr.slow_speed_stream(0))  # reproducible
    assert detect_period(reports).period == 1000


def test_speed_block_and_reports_name_the_slow_stream(monkeypatch):
    monkeypatch.setattr(bench_cpr_speed, "SLOW_SPEED_CALLS", 2)  # the module reading it
    speed = bench_cpr._slow_stream_speed(0, calls=2)
    assert speed["detect_period_10k_t1000_stream"] == (
        "intel, T = 1000, 10 cycles (10,000 reports), eps0 = 5"
    )
    assert speed["detect_period_cpu_ms_10k_t1000_median"] > 0
    assert (
        speed["detect_period_cpu_ms_10k_t1000_median"]
        <= (speed["detect_period_cpu_ms_10k_t1000_max"])
    )
    (line,) = bench_cpr._slow_stream_line(speed)
    assert line.startswith("detect_period CPU time on the slow stream (intel, T = 1000")
    assert bench_cpr._slow_stream_line({"detect_period_ms_10k_median": 1.0}) == []
    grid = bench_cpr._detector_speed(0)
    assert "detect_period_cpu_ms_10k_t1000_max" in grid and "detect_period_ms_10k_max" in grid
