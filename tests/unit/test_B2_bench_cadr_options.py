"""``bench cadr``: every option refused in one sentence naming it, on every transport, and
a fleet stage that runs out of time is one sentence, not a traceback (helper B2)."""

from __future__ import annotations

import pytest
from ldpfleet.app import cli_bench_cadr
from ldpfleet.app.cli import app
from ldpfleet.collector.cadr_fleet import CadrFailed
from typer.testing import CliRunner

SMALL = ["bench", "cadr", "--graph", "barabasi_albert:n=50,m=2,seed=1", "--runs", "1"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--fanout", "0"], "error: --fanout must be an integer in [1, 64], got 0"),
        (["--fanout", "65", "--transport", "memory"], "error: --fanout must be an integer"),
        (["--spacing", "log"], "error: --spacing 'log' is not linear or geometric"),
        (["--processes", "0"], "error: --processes must be an integer in [1, 64], got 0"),
        (["--theta", "0"], "error: --theta must be an integer >= 1, auto-sum or auto-dev, "
                           "got '0'"),
        (["--theta", "-3"], "error: --theta must be an integer >= 1"),
        (["--degree-bound", "0"], "error: --degree-bound must be an integer >= 1, got 0"),
        (["--transport", "foo"], "error: --transport 'foo' is not one of reference, memory, "
                                 "embedded, mqtt or an mqtt:// (mqtts://) URL"),
    ],
)  # fmt: skip
def test_bench_cadr_names_the_option(args, said):
    """Before: --fanout 0 / 65, --spacing log and --processes 0 ran in process (ignored);
    --theta 0 said "theta: ...", --theta -3 "must be an integer", --degree-bound 0
    "degree_bound: ...", --transport foo "broker URL 'foo' must start with mqtt://"."""
    result = CliRunner().invoke(app, [*SMALL, *args])
    assert result.exit_code == 2, (result.exit_code, result.output)
    text = " ".join(result.stderr.split())
    assert text.startswith(said), text
    assert "Traceback" not in result.output


def test_bench_cadr_stage_timeout_is_one_sentence(monkeypatch):
    """A 50,000-node edge list with --theta 3 on the memory transport printed a CadrFailed
    traceback after 196 s ("35914 release(s) missing after 120 s")."""

    def late(*args, **kwargs):
        raise CadrFailed("35914 release(s) missing after 120 s: ['n00000']")

    monkeypatch.setattr(cli_bench_cadr, "_bench_cadr_fleet", late)
    result = CliRunner().invoke(app, [*SMALL, "--transport", "memory", "--theta", "3"])
    assert result.exit_code == 1, (result.exit_code, result.output)
    text = " ".join(result.stderr.split())
    assert text.startswith("error: 35914 release(s) missing after 120 s"), text
    assert "[cadr] stage_timeout" in text and "--transport reference" in text
    assert "Traceback" not in result.output
