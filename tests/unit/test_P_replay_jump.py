"""A CSV source's ``true_period`` broken by a wrapping replay is named in results.json
``warnings`` (``devices.sources.replay_jump_warnings``). Helper P's user trial (2026-12-06):
a 2,000-row file of period 36 replayed by 6 devices x 1,800 steps with the default
``stride = 0``: 5 of 6 devices wrap (a phase jump of 20 rows), 3 claimed 71 at confidence
1, ``period_accuracy`` 50 %, and the run said nothing (docs/scenarios.md did)."""

import numpy as np
import pytest
from ldpfleet.devices.sources import CsvSpec, csv_stream, replay_jump_warnings


@pytest.fixture
def periodic_csv(tmp_path):
    path = tmp_path / "p36.csv"
    values = 20 + 5 * np.sin(2 * np.pi * np.arange(2000) / 36)
    path.write_text("t,temp\n" + "".join(f"{i},{v:.4f}\n" for i, v in enumerate(values)))
    return str(path)


def test_the_trial_run_is_named(periodic_csv):
    spec = CsvSpec(path=periodic_csv, column="temp")
    (sentence,) = replay_jump_warnings(spec, 1800, 6, 36)
    assert "holds 2000 rows (time steps), not a whole number of source.true_period = 36" in (
        sentence
    )
    assert "the replays of 5 of 6 devices run past its end" in sentence
    assert "Choose source.stride" in sentence


def test_what_keeps_every_stream_periodic_is_not_named(periodic_csv):
    spec = CsvSpec(path=periodic_csv, column="temp")
    assert replay_jump_warnings(spec, 1800, 6, None) == []  # no period stated
    assert replay_jump_warnings(spec, 1800, 1, 36) == []  # one device, rows 0..1799
    assert (
        replay_jump_warnings(CsvSpec(path=periodic_csv, column="temp", stride=30), 1800, 6, 36)
        == []
    )
    assert replay_jump_warnings(spec, 1800, 6, 40) == []  # 2,000 rows = 50 whole cycles
    assert replay_jump_warnings(object(), 1800, 6, 36) == []  # not a CSV source


def test_a_stride_that_wraps_only_the_last_device_counts_it(periodic_csv):
    spec = CsvSpec(path=periodic_csv, column="temp", stride=41)
    (sentence,) = replay_jump_warnings(spec, 1800, 6, 36)  # device 5 starts at 205
    assert "1 of 6 devices" in sentence


def test_the_warning_counts_exactly_the_devices_whose_replay_jumps(periodic_csv):
    """The start rows the warning uses are csv_stream's: a device is counted iff its
    replayed stream breaks the period somewhere."""
    for stride in (0, 17, 333):
        spec = CsvSpec(path=periodic_csv, column="temp", stride=stride)
        jumps = 0
        for i in range(7):
            x, _ = csv_stream(spec, i, 7, 1700)
            jumps += not np.allclose(x[36:], x[:-36], atol=1e-3)
        warned = replay_jump_warnings(spec, 1700, 7, 36)
        assert (f"the replays of {jumps} of 7 devices" in warned[0]) if jumps else not warned
