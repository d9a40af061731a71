"""The short-file warning reads as English (helper E's user trial, round 4): a file of one
row said "has 1 rows (time steps)", one of 3 rows under 100 steps "replayed 33.3333 times".
"""

from __future__ import annotations

import pytest
from ldpfleet.devices.sources import CsvSpec, source_cycles_entry


@pytest.mark.parametrize(
    ("rows", "steps", "words"),
    [
        (1, 100, "has 1 row (time step) but each device runs 100 steps, so it is replayed 100 "),
        (3, 100, "has 3 rows (time steps) but each device runs 100 steps, so it is replayed 33.3 "),
        (50, 1800, "replayed 36 times"),
    ],
)
def test_the_replay_warning_reads_as_english(tmp_path, rows, steps, words):
    """ "has 1 rows" and "replayed 33.3333 times" (helper E's user trial, round 4)."""

    path = tmp_path / "short.csv"
    path.write_text("temp\n" + "".join(f"{20 + k}\n" for k in range(rows)))
    _, warnings = source_cycles_entry(CsvSpec(str(path), "temp"), steps)
    assert len(warnings) == 1 and words in warnings[0], warnings
