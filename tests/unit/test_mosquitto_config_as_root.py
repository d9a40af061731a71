"""``ldpfleet mosquitto-config`` run as root without ``--run-as`` warns that the printed
``mosquitto -c ...`` line will fail.

Before: as root it printed ``mosquitto -c OUT/mosquitto.conf`` as the way to start the
broker; Mosquitto started by root drops to the ``mosquitto`` account, which cannot read the
0600 password file the command wrote ("Error: Unable to open pwfile"), and the run then
said "no MQTT broker answers". The fix (``--run-as USER``) was in docs/reliability.md only.
"""

import os

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner


@pytest.mark.parametrize(
    ("euid", "run_as", "warned"), [(0, None, True), (0, "root", False), (1000, None, False)]
)
def test_the_root_warning(tmp_path, monkeypatch, euid, run_as, warned):
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    args = ["mosquitto-config", "quickstart", "--out", str(tmp_path / "mq"), "--port", "18873"]
    args += ["--run-as", run_as] if run_as else []
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert ("--run-as" in text) is warned, text
    if warned:
        assert "cannot read" in text and "0600" in text
