"""``ldpfleet bench fleet`` refuses a bad option naming the option the user typed.

Before: ``bench fleet --devices 0`` said ``error: fleet.devices: Expected `int` >= 1, got 0``
(the key of the scenario the bench builds, which the user never wrote); every numeric and
choice option of the bench did the same. Now: ``--devices (fleet.devices): ...``.
"""

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

CASES = [
    (["--devices", "0"], "--devices", "got 0"),
    (["--eps", "-1"], "--eps", "got -1.0"),
    (["--max-in-flight", "0"], "--max-in-flight", "got 0"),
    (["--credit-window", "0"], "--credit-window", "got 0"),
    (["--shards", "abc"], "--shards", "'abc'"),
    (["--connection", "foo"], "--connection", "'foo'"),
    (["--trace", "foo"], "--trace", "'foo'"),
    (["--reconstruct", "cprr"], "--reconstruct", 'did you mean "cpr"?'),
    (["--partitions", "0"], "--partitions", "got 0"),
    (["--step-seconds", "-1"], "--step-seconds", "got -1.0"),
    (["--retransmit-after", "0"], "--retransmit-after", "got 0.0"),
    (["--connect-concurrency", "0"], "--connect-concurrency", "got 0"),
]


@pytest.mark.parametrize(("extra", "option", "value"), CASES, ids=[c[1] for c in CASES])
def test_the_error_names_the_option(extra, option, value):
    args = ["bench", "fleet", "--devices", "3", "--steps", "5", "-b", "memory", *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    line = " ".join(result.output.split())
    assert line.startswith(f"error: {option} ("), line
    assert value in line
    assert "Traceback" not in result.output
