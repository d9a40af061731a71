"""A device that crashed for good mid-stream takes no part in the ``[secure_sum]`` stage.

Held-out QA (helper T, 2026-12-06): scenarios/faults.toml with a ``[secure_sum]`` section
reported ``never_returned`` d0038 and d0039, and then a secure sum over 50 of 50
survivors, their inputs summed. Now they are in the collector's list (it cannot know)
but silent: the advertise stage's deadline counts them out.
"""

from __future__ import annotations

import json
from pathlib import Path

from ldpfleet.app.cli import app
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]


def test_devices_that_never_returned_are_not_summed(tmp_path: Path) -> None:
    text = (ROOT / "scenarios" / "faults.toml").read_text()
    text += "\n[secure_sum]\ndim = 8\nstage_timeout = 1.0\n"
    scenario = tmp_path / "faults-sum.toml"
    scenario.write_text(text)
    out = tmp_path / "out"
    CliRunner().invoke(app, ["run", str(scenario), "--out", str(out), "--broker", "memory"])
    results = json.loads((out / "results.json").read_text())
    gone = sorted(results["faults"]["outcome"]["never_returned"])
    assert len(gone) == 2
    entry = results["secure_sum"]
    assert entry["aborted"] is None and entry["exact"] is True
    assert entry["dropped_devices"] == gone
    assert entry["survivors"] == 50 - len(gone)
