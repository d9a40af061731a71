"""Errors that help (issue 22): an unknown key or section says "did you mean" and lists the
valid names, an enum lists its allowed values, a range error echoes the value; ``trace
show --kind`` refuses a kind that does not exist; ``--shard-broker`` with one shard is
refused. Each message stays one sentence (no newline) naming the key."""

from __future__ import annotations

import pytest
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

from tests.conftest import ROOT

QUICK = (ROOT / "scenarios" / "quickstart.toml").read_text()


def error_of(old: str, new: str) -> str:
    assert old in QUICK
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(QUICK.replace(old, new, 1))
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("old", "new", "needles"),
    [
        ("w = 5\n", "w = 5\nepss = 1\n", ["stream.epss", "did you mean `eps`?", "step_seconds"]),
        ("noise = 0.5", "nosie = 0.5", ["source.nosie", "did you mean `noise`?", "kind"]),
        ("[stream]", "[streem]", ["unknown section `streem`", "did you mean `stream`?"]),
        ("[fleet]", "[fleet]\nconect_concurrency = 2", ["did you mean `connect_concurrency`?"]),
    ],
)
def test_unknown_keys_and_sections_suggest_the_close_name(old, new, needles):
    message = error_of(old, new)
    for needle in needles:
        assert needle in message, message


def test_an_unknown_key_with_nothing_close_lists_the_valid_ones_without_a_guess():
    message = error_of("w = 5\n", "w = 5\nzzzzqq = 1\n")
    assert "did you mean" not in message
    assert "valid: steps, eps, w, mechanism" in message


@pytest.mark.parametrize(
    ("old", "new", "needles"),
    [
        ('shape = "sine"', 'shape = "sin"',
         ['source.shape', '"sine", "square", "sawtooth", "composite"', 'did you mean "sine"']),
        ('kind = "synthetic"', 'kind = "synth"',
         ['source.kind', '"synthetic", "csv", "periodic"']),
        ("[stream]", '[stream]\nreconstruct = "cprr"',
         ['"none", "cpr", "sw", "sw_moving", "sw_filter", "laplace"']),
        ("[fleet]", '[fleet]\nshards = "many"', ['fleet.shards', '"auto" or a number']),
    ],
)  # fmt: skip
def test_an_invalid_enum_lists_the_allowed_values(old, new, needles):
    message = error_of(old, new)
    for needle in needles:
        assert needle in message, message


def test_an_unknown_mechanism_lists_the_built_ins():
    message = error_of('mechanism = "sw"', 'mechanism = "sqw"')
    assert "stream.mechanism" in message and "sw, sw01, laplace" in message


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("devices = 50", "devices = 0", "fleet.devices: Expected `int` >= 1, got 0"),
        ("eps = 2.0", "eps = 50.5", "stream.eps: Expected `float` <= 50.0, got 50.5"),
        ("batch_steps = 5", "batch_steps = -1", "got -1"),
    ],
)
def test_a_range_error_echoes_the_value(old, new, needle):
    assert needle in error_of(old, new)


def test_messages_naming_a_section_survive_the_command_line(tmp_path):
    """``[stream]`` in a message is not rich markup: it reaches the terminal."""
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    bad = tmp_path / "bad.toml"
    bad.write_text(QUICK.replace("w = 5\n", "w = 5\nepss = 1\n"))
    result = CliRunner().invoke(app, ["run", str(bad), "--broker", "memory"])
    assert result.exit_code == 2
    assert "in [stream]; did you mean `eps`?" in result.output, result.output


def test_shard_broker_with_one_shard_is_refused():
    loaded = parse_scenario(QUICK)
    with pytest.raises(ScenarioError, match=r"--shard-broker: this run's devices run in one"):
        loaded.check_shard_brokers("memory", ["mqtt://127.0.0.1:1883"])
    loaded.check_shard_brokers("memory", None)  # not given: nothing to refuse
    sharded = parse_scenario(QUICK.replace("devices = 50", "devices = 50\nshards = 2"))
    sharded.check_shard_brokers("mqtt://127.0.0.1:1883", ["mqtt://127.0.0.1:1884"])


def test_bench_fleet_refuses_shard_broker_with_one_shard():
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(
        app,
        ["bench", "fleet", "--devices", "4", "--steps", "5", "--broker", "memory",
         "--shard-broker", "mqtt://127.0.0.1:1883"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--shard-broker" in result.output and "[fleet] shards" in result.output


@pytest.mark.parametrize(
    ("options", "named"),
    [(["--w", "5"], "--w must be at most --steps 3, got 5"),
     (["--batch-steps", "5", "--w", "2"], "--batch-steps must be at most --steps 3, got 5"),
     (["--batch-steps", "5"], "--batch-steps must be at most --steps 3, got 5")],
)  # fmt: skip
def test_bench_fleet_refuses_a_window_or_batch_longer_than_the_steps(options, named):
    """`bench fleet --steps 3 --batch-steps 5` ran and counted 10 values for 2 devices x 3
    steps (values = messages x batch_steps); `--w 5` ran too (helper Q): refused, both named."""
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(
        app, ["bench", "fleet", "--devices", "2", "--steps", "3", "--broker", "memory",
              *options],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert named in result.output and "--steps 3" in result.output


@pytest.mark.parametrize(("steps", "w"), [(3, 3), (1, 1), (5, 5), (100, 5)])
def test_bench_fleet_default_window_follows_short_steps(monkeypatch, steps, w):
    """`bench fleet --steps 3` was refused for a `--w 5` the user never set ("--w 5 is
    longer than --steps 3"): the default window is now min(5, --steps) (helper Q)."""
    import ldpfleet.app.bench as bench
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    seen = {}

    async def fake(devices, steps, **options):
        seen.update(options)
        return {"lost": 0, "w": options["w"]}

    monkeypatch.setattr(bench, "bench_fleet", fake)
    result = CliRunner().invoke(
        app, ["bench", "fleet", "--devices", "2", "--steps", str(steps), "--broker", "memory"]
    )
    assert result.exit_code == 0, result.output
    assert seen["w"] == w


@pytest.mark.parametrize(
    ("options", "named"),
    [(["--steps", "3", "--w", "0"], "--w must be at least 1, got 0"),
     (["--steps", "0"], "--steps must be at least 1, got 0")],
)  # fmt: skip
def test_bench_fleet_refuses_a_window_or_steps_of_zero(options, named):
    """`--steps 0` was refused as "--w 5 is longer than --steps 0" (an option not given)."""
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["bench", "fleet", "--broker", "memory", *options])
    assert result.exit_code == 2 and named in " ".join(result.output.split()), result.output


@pytest.mark.parametrize("side", ["fleet", "collector"])
def test_fleet_or_collector_on_an_embedded_broker_is_refused(side):
    """`ldpfleet fleet -b embedded` started an amqtt broker inside the process, on a free
    port no collector could find, and waited out its timeout (helper Q): refused with a
    sentence saying to start `ldpfleet broker` and pass its URL."""
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    quick = str(ROOT / "scenarios" / "quickstart.toml")
    result = CliRunner().invoke(app, [side, quick, "-b", "embedded", "--run", "q-embedded"])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "ldpfleet broker" in text and "separate-processes.md" in text, text


@pytest.mark.parametrize(
    ("options", "named"),
    [(["--devices", "1"], "--devices: need 2..10000 devices, got 1"),
     (["--dim", "0"], "--dim: must be an integer in [1, 100000], got 0"),
     (["--stage-timeout", "nan"], "--stage-timeout: must be > 0"),
     (["--neighbors", "x"], "--neighbors: must be an integer K >= 1"),
     (["--seed", "-1"], "--seed: must be an integer >= 0, got -1")],
)  # fmt: skip
def test_bench_secagg_names_its_options(options, named):
    """`bench secagg --stage-timeout nan` said "stage_timeout: ..." (helper Q): a field
    name the command line has not; the option is named now."""
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(
        app, ["bench", "secagg", "--broker", "memory", "--devices", "4", "--dim", "4", *options]
    )
    assert result.exit_code == 2, result.output
    assert named in " ".join(result.output.split()), result.output
