"""``ldpfleet run S --broker ""`` (helper U, a new user's session: ``--broker "$MQTT_URL"``
with the variable unset) ran on the scenario's broker, the embedded one, without a word,
while ``collector``, ``fleet``, ``watch`` and ``bench fleet`` refuse an empty broker, and
``--run ""`` / ``--out ""`` are refused for the same reason. Now refused: exit 2, one
sentence naming --broker, its limit and the value, nothing run or made."""

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner


@pytest.mark.parametrize("value", ["", "  "])
def test_run_refuses_an_empty_broker(tmp_path, monkeypatch, value):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "quickstart", "--broker", value, "--out", "o"])
    text = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 2, result.output
    assert "--broker must be embedded, memory, mqtt://host:port" in text, text
    assert "an unset shell variable?" in text
    assert not (tmp_path / "o").exists()
