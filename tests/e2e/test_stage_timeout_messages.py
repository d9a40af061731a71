"""A stage deadline too short for the fleet ends ``ldpfleet run`` in one line naming the
setting, its value and what to do (raise it), exit status 1 as other run failures.

Old, on ``-b memory``: ``[cadr] stage_timeout = 1e-6`` ended in a ``DevicesMissing``
traceback; a ``[gcdp]`` run with ``[collector] stage_timeout = 1e-6`` in a ``TypeError``
traceback (its summary formatted a missing MAE); a stream run said "N reports lost" without
saying that the stage had closed at its deadline. Every deadline here is 1 µs: no device
can even join before it passes (each report takes several loop iterations);
``finish_grace = 0.2`` stops the devices still waiting soon after.
"""

from __future__ import annotations

from pathlib import Path

from ldpfleet.app.cli import app
from typer.testing import CliRunner

from tests.unit.test_scenario_heldout import CADR

ROOT = Path(__file__).resolve().parents[2]

STREAM = """\
[scenario]
name = "s"
seed = 1
[fleet]
devices = 3
[stream]
steps = 20
eps = 2.0
w = 5
[source]
kind = "synthetic"
bounds = [0.0, 1.0]
period = 12
[collector]
stage_timeout = 1e-6
finish_grace = 0.2
"""

GCDP = f"""\
[scenario]
name = "g"
seed = 6
[fleet]
devices = 5
[stream]
steps = 60
mechanism = "raw"
batch_steps = 30
[source]
kind = "csv"
path = "{ROOT}/data/uci-occupancy/datatest.txt"
columns = ["Temperature", "Humidity", "Light", "CO2", "HumidityRatio"]
column_bounds = [[18.0, 26.0], [15.0, 40.0], [0.0, 1000.0], [400.0, 1600.0], [0.002, 0.007]]
[gcdp]
eps_rel = 1.0
window = 30
calibration_path = "{ROOT}/data/uci-occupancy/datatraining.txt"
[collector]
stage_timeout = 1e-6
finish_grace = 0.2
"""


def _run(tmp_path: Path, text: str):
    scenario = tmp_path / "s.toml"
    scenario.write_text(text)
    out = tmp_path / "out"
    return CliRunner().invoke(app, ["run", str(scenario), "-o", str(out), "-b", "memory"])


def _last_line(result) -> str:
    """The last line on stderr, of a run that ended with exit status 1 and no exception."""
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), (
        result.exception,
        result.output,
    )
    assert "Traceback" not in result.output, result.output
    return result.stderr.strip().splitlines()[-1]


def test_a_cadr_stage_timeout_too_short_is_one_line(tmp_path):
    cadr = "stage_timeout = 1e-6\n"
    result = _run(tmp_path, CADR.format(source="barabasi_albert:n=30,m=2,seed=1", cadr=cadr))
    line = _last_line(result)
    assert line.startswith("error: 30 of 30 devices did not join run"), line
    assert "[cadr] stage_timeout = 1e-06 s" in line and "raise it" in line, line


def test_a_stream_stage_closed_at_its_deadline_names_the_setting(tmp_path):
    line = _last_line(_run(tmp_path, STREAM))
    assert line.startswith("incomplete: ") and "reports lost" in line, line
    assert "[collector] stage_timeout = 1e-06 s" in line and "raise it" in line, line


def test_a_gcdp_stage_closed_at_its_deadline_names_the_setting(tmp_path):
    line = _last_line(_run(tmp_path, GCDP))
    assert line.startswith("incomplete: ") and "reports lost" in line, line
    assert "[collector] stage_timeout = 1e-06 s" in line and "raise it" in line, line


def test_only_a_cadr_deadline_gets_the_stage_timeout_hint(capsys):
    """A stage that ran out of time names ``[cadr] stage_timeout``; another failure of a
    stage (a partition's other θ) is its sentence alone."""
    import pytest
    import typer
    from ldpfleet.app.cli import _stage_deadline_failed
    from ldpfleet.collector.cadr_fleet import CadrFailed

    for sentence, hinted in [
        ("3 release(s) missing after 2 s: ['n0001']", True),
        ("relay: no report of phase ndoe", True),
        ("1 partition(s) sent no releases within 2 s: [1]", True),
        ("a partition used θ [4], not 3", False),
    ]:
        with pytest.raises(typer.Exit) as stop:
            _stage_deadline_failed(CadrFailed(sentence), 2.0)
        assert stop.value.exit_code == 1
        said = " ".join(capsys.readouterr().err.split())
        assert said.startswith(f"error: {sentence}"), said
        assert ("[cadr] stage_timeout = 2 s" in said) == hinted, said
