"""``ldpfleet trace follow DEVICE``: one device's conversation, decoded, round by round."""

from __future__ import annotations

from ldpfleet.app.cli import app
from typer.testing import CliRunner

from tests.conftest import ROOT

SECURE = (
    (ROOT / "scenarios" / "secure-sum.toml")
    .read_text()
    .replace("devices = 100", "devices = 12")
    .replace("steps = 200", "steps = 40")
)


def test_follow_shows_a_devices_secure_aggregation_rounds_in_order(tmp_path):
    scenario = tmp_path / "secure.toml"
    scenario.write_text(SECURE)
    out = tmp_path / "out"
    runner = CliRunner()
    result = runner.invoke(app, ["run", str(scenario), "--broker", "memory", "--out", str(out)])
    assert result.exit_code == 0, result.output

    result = runner.invoke(app, ["trace", "follow", str(out), "d0003"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    headers = [line.strip("─ ") for line in lines if line.startswith("──")]
    # the stream first, then every secure-aggregation round of this device, in order
    rounds = [h for h in headers if h.startswith("secagg")]
    assert headers[0] == "stream"
    assert (
        rounds[:5]
        == [
            "secagg setup",
            "secagg round 0: AdvertiseKeys",
            "secagg round 1: ShareKeys",
            "secagg round 2: MaskedInput",
            "secagg round 3: Unmask",
        ]
        or "secagg abort" in rounds
    ), headers
    body = "\n".join(lines)
    # decoded, with directions: what d0003 sent, and what was addressed to it
    assert "d0003 ──▶ collector" in body and "sa_advertise" in body
    assert "d0003 ◀── collector" in body and "ack" in body
    assert "persisted<=" in body  # an ack decoded
    # nothing of another device's own traffic
    assert "d0004 ──▶" not in body and "d0004 ◀──" not in body
    # times never go backwards
    times = [float(line.split("s", 1)[0]) for line in lines if not line.startswith("──")]
    assert times == sorted(times)


def test_follow_an_unknown_device_is_a_clear_error(tmp_path):
    scenario = tmp_path / "secure.toml"
    scenario.write_text(SECURE)
    out = tmp_path / "out"
    runner = CliRunner()
    assert (
        runner.invoke(
            app, ["run", str(scenario), "--broker", "memory", "--out", str(out)]
        ).exit_code
        == 0
    )
    result = runner.invoke(app, ["trace", "follow", str(out), "nobody"])
    assert result.exit_code != 0
    assert "device 'nobody' sent and received nothing" in result.output
    assert "Traceback" not in result.output


def test_show_stats_and_export_refuse_an_unknown_device_as_follow_does(tmp_path):
    """``trace show --device nobody`` printed nothing with exit 0 (read like a silent
    device), while ``trace follow`` refused it: all of them refuse it now."""
    scenario = tmp_path / "secure.toml"
    scenario.write_text(SECURE)
    out = tmp_path / "out"
    runner = CliRunner()
    ran = runner.invoke(app, ["run", str(scenario), "--broker", "memory", "--out", str(out)])
    assert ran.exit_code == 0
    for command in ("show", "stats", "export"):
        result = runner.invoke(app, ["trace", command, str(out), "--device", "nobody"])
        assert result.exit_code == 2, (command, result.output)
        assert "device 'nobody' sent and received nothing" in result.output, result.output
        assert "Traceback" not in result.output
    shown = runner.invoke(app, ["trace", "show", str(out), "--device", "d0001"])
    assert shown.exit_code == 0 and "d0001" in shown.output
