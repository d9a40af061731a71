"""The phase-jump check (app/cpr_phase_jumps.py): its streams and one cell."""

import numpy as np
from ldpfleet.app.cpr_phase_jumps import cells, jump_stream, markdown, run_cell


def test_a_jump_shifts_the_phase_and_keeps_the_local_period():
    cycle = np.linspace(0.0, 1.0, 12, endpoint=False)
    x = jump_stream(cycle, 480, 1, np.random.default_rng(3))
    assert x.shape == (480,) and x.min() >= 0.0 and x.max() <= 1.0
    lag = np.abs(x[12:] - x[:-12])  # one period apart: equal but for jitter and the jump
    assert 1 <= np.sum(lag > 0.2) <= 12  # only (and some) pairs straddling the jump differ


def test_a_cell_runs_and_renders():
    index = cells().index(("sawtooth", 24, 40, 5.0, 1))
    row = run_cell(index, "sawtooth", 24, 40, 5.0, 1, trials=2)
    assert row["trials"] == 2
    assert set(row["hits"]) == {"detect_period", "folded_variance", "autocorrelation"}
    assert row["wrong_near"] + row["wrong_far"] + row["hits"]["detect_period"] <= 2
    assert "sawtooth, 1 jump" in row["shape"] and "cells: 1" in markdown([row], "cmd")
